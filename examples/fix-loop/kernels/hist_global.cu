// A histogram in global memory: one atomicAdd(&bins[b], 1) per element, 256 bins (1 KiB,
// 32 sectors), 16.8 M elements.
//   hist_global_256: bins uniform at random: a warp's 32 updates spread over ~20 sectors,
//     and the whole GPU's updates queue on the L2 atomic units that own those 1 KiB.
//   hist_global_skewed: three elements in four fall in bin 0: a warp's updates mostly hit
//     one address and serialise there.
//
// The fix (`__fix`): privatise. Each block counts into 256 shared-memory bins, then adds
// them to the global bins: 256 global atomics per block instead of one per element.
__device__ __forceinline__ unsigned int skewed_bin(unsigned int v) {
    return (v & 3u) != 0u ? 0u : (v >> 2) & 255u;
}

extern "C" __global__ void hist_global_256(const unsigned int *__restrict__ v, unsigned int *bins,
                                           unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&bins[v[i] & 255u], 1u);
    }
}

extern "C" __global__ void hist_global_skewed(const unsigned int *__restrict__ v, unsigned int *bins,
                                              unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&bins[skewed_bin(v[i])], 1u);
    }
}

// The shared-memory bins of a block, added to `bins` at the end (blockDim.x >= 256).
struct SharedBins {
    unsigned int *local;
    __device__ void flush(unsigned int *bins) {
        __syncthreads();
        if (threadIdx.x < 256 && local[threadIdx.x] != 0u) {
            atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
        }
    }
};

extern "C" __global__ void hist_global_256__fix(const unsigned int *__restrict__ v, unsigned int *bins,
                                                unsigned int n) {
    __shared__ unsigned int local[256];
    if (threadIdx.x < 256) {
        local[threadIdx.x] = 0u;
    }
    __syncthreads();
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&local[v[i] & 255u], 1u);
    }
    SharedBins{local}.flush(bins);
}

extern "C" __global__ void hist_global_skewed__fix(const unsigned int *__restrict__ v, unsigned int *bins,
                                                   unsigned int n) {
    __shared__ unsigned int local[256];
    if (threadIdx.x < 256) {
        local[threadIdx.x] = 0u;
    }
    __syncthreads();
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&local[skewed_bin(v[i])], 1u);
    }
    SharedBins{local}.flush(bins);
}
