// lane_switch -- limiter: warp-divergence.
//
// Each thread takes one of eight different loops depending on (lane / 4) % 8, so every warp
// runs all eight loops one after the other with 4 of its 32 lanes active in each: ~4 active
// threads per executed instruction, and 7/8 of the issue slots are wasted. Each loop is a
// short dependent chain; with 64 warps per SM the schedulers always have something to
// issue, so the SM looks busy (issue-bound) while doing 1/8 of the useful work. The fix:
// map work so that a warp's lanes take the same path (sort or bin the work by branch).
extern "C" __global__ void lane_switch(const float *__restrict__ in, float *__restrict__ out, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[tid];
    switch ((threadIdx.x >> 2) & 7) {
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
    out[tid] = x;
}
