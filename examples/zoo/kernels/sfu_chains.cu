// sfu_chains -- limiter: pipe-xu.
//
// Four independent chains per thread of fast special functions: __sinf, rsqrtf and __expf
// each map to one MUFU instruction (SIN, RSQ, EX2) on the XU (special function) pipe, plus
// an FMUL or FADD. The XU pipe does 16 lanes per SM per cycle (a warp instruction every 8
// cycles per sub-partition), so three MUFU per iteration saturate it while the FP32 pipe
// stays mostly idle. The fix: fewer special functions (identities, tables, polynomials on
// the FMA pipe).
#define CHAINS 4

extern "C" __global__ void sfu_chains(const float *__restrict__ in, float *__restrict__ out, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        x[c] = in[tid] + 0.25f * c;
    }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) {
            float s = __sinf(x[c]) + 1.5f;  // [0.5, 2.5]
            float r = rsqrtf(s);            // [0.63, 1.42]
            x[c] = __expf(r);               // [1.9, 4.1]
        }
    }
    out[tid] = (x[0] + x[1]) + (x[2] + x[3]);
}
