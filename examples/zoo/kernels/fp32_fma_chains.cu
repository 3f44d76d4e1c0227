// fp32_fma_chains -- limiter: pipe-fma (a near-roof kernel: nothing left to fix in it).
//
// Every thread runs CHAINS independent FP32 fused multiply-add chains in registers, so the
// FMA pipe always has independent work; memory is touched once, by one store per thread.
// With 8 independent chains and full occupancy the FP32 pipe runs at its peak: the only way
// to go faster is to change the arithmetic (tensor cores, lower precision).
#define CHAINS 8

extern "C" __global__ void fp32_fma_chains(float *__restrict__ out, float a, float b, int iters) {
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
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        sum += x[c];
    }
    out[tid] = sum;
}
