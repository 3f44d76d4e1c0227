// Fixes of atomic_bins (same result, same launch; blocks of 256 threads).
//   __fix1 (first cause, the whole GPU's atomics on 8 words of one L2 slice): privatise.
//          Each block adds into 8 shared-memory counters, then adds them to the global
//          ones: 8 global atomics per block instead of one per element.
//   __fix2 (second cause, one atomic instruction per element): warp aggregation without
//          privatisation. Lanes l, l+8, l+16, l+24 of a warp always hit the same bin
//          (i & 7 = lane & 7), so two shuffles sum them and lanes 0..7 add the sums: 4x
//          fewer global atomics, all still on the same 8 words.
extern "C" __global__ void atomic_bins__fix1(const unsigned int *__restrict__ data,
                                             unsigned int *__restrict__ bins,
                                             unsigned long n) {
    __shared__ unsigned int local[8];
    if (threadIdx.x < 8) {
        local[threadIdx.x] = 0;
    }
    __syncthreads();
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        atomicAdd(&local[i & 7], data[i] & 255u);
    }
    __syncthreads();
    if (threadIdx.x < 8) {
        atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
    }
}

extern "C" __global__ void atomic_bins__fix2(const unsigned int *__restrict__ data,
                                             unsigned int *__restrict__ bins,
                                             unsigned long n) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    unsigned int lane = threadIdx.x & 31;
    // Warp-uniform loop bound: every lane runs as many iterations as lane 0.
    for (unsigned long base = (unsigned long)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n;
         base += stride) {
        unsigned long i = base + lane;
        unsigned int v = i < n ? data[i] & 255u : 0u;
        v += __shfl_down_sync(0xffffffffu, v, 16);
        v += __shfl_down_sync(0xffffffffu, v, 8);
        if (lane < 8) {
            atomicAdd(&bins[lane], v);
        }
    }
}
