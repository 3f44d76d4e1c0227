// Test kernels for the harness' own tests (NVRTC compile test and GPU tests).

// y = a * x + y over n elements, grid-stride.
extern "C" __global__ void kprof_test_axpy(const float *x, float *y, float a,
                                           unsigned long n) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

// Two distinguishable kernels for the profiling-window test: only the selected case's
// kernel may appear in ncu's output.
extern "C" __global__ void kprof_test_window_a(float *y, unsigned long n) {
    unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 0.5f + 1.0f;
}

extern "C" __global__ void kprof_test_window_b(float *y, unsigned long n) {
    unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 2.0f - 1.0f;
}
