// fp64_dfma_chains -- limiter: pipe-fp64.
//
// Every thread runs CHAINS independent double-precision FMA chains in registers (DFMA);
// one store per thread. An H200 SM does 64 FP64 FMAs per cycle, half its FP32 rate, so the
// FP64 pipe saturates while everything else idles. The fix is to avoid FP64 where the
// algorithm allows (FP32, or compensated FP32 sums).
#define CHAINS 8

extern "C" __global__ void fp64_dfma_chains(double *__restrict__ out, double a, double b, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    double x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        x[c] = (double)(tid + c) * 1.0e-6;
    }
#pragma unroll 4
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) {
            x[c] = fma(x[c], a, b);
        }
    }
    double sum = 0.0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        sum += x[c];
    }
    out[tid] = sum;
}
