// Fixes of pointer_chase_smem200k (same result; blocks of 128 threads).
//   __fix1 (first cause, occupancy-shared-memory): the same code, launched with the 512
//          bytes of dynamic shared memory it uses instead of 200 KiB: 16 blocks (64 warps)
//          fit an SM, and the whole grid is resident at once.
//   __fix2 (second cause, one dependent load in flight per thread): still 200 KiB per
//          block, but the two chains are interleaved, so two loads are in flight.
__device__ __forceinline__ unsigned int chase_start(unsigned int tid, unsigned int chain, unsigned int n) {
    return (unsigned int)(((unsigned long long)tid * 2654435761ull + chain * 40503ull) % n);
}

extern "C" __global__ void pointer_chase_smem200k__fix1(const unsigned int *__restrict__ next,
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

extern "C" __global__ void pointer_chase_smem200k__fix2(const unsigned int *__restrict__ next,
                                                        unsigned int *__restrict__ out,
                                                        unsigned int n,
                                                        int steps) {
    extern __shared__ unsigned int scratch[];
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int a0 = chase_start(tid, 0, n), a1 = chase_start(tid, 1, n);
    unsigned int s0 = 0, s1 = 0;
    for (int s = 0; s < steps; ++s) {
        a0 = next[a0];
        a1 = next[a1];
        s0 += a0;
        s1 += a1;
    }
    scratch[threadIdx.x] = s0 + s1;
    __syncthreads();
    out[tid] = scratch[blockDim.x - 1 - threadIdx.x];
}
