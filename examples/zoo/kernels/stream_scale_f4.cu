// stream_scale_f4 -- limiter: dram-bandwidth (a near-roof kernel: nothing left to fix in it).
//
// y = a * x over 1 GiB of float4 in a grid-stride loop: every thread issues 16-byte loads
// and stores, consecutive lanes touch consecutive 16 bytes (a warp moves 512 contiguous
// bytes = 16 sectors per request, the ideal for 16-byte accesses), nothing is reused. The
// only limit is DRAM bandwidth. The one way to make it faster is to move fewer bytes: fuse
// it into its producer or consumer, or store a smaller type.
extern "C" __global__ void stream_scale_f4(const float4 *__restrict__ x,
                                           float4 *__restrict__ y,
                                           float a,
                                           unsigned long n4) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
         i += stride) {
        float4 v = x[i];
        y[i] = make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
    }
}
