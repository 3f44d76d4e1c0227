// reduce_single_block (held out): the second pass of a two-pass sum, reading n partial sums
// with one block of 1024 threads (a strided loop, a warp-shuffle reduction, then one warp
// reduces the 32 warp sums) and writing the total.
extern "C" __global__ void reduce_single_block(const float *__restrict__ partials,
                                               float *__restrict__ total,
                                               unsigned int n) {
    __shared__ float warp_sums[32];
    float acc = 0.0f;
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) {
        acc += partials[i];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    }
    if ((threadIdx.x & 31) == 0) {
        warp_sums[threadIdx.x / 32] = acc;
    }
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            acc += __shfl_xor_sync(0xffffffffu, acc, off);
        }
        if (threadIdx.x == 0) {
            *total = acc;
        }
    }
}
