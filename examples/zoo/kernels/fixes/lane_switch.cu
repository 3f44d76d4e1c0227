// Fixes of lane_switch (same result per element, same launch; blocks of 256 threads).
//   __fix1 (first cause, 8-way divergence: the branch is bits 2..4 of the thread index,
//          so every warp runs all 8 loops one after the other): each warp takes the 32
//          elements of its block that share one branch. Element e of a block has branch
//          (e >> 2) & 7; warp w, lane l takes e = (l & 3) | (w << 2) | ((l >> 2) << 5).
//   __fix2 (second cause, a loop test and branch for every step of each short loop body):
//          the same divergent branches, each loop unrolled by 8.
extern "C" __global__ void lane_switch__fix1(const float *__restrict__ in, float *__restrict__ out, int iters) {
    unsigned int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    unsigned int e = (l & 3) | (w << 2) | ((l >> 2) << 5);
    unsigned int idx = blockIdx.x * blockDim.x + e;
    float x = in[idx];
    switch ((e >> 2) & 7) {
    case 0:
        for (int i = 0; i < iters; ++i) x = fmaf(x, 0.999f, 0.001f);
        break;
    case 1:
        for (int i = 0; i < iters; ++i) x = fmaf(x, x, -0.25f);
        break;
    case 2:
        for (int i = 0; i < iters; ++i) x = fmaxf(x * 0.5f, -x) + 0.1f;
        break;
    case 3:
        for (int i = 0; i < iters; ++i) x = fminf(fmaf(x, 1.01f, 0.003f), 0.9f);
        break;
    case 4:
        for (int i = 0; i < iters; ++i) x = fabsf(x - 0.3f) * 0.95f;
        break;
    case 5:
        for (int i = 0; i < iters; ++i) x = fmaf(x, -0.5f, 0.75f);
        break;
    case 6:
        for (int i = 0; i < iters; ++i) x = fmaf(fminf(x, 0.5f), 0.75f, 0.125f) - x * 0.0625f;
        break;
    default:
        for (int i = 0; i < iters; ++i) x = fmaxf(fmaf(x, 0.875f, -0.0625f), -0.5f);
        break;
    }
    out[idx] = x;
}

extern "C" __global__ void lane_switch__fix2(const float *__restrict__ in, float *__restrict__ out, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[tid];
    switch ((threadIdx.x >> 2) & 7) {
    case 0:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fmaf(x, 0.999f, 0.001f);
        break;
    case 1:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fmaf(x, x, -0.25f);
        break;
    case 2:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fmaxf(x * 0.5f, -x) + 0.1f;
        break;
    case 3:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fminf(fmaf(x, 1.01f, 0.003f), 0.9f);
        break;
    case 4:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fabsf(x - 0.3f) * 0.95f;
        break;
    case 5:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fmaf(x, -0.5f, 0.75f);
        break;
    case 6:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fmaf(fminf(x, 0.5f), 0.75f, 0.125f) - x * 0.0625f;
        break;
    default:
#pragma unroll 8
        for (int i = 0; i < iters; ++i) x = fmaxf(fmaf(x, 0.875f, -0.0625f), -0.5f);
        break;
    }
    out[tid] = x;
}
