// leader_warp_steps -- limiter: barrier-stalls.
//
// A block-synchronous iteration where the work between barriers is badly unbalanced: in
// each step warp 0 runs a dependent chain of `leader_work` FMAs and publishes a value in
// shared memory, the other 7 warps of the 256-thread block do one FMA each, and everyone
// meets at __syncthreads() to read the value. 7 of 8 warps spend nearly the whole step
// waiting at the barrier. The fix: spread the serial part over all warps, or let the other
// warps do useful independent work between barriers.
extern "C" __global__ void leader_warp_steps(const float *__restrict__ in,
                                             float *__restrict__ out,
                                             int steps,
                                             int leader_work) {
    __shared__ float published[2];  // double-buffered: one barrier per step is enough
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[tid];
    for (int s = 0; s < steps; ++s) {
        if (threadIdx.x < 32) {
            float y = x;
            for (int k = 0; k < leader_work; ++k) {
                y = fmaf(y, 0.999f, 0.001f);
            }
            if (threadIdx.x == 0) {
                published[s & 1] = y;
            }
            x = y;
        } else {
            x = fmaf(x, 0.5f, 0.25f);
        }
        __syncthreads();
        x = fmaf(published[s & 1], 0.125f, x);
    }
    out[tid] = x;
}
