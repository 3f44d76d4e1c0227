// Float code promoted to double by its literals: `acc * x + 0.5` adds a double, so each
// step converts the float product to double (F2F.F64.F32), adds in FP64 and converts
// back (F2F.F32.F64). The conversions run on the XU pipe, 16 lanes per SM and cycle
// against the FMA pipe's 128.
//   horner_promoted: four Horner steps per iteration, 2048 iterations per thread, all in
//     registers: the conversions are the kernel's time.
//   scale_promoted: y[i] = x[i] * 0.5 + 0.25 over 64 M floats: the same promotion, but
//     the kernel streams 512 MiB and the XU work hides behind DRAM.
//
// The fix (`__fix`): float literals (0.5f), one FFMA per step.
extern "C" __global__ void horner_promoted(const float *__restrict__ xs, float *__restrict__ out, int iters) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = xs[t];
    float acc = 0.f;
    for (int r = 0; r < iters; ++r) {
        acc = acc * x + 0.5;
        acc = acc * x - 0.25;
        acc = acc * x + 0.125;
        acc = acc * x - 0.0625;
    }
    out[t] = acc;
}

extern "C" __global__ void horner_promoted__fix(const float *__restrict__ xs, float *__restrict__ out, int iters) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = xs[t];
    float acc = 0.f;
    for (int r = 0; r < iters; ++r) {
        acc = acc * x + 0.5f;
        acc = acc * x - 0.25f;
        acc = acc * x + 0.125f;
        acc = acc * x - 0.0625f;
    }
    out[t] = acc;
}

extern "C" __global__ void scale_promoted(const float *__restrict__ x, float *__restrict__ y, unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = x[i] * 0.5 + 0.25;
    }
}

extern "C" __global__ void scale_promoted__fix(const float *__restrict__ x, float *__restrict__ y, unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = x[i] * 0.5f + 0.25f;
    }
}

// Held out (round 2; see EXPECTED.md): the Horner chain with literals that are not exact in
// float (0.1, 0.3, 0.7, 0.9), so the double sum cannot be narrowed: each step keeps FMUL,
// F2F.F64.F32, DADD and F2F.F32.F64.
extern "C" __global__ void poly_promoted(const float *__restrict__ xs, float *__restrict__ out, int iters) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = xs[t];
    float acc = 0.f;
    for (int r = 0; r < iters; ++r) {
        acc = acc * x + 0.1;
        acc = acc * x - 0.3;
        acc = acc * x + 0.7;
        acc = acc * x - 0.9;
    }
    out[t] = acc;
}

extern "C" __global__ void poly_promoted__fix(const float *__restrict__ xs, float *__restrict__ out, int iters) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = xs[t];
    float acc = 0.f;
    for (int r = 0; r < iters; ++r) {
        acc = acc * x + 0.1f;
        acc = acc * x - 0.3f;
        acc = acc * x + 0.7f;
        acc = acc * x - 0.9f;
    }
    out[t] = acc;
}
