// Streams already at the DRAM roof: scalar (4-byte) accesses in a grid-stride loop.
//   copy_scalar_roof: y[i] = x[i], 64 M floats (512 MiB moved).
//   axpy_scalar_roof: y[i] = a * x[i] + y[i], 64 M floats (768 MiB moved).
// With 64 warps per SM and a warp's 128 contiguous bytes per access, enough bytes are in
// flight to keep DRAM near its sustained peak; there is nothing left to save.
//
// The fix (`__fix`): what a profiler's "use wider loads" would suggest: float4 accesses.
// It should change the time by a few percent at most.
extern "C" __global__ void copy_scalar_roof(const float *__restrict__ x, float *__restrict__ y, unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = x[i];
    }
}

extern "C" __global__ void axpy_scalar_roof(float a, const float *__restrict__ x, float *__restrict__ y,
                                            unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

// n4 = n / 4 (n a multiple of 4).
extern "C" __global__ void copy_scalar_roof__fix(const float4 *__restrict__ x, float4 *__restrict__ y,
                                                 unsigned int n4) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        y[i] = x[i];
    }
}

extern "C" __global__ void axpy_scalar_roof__fix(float a, const float4 *__restrict__ x, float4 *__restrict__ y,
                                                 unsigned int n4) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 xv = x[i], yv = y[i];
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        y[i] = yv;
    }
}
