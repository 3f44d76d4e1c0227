// hmma_loop -- limiter: pipe-tensor (at the mma.sync roof).
//
// Each warp loads one 16 x 16 half A fragment and one B fragment from shared memory once,
// then runs `iters` rounds of four independent wmma::mma_sync (16x16x16, float accumulate)
// on register-resident fragments. On sm_90 each mma_sync is two HMMA.16816.F32
// instructions; nothing else happens in the loop, so the tensor pipe is the only busy unit.
// What is left is the instruction itself: Hopper's wgmma (asynchronous, from shared memory,
// bigger tiles) is the faster path; mma.sync cannot reach the full Hopper tensor peak.
#include <mma.h>
using namespace nvcuda;

#define ACCS 4

extern "C" __global__ void hmma_loop(const __half *__restrict__ a,
                                     const __half *__restrict__ b,
                                     float *__restrict__ out,
                                     int iters) {
    __shared__ __half sa[16 * 16];
    __shared__ __half sb[16 * 16];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        sa[i] = a[i];
        sb[i] = b[i];
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, sa, 16);
    wmma::load_matrix_sync(fb, sb, 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[ACCS];
#pragma unroll
    for (int j = 0; j < ACCS; ++j) {
        wmma::fill_fragment(acc[j], 0.0f);
    }
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < ACCS; ++j) {
            wmma::mma_sync(acc[j], fa, fb, acc[j]);
        }
    }
#pragma unroll
    for (int j = 1; j < ACCS; ++j) {
#pragma unroll
        for (int e = 0; e < acc[0].num_elements; ++e) {
            acc[0].x[e] += acc[j].x[e];
        }
    }
    unsigned int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    wmma::store_matrix_sync(out + (size_t)warp * 256, acc[0], 16, wmma::mem_row_major);
}
