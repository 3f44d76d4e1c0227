// local_histogram -- limiter: local-memory-spills.
//
// Each thread builds a private 64-bin histogram of the top 6 bits of its share of the input
// in a per-thread array, `hist[data[i] >> 26]++`. The index is only known at run time, so
// the array cannot live in registers: it is placed in local memory (ptxas: 256 bytes stack
// frame) and every element costs a local load and a local store (LDL/STL). Lanes of a warp
// hit different bins, so each local access touches ~32 sectors, and 2048 threads x 256 bytes
// per SM (512 KiB) does not fit L1, so the traffic spills on to L2. At the end each thread
// writes its 64 counts out, bin-major (coalesced). The fix: a shared-memory histogram per
// block (or per warp), or fewer bins kept in registers.
#define BINS 64

extern "C" __global__ void local_histogram(const unsigned int *__restrict__ data,
                                           unsigned int *__restrict__ partial,
                                           unsigned long n) {
    unsigned int hist[BINS];
#pragma unroll
    for (int b = 0; b < BINS; ++b) {
        hist[b] = 0;
    }
    unsigned long threads = (unsigned long)gridDim.x * blockDim.x;
    unsigned long tid = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned long i = tid; i < n; i += threads) {
        hist[data[i] >> 26]++;
    }
#pragma unroll 4
    for (int b = 0; b < BINS; ++b) {
        partial[b * threads + tid] = hist[b];
    }
}
