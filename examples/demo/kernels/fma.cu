// fma: the compute-bound reference point.
//
// Every thread runs CHAINS independent chains of fused multiply-adds in registers, so the
// FMA pipe always has independent work to issue; memory is touched once, by one store per
// thread at the end. Expect ncu to show the FP32 (FMA) pipe near its peak and DRAM idle.
#define CHAINS 8

extern "C" __global__ void fma_kernel(float *__restrict__ out, float a, float b, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        x[c] = (float)(tid + c) * 1.0e-6f;
    }
    // Unrolled so that loop overhead is a few instructions per 64 FMAs.
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
