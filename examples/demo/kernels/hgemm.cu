// hgemm: C (m x n, float) = A (m x k, half) * B (k x n, half), row-major, float accumulate.
//
// hgemm_naive: one thread per output element, reading A and B from global memory in the
// inner loop. Every element of A and B is fetched n and m times; the L1/L2 caches catch
// most of it, so expect ncu to show the memory pipeline (L1/TEX and LSU) as the limiter and
// the FMA pipe mostly idle.
//
// hgemm_tiled: the classic shared-memory tiling (32 x 32 tiles): each block stages a tile
// of A and of B in shared memory once and reuses it 32 times, cutting global traffic by
// 32x. Faster, and the limiter moves to shared-memory and FMA issue.
#include <cuda_fp16.h>

extern "C" __global__ void hgemm_naive(const __half *__restrict__ A,
                                       const __half *__restrict__ B,
                                       float *__restrict__ C,
                                       int m, int n, int k) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n) {
        return;
    }
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) {
        acc += __half2float(A[(size_t)row * k + i]) * __half2float(B[(size_t)i * n + col]);
    }
    C[(size_t)row * n + col] = acc;
}

#define TILE 32

extern "C" __global__ void hgemm_tiled(const __half *__restrict__ A,
                                       const __half *__restrict__ B,
                                       float *__restrict__ C,
                                       int m, int n, int k) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        As[ty][tx] = (row < m && t + tx < k) ? __half2float(A[(size_t)row * k + t + tx]) : 0.0f;
        Bs[ty][tx] = (t + ty < k && col < n) ? __half2float(B[(size_t)(t + ty) * n + col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; ++i) {
            acc += As[ty][i] * Bs[i][tx];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        C[(size_t)row * n + col] = acc;
    }
}
