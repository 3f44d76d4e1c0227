// copy: the DRAM-bound reference point.
//
// Each thread copies float4s (16-byte loads and stores) in a grid-stride loop. Accesses are
// fully coalesced and nothing is reused, so the only limit is DRAM bandwidth: expect ncu to
// show DRAM throughput near its peak and little else busy.
extern "C" __global__ void copy_kernel(const float4 *__restrict__ src,
                                       float4 *__restrict__ dst,
                                       unsigned long n) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        dst[i] = src[i];
    }
}
