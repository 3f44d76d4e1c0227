// tiny: the latency-bound reference point.
//
// One block of one warp. Each thread follows a chain of dependent loads through a random
// cycle (next[] is a single cycle over a table larger than L1), so every load must wait for
// the previous one to return: the GPU is almost idle and the time is steps x load latency.
// Expect ncu to show tiny throughput everywhere, one SM busy, and warps stalled on memory
// (long scoreboard).
extern "C" __global__ void tiny_kernel(const unsigned int *__restrict__ next,
                                       float *__restrict__ out,
                                       unsigned int table_len,
                                       int steps) {
    // Spread the 32 starting points over the table; they all lie on the one cycle.
    unsigned int at = (unsigned int)(((unsigned long)threadIdx.x * table_len) / blockDim.x);
    float acc = 0.0f;
    for (int i = 0; i < steps; ++i) {
        at = next[at];
        acc = acc * 0.999f + (float)(at & 1023u);
    }
    out[threadIdx.x] = acc;
}
