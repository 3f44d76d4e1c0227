// reduce: a block reduction, compiled to PTX by nvcc in build.rs (not by NVRTC).
//
// Each thread sums a grid-stride slice in a register, warps combine with shuffles, and one
// warp combines the per-warp sums into one partial sum per block. Reads every input once,
// so expect it to be DRAM-bound like copy, with half the traffic per element.
extern "C" __global__ void reduce_kernel(const float *__restrict__ in,
                                         float *__restrict__ partial,
                                         unsigned long n) {
    __shared__ float warp_sums[32];
    float sum = 0.0f;
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        sum += in[i];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    unsigned int lane = threadIdx.x & 31u;
    unsigned int warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_sums[warp] = sum;
    }
    __syncthreads();
    if (warp == 0) {
        sum = lane < (blockDim.x + 31u) / 32u ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        }
        if (lane == 0) {
            partial[blockIdx.x] = sum;
        }
    }
}
