// Fixes of fixed_blocks_fma: the same code as the original under another name (the fixes
// are in the launch), same result per thread.
//   __fix1 (first cause, the tail: 133 blocks of 1024 threads on 132 SMs, one per SM,
//          so the last block runs alone as a second wave): the same threads in blocks of
//          256 with 8 KiB of shared memory each: 532 blocks, all resident at once, the
//          busiest SM holding 5 blocks (1,280 threads) against 4 (1,024) for the others.
//   __fix2 (second cause, 160 KiB of shared memory per block for 32 KiB used, occupancy
//          50 % by shared memory): the same 1024-thread blocks asking for the 32 KiB they
//          use, so two fit an SM; the SM that gets two blocks still does twice the work.
#define CHAINS 8

__device__ __forceinline__ void fma_chains_block(float *__restrict__ out, float a, float b, int iters,
                                                 float *staged) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        x[c] = (float)(tid + c) * 1.0e-6f;
    }
#pragma unroll 8
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) {
            x[c] = fmaf(x[c], a, b);
        }
    }
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        staged[c * blockDim.x + threadIdx.x] = x[c];
    }
    __syncthreads();
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        sum += staged[((c + 1) % CHAINS) * blockDim.x + threadIdx.x];
    }
    out[tid] = sum;
}

extern "C" __global__ void fixed_blocks_fma__fix1(float *__restrict__ out, float a, float b, int iters) {
    extern __shared__ float staged[];
    fma_chains_block(out, a, b, iters, staged);
}

extern "C" __global__ void fixed_blocks_fma__fix2(float *__restrict__ out, float a, float b, int iters) {
    extern __shared__ float staged[];
    fma_chains_block(out, a, b, iters, staged);
}
