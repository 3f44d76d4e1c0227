// pointer_chase_smem200k -- limiter: occupancy-shared-memory.
//
// Every thread follows two chains of a random permutation of 16 Mi words (64 MiB, more
// than L2), one after the other: each step is a dependent 4-byte load from a random
// address. Blocks of 128 threads ask for 200 KiB of dynamic shared memory and use 512
// bytes of it, so one block (4 warps) fits an SM: theoretical occupancy 6.25 %. Memory is
// far from busy; the time is 8 waves of dependent-load latency. The random 4-byte loads use
// 4 of every 32 bytes fetched, but no layout can coalesce a pointer chase: the lost time is
// the occupancy's. The fix: ask for the shared memory the block uses.
__device__ __forceinline__ unsigned int chase_start(unsigned int tid, unsigned int chain, unsigned int n) {
    return (unsigned int)(((unsigned long long)tid * 2654435761ull + chain * 40503ull) % n);
}

extern "C" __global__ void pointer_chase_smem200k(const unsigned int *__restrict__ next,
                                                  unsigned int *__restrict__ out,
                                                  unsigned int n,
                                                  int steps) {
    extern __shared__ unsigned int scratch[];
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int sum = 0;
    for (unsigned int c = 0; c < 2; ++c) {
        unsigned int at = chase_start(tid, c, n);
        for (int s = 0; s < steps; ++s) {
            at = next[at];
            sum += at;
        }
    }
    scratch[threadIdx.x] = sum;
    __syncthreads();
    out[tid] = scratch[blockDim.x - 1 - threadIdx.x];
}
