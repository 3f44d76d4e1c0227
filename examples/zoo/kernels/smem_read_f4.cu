// smem_read_f4 -- limiter: l1-shared-bandwidth.
//
// Each 256-thread block copies a 16 KiB tile (1024 float4) into shared memory once, then
// reads it over and over with 16-byte loads (LDS.128): lane i of a warp reads float4
// base + i, so every quarter-warp reads 128 contiguous bytes, one per bank: no bank
// conflicts, 4 wavefronts per instruction, the most a shared load can deliver. One FADD per
// 4 bytes is far below what the FP32 pipe can do, so the shared-memory data path (128 bytes
// per cycle per SM) is the limit. Must be launched with 256 threads per block; `shift` (in
// float4s, 32 in the bench) moves the window every iteration. It is an argument so that the
// compiler cannot prove the loads repeat and hoist them out of the loop.
#define TILE4 1024

extern "C" __global__ void __launch_bounds__(256, 8)
    smem_read_f4(const float4 *__restrict__ src, float *__restrict__ out, int iters, int shift) {
    __shared__ float4 tile[TILE4];
    for (int i = threadIdx.x; i < TILE4; i += blockDim.x) {
        tile[i] = src[i];
    }
    __syncthreads();
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int it = 0; it < iters; ++it) {
        // Largest index 255 + 255 + 3 * 160 = 990 < TILE4.
        const float4 *p = &tile[threadIdx.x + ((it * shift) & 255)];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            float4 v = p[k * 160];
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = (acc.x + acc.y) + (acc.z + acc.w);
}
