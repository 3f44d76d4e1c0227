// Fixes of local_histogram (same result, same launch; blocks of 256 threads).
//   __fix1 (first cause, a dynamically indexed array in local memory): the per-thread
//          counters live in shared memory instead, 64 x 256 16-bit counters (32 KiB),
//          bin-major so that a warp's counters are 32 consecutive halfwords per bin. A
//          thread counts at most 65,535 elements (the bench's threads count ~500 each).
//   __fix2 (second cause, one load in flight per thread): the counters stay in local
//          memory, but four elements are loaded before any is counted.
#define BINS 64
#define THREADS 256

extern "C" __global__ void local_histogram__fix1(const unsigned int *__restrict__ data,
                                                 unsigned int *__restrict__ partial,
                                                 unsigned long n) {
    __shared__ unsigned short hist[BINS][THREADS];
    for (int b = 0; b < BINS; ++b) {
        hist[b][threadIdx.x] = 0;
    }
    unsigned long threads = (unsigned long)gridDim.x * blockDim.x;
    unsigned long tid = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned long i = tid; i < n; i += threads) {
        hist[data[i] >> 26][threadIdx.x]++;
    }
#pragma unroll 4
    for (int b = 0; b < BINS; ++b) {
        partial[b * threads + tid] = hist[b][threadIdx.x];
    }
}

extern "C" __global__ void local_histogram__fix2(const unsigned int *__restrict__ data,
                                                 unsigned int *__restrict__ partial,
                                                 unsigned long n) {
    unsigned int hist[BINS];
#pragma unroll
    for (int b = 0; b < BINS; ++b) {
        hist[b] = 0;
    }
    unsigned long threads = (unsigned long)gridDim.x * blockDim.x;
    unsigned long tid = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long i = tid;
    for (; i + 3 * threads < n; i += 4 * threads) {
        unsigned int v0 = data[i], v1 = data[i + threads];
        unsigned int v2 = data[i + 2 * threads], v3 = data[i + 3 * threads];
        hist[v0 >> 26]++;
        hist[v1 >> 26]++;
        hist[v2 >> 26]++;
        hist[v3 >> 26]++;
    }
    for (; i < n; i += threads) {
        hist[data[i] >> 26]++;
    }
#pragma unroll 4
    for (int b = 0; b < BINS; ++b) {
        partial[b * threads + tid] = hist[b];
    }
}
