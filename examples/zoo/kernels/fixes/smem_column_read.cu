// Fixes of smem_column_read (same result, same launch).
//   __fix1 (first cause, 32-way bank conflicts): the tile is padded to 33 columns, so the
//          32 rows a warp reads start in 32 different banks: 1 wavefront per load instead
//          of 32.
//   __fix2 (second cause, eight scalar shared loads per iteration): the 8 consecutive
//          words of a row (c0 is a multiple of 8) are read as two float4 loads, still
//          unpadded: 2 loads of 32 wavefronts instead of 8 of 32. Same summation order.
#define TILE 32

extern "C" __global__ void __launch_bounds__(256, 8)
    smem_column_read__fix1(const float *__restrict__ src, float *__restrict__ out, int iters, int shift) {
    __shared__ float tile[TILE][TILE + 1];
    for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x) {
        tile[i / TILE][i % TILE] = src[i];
    }
    __syncthreads();
    int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        int c0 = it * shift;
#pragma unroll
        for (int c = 0; c < 8; ++c) {
            acc += tile[lane][(c0 + c) & (TILE - 1)];
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Needs shift to be a multiple of 8 (the bench's is 8).
extern "C" __global__ void __launch_bounds__(256, 8)
    smem_column_read__fix2(const float *__restrict__ src, float *__restrict__ out, int iters, int shift) {
    __shared__ __align__(16) float tile[TILE][TILE];
    for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x) {
        tile[i / TILE][i % TILE] = src[i];
    }
    __syncthreads();
    int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        int c0 = (it * shift) & (TILE - 1);
        float4 a = *reinterpret_cast<const float4 *>(&tile[lane][c0]);
        float4 b = *reinterpret_cast<const float4 *>(&tile[lane][c0 + 4]);
        acc += a.x;
        acc += a.y;
        acc += a.z;
        acc += a.w;
        acc += b.x;
        acc += b.y;
        acc += b.z;
        acc += b.w;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
