// smem_atomics_hot -- limiter: shared-memory atomics on few addresses (MIO throttle).
//
// Every thread runs a random-number generator and adds each draw into one of only 4
// shared-memory counters of its block, chosen by the draw's top two bits. Each warp's
// ATOMS instruction carries 32 lanes onto 4 addresses, so the shared-memory atomic unit
// serialises about 8 same-address updates per instruction, and all 8 warps of the block
// queue on the same 4 words: warps stall on mio_throttle / lg_throttle with the shared
// pipe busy and nothing else. The fix: privatise (per-thread counters in registers, merged
// once per thread at the end) or aggregate per warp (__reduce_add_sync per bin).
#define BINS 4

__device__ __forceinline__ unsigned int lcg(unsigned int x) {
    return x * 1664525u + 1013904223u;
}

extern "C" __global__ void smem_atomics_hot(const unsigned int *__restrict__ seeds,
                                            unsigned int *__restrict__ out,
                                            int iters) {
    __shared__ unsigned int bins[BINS];
    if (threadIdx.x < BINS) {
        bins[threadIdx.x] = 0;
    }
    __syncthreads();
    unsigned int x = seeds[blockIdx.x * blockDim.x + threadIdx.x];
    for (int i = 0; i < iters; ++i) {
        x = lcg(x);
        atomicAdd(&bins[x >> 30], (x >> 8) & 255u);
    }
    __syncthreads();
    if (threadIdx.x < BINS) {
        out[blockIdx.x * BINS + threadIdx.x] = bins[threadIdx.x];
    }
}
