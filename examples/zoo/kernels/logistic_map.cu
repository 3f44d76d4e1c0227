// logistic_map -- limiter: too-little-parallelism.
//
// A serial recurrence (the logistic map x <- r x (1 - x)) iterated `iters` times per
// thread, launched as 4 blocks of 64 threads: 8 warps on a GPU that holds 8,448. 128 of 132
// SMs have nothing to do and the 4 busy ones hold 2 warps each, every instruction waiting
// on the previous one. Nothing is saturated; occupancy is not the problem (the grid is).
// The fix: expose more parallelism (more independent sequences per launch, or ILP).
extern "C" __global__ void logistic_map(const float *__restrict__ in,
                                        float *__restrict__ out,
                                        float r,
                                        int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x = 0.25f + 0.5f * fabsf(in[tid]);  // (0.25, 0.75)
    for (int i = 0; i < iters; ++i) {
        x = (r * x) * (1.0f - x);
    }
    out[tid] = x;
}
