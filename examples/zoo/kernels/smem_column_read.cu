// smem_column_read -- limiter: shared-bank-conflicts.
//
// Each block stages one 32 x 32 float tile in shared memory, unpadded, and every warp then
// reads it column-wise: lane l reads tile[l][c]. Rows are 128 bytes apart, so all 32 lanes
// hit the same bank at 32 different addresses: a 32-way conflict, 32 wavefronts for every
// 4-byte shared load where 1 would do. Padding the row to 33 floats (or an XOR swizzle)
// makes the same loads conflict-free. `shift` (8 in the bench) moves the columns every
// iteration; it is an argument so that the compiler cannot prove the loads repeat.
#define TILE 32

extern "C" __global__ void __launch_bounds__(256, 8)
    smem_column_read(const float *__restrict__ src, float *__restrict__ out, int iters, int shift) {
    __shared__ float tile[TILE][TILE];  // no +1 padding: the point of this kernel
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
