// Fixes of smem_atomics_hot (same result, same launch; blocks of 256 threads).
//   __fix1 (first cause, an atomic per draw, 32 lanes onto 4 addresses): privatise.
//          Each thread keeps its 4 counters in registers and adds them to the block's
//          once at the end: 4 atomics per thread instead of one per draw.
//   __fix2 (second cause, every warp of the block on the same 4 words): per-warp copies of
//          the bins, summed at the end; each instruction still carries 32 lanes onto 4
//          addresses.
#define BINS 4
#define WARPS 8

__device__ __forceinline__ unsigned int lcg(unsigned int x) {
    return x * 1664525u + 1013904223u;
}

extern "C" __global__ void smem_atomics_hot__fix1(const unsigned int *__restrict__ seeds,
                                                  unsigned int *__restrict__ out,
                                                  int iters) {
    __shared__ unsigned int bins[BINS];
    if (threadIdx.x < BINS) {
        bins[threadIdx.x] = 0;
    }
    __syncthreads();
    unsigned int mine[BINS] = {0, 0, 0, 0};
    unsigned int x = seeds[blockIdx.x * blockDim.x + threadIdx.x];
    for (int i = 0; i < iters; ++i) {
        x = lcg(x);
        unsigned int bin = x >> 30, v = (x >> 8) & 255u;
#pragma unroll
        for (unsigned int b = 0; b < BINS; ++b) {
            mine[b] += bin == b ? v : 0u;
        }
    }
#pragma unroll
    for (unsigned int b = 0; b < BINS; ++b) {
        atomicAdd(&bins[b], mine[b]);
    }
    __syncthreads();
    if (threadIdx.x < BINS) {
        out[blockIdx.x * BINS + threadIdx.x] = bins[threadIdx.x];
    }
}

extern "C" __global__ void smem_atomics_hot__fix2(const unsigned int *__restrict__ seeds,
                                                  unsigned int *__restrict__ out,
                                                  int iters) {
    __shared__ unsigned int bins[WARPS][BINS];
    if (threadIdx.x < WARPS * BINS) {
        bins[threadIdx.x / BINS][threadIdx.x % BINS] = 0;
    }
    __syncthreads();
    unsigned int *mine = bins[threadIdx.x / 32];
    unsigned int x = seeds[blockIdx.x * blockDim.x + threadIdx.x];
    for (int i = 0; i < iters; ++i) {
        x = lcg(x);
        atomicAdd(&mine[x >> 30], (x >> 8) & 255u);
    }
    __syncthreads();
    if (threadIdx.x < BINS) {
        unsigned int sum = 0;
        for (int w = 0; w < WARPS; ++w) {
            sum += bins[w][threadIdx.x];
        }
        out[blockIdx.x * BINS + threadIdx.x] = sum;
    }
}
