// atomic_bins -- limiter: atomics-contention.
//
// A naive accumulation: every thread adds its element into one of only 8 global counters,
// atomicAdd(&bins[i & 7], data[i] & 255). All 8 counters share one 32-byte sector, so the
// whole GPU's atomics queue on the atomic unit of a single L2 slice; the result is unused,
// so they compile to fire-and-forget RED instructions. Memory and SM throughput both stay
// low while warps wait on the atomic queue. The fix: privatize (a shared-memory or per-warp
// sum first, one global atomic per block).
extern "C" __global__ void atomic_bins(const unsigned int *__restrict__ data,
                                       unsigned int *__restrict__ bins,
                                       unsigned long n) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        atomicAdd(&bins[i & 7], data[i] & 255u);
    }
}
