// vec_add_small -- limiter: launch-overhead.
//
// One block of 256 threads adds two 256-element vectors: 3 KiB of traffic, a few hundred
// instructions. The kernel body takes well under a microsecond; the launch itself (and the
// ramp-up/drain of a grid) is most of its ~2-3 us duration. Nothing inside the kernel can
// be fixed; the fix is to fuse it into a neighbour or batch many such launches into one
// (or capture them in a CUDA graph).
extern "C" __global__ void vec_add_small(const float *__restrict__ a,
                                         const float *__restrict__ b,
                                         float *__restrict__ c,
                                         int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
