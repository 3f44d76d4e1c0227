// Fixes of rowsum_per_thread (same sums; __fix1 in a different order).
//   __fix1 (first cause, uncoalesced loads: the 32 lanes of a warp read 32 rows 4 KiB
//          apart): a warp per row. Its lanes read consecutive words (128 bytes per load)
//          and combine their partial sums with shuffles. Launch: 32 threads per row.
//   __fix2 (second cause, four-byte loads: 32 requests' worth of sectors for 128 bytes
//          used): still a thread per row, but float4 loads, four times fewer requests and
//          16 of every 32 bytes of a sector used per load. Needs cols % 4 == 0 and a
//          16-byte aligned matrix. Same summation order as the original.
extern "C" __global__ void rowsum_per_thread__fix1(const float *__restrict__ m,
                                                   float *__restrict__ sums,
                                                   int rows,
                                                   int cols) {
    int r = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    int lane = threadIdx.x & 31;
    if (r >= rows) {
        return;
    }
    const float *row = m + (size_t)r * cols;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        acc += row[c];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    }
    if (lane == 0) {
        sums[r] = acc;
    }
}

extern "C" __global__ void rowsum_per_thread__fix2(const float *__restrict__ m,
                                                   float *__restrict__ sums,
                                                   int rows,
                                                   int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) {
        return;
    }
    const float4 *row = reinterpret_cast<const float4 *>(m + (size_t)r * cols);
    float acc = 0.0f;
    for (int c = 0; c < cols / 4; ++c) {
        float4 v = row[c];
        acc += v.x;
        acc += v.y;
        acc += v.z;
        acc += v.w;
    }
    sums[r] = acc;
}
