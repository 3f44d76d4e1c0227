// fixed_blocks_fma -- limiter: tail-effect.
//
// Blocks of 1024 threads, each asking for 160 KiB of dynamic shared memory (used as the
// block's result buffer, sized as a staging area would be), so exactly one block fits on an
// SM; each block does the same long FMA-bound work (8 independent chains per thread). The
// grid is one block more than the GPU has SMs (133 on an H200): the first wave runs 132
// blocks, then one block runs alone on one SM for as long again while 131 SMs idle. About
// half the elapsed time is the tail. The fix: a grid that is a multiple of the wave (or
// persistent blocks over a work queue, or smaller blocks that balance).
#define CHAINS 8

extern "C" __global__ void fixed_blocks_fma(float *__restrict__ out, float a, float b, int iters) {
    extern __shared__ float staged[];
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
