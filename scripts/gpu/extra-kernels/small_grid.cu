// small_grid.cu: too little parallelism. 8 blocks x 128 threads (1,024 threads, 32 warps on
// a GPU that holds 132 x 64 = 8,448 warps) each run one long chain of dependent FMAs.
//
// What it does: thread t loads a[t] in [0.5, 0.99) and b[t] in [0, 1), then iterates
// x = fmaf(x, a, b) ITERS times (default 200,000): every FMA needs the previous result, so a
// warp can issue at most one FMA per FMA latency (~4 cycles on Hopper). No memory traffic
// beyond 8 KiB in and 4 KiB out. x converges to b / (1 - a), so values stay finite.
//
// Launch: dependent_fma_kernel<<<8, 128>>>: 8 of 132 SMs get one block each (4 warps, one per
// SM sub-partition); 124 SMs are idle for the whole kernel.
// Expected time: 200,000 x ~4 cycles (+ loop overhead, unrolled 8x) at ~1.7-1.98 GHz
// -> ~0.4-0.5 ms.
//
// Usage: ./small_grid [LAUNCHES=4] [ITERS=200000]
//
// Expected ncu verdict: LATENCY-BOUND (too little parallelism), not compute-bound:
//   - SM (compute) throughput and Memory throughput both tiny (< 5 %; pipe FMA utilisation is
//     averaged over all 132 SMs, only ~6 % of which are ever active).
//   - launch__grid_size 8 < 132 SMs, launch__waves_per_multiprocessor ~0.06; the LaunchStats
//     rule should warn that the grid is too small to fill the GPU.
//   - Theoretical occupancy (sm__maximum_warps_per_active_cycle_pct) 100 % (14 registers),
//     achieved (sm__warps_active.avg.pct_of_peak_sustained_active) ~6 %: 4 warps of 64 on
//     the active SMs. Low occupancy here is a symptom of the grid size, not of any per-SM
//     resource limit, so "occupancy-limited" would be the wrong diagnosis and fix.
//   - Warp stalls: stall_wait (fixed-latency dependency) dominant, issue slot active ~20-25 %
//     on the few active sub-partitions, eligible warps per cycle << 1.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

__host__ __device__ inline unsigned hash32(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352du;
  x ^= x >> 15; x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__host__ __device__ inline float coef_a(unsigned i) {
  return 0.5f + 0.49f * ((hash32(i ^ 0x5a5au) >> 8) * (1.0f / 16777216.0f));
}
__host__ __device__ inline float coef_b(unsigned i) {
  return (hash32(i ^ 0xa5a5u) >> 8) * (1.0f / 16777216.0f);
}

__global__ void fill_coefs(float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { a[i] = coef_a(i); b[i] = coef_b(i); }
}

__global__ void dependent_fma_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ out, int iters) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float av = a[t], bv = b[t];
  float x = bv;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) x = fmaf(x, av, bv);
  out[t] = x;
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 4;
  int iters = argc > 2 ? atoi(argv[2]) : 200000;
  if (launches < 1 || iters < 1) {
    fprintf(stderr, "usage: %s [LAUNCHES>=1] [ITERS>=1]\n", argv[0]);
    return 2;
  }
  const int blocks = 8, threads = 128, n = blocks * threads;
  float *a = nullptr, *b = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  fill_coefs<<<(n + 255) / 256, 256>>>(a, b, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  float* ms = (float*)malloc(sizeof(float) * launches);
  for (int it = 0; it < launches; ++it) {
    CHECK(cudaEventRecord(t0));
    dependent_fma_kernel<<<blocks, threads>>>(a, b, out, iters);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventElapsedTime(&ms[it], t0, t1));
  }
  int first = launches > 1 ? 1 : 0, m = launches - first;
  for (int p = first; p < launches; ++p)
    for (int q = p + 1; q < launches; ++q)
      if (ms[q] < ms[p]) { float t = ms[p]; ms[p] = ms[q]; ms[q] = t; }
  float med = (m % 2) ? ms[first + m / 2] : 0.5f * (ms[first + m / 2 - 1] + ms[first + m / 2]);

  float h[1024];
  CHECK(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
  double checksum = 0.0;
  for (int i = 0; i < n; ++i) checksum += h[i];
  // The same fmaf chain on the host (IEEE fma, round to nearest) must match bit for bit.
  int bad = 0;
  for (int t = 0; t < n; t += 255) {
    const float av = coef_a(t), bv = coef_b(t);
    float x = bv;
    for (int i = 0; i < iters; ++i) x = fmaf(x, av, bv);
    if (x != h[t]) ++bad;
  }
  printf("small_grid: grid=%d block=%d iters=%d launches=%d median_ms=%.4f "
         "ns_per_fma_step=%.3f checksum=%.6f check=%s\n",
         blocks, threads, iters, launches, med, med * 1e6 / iters, checksum, bad ? "FAILED" : "ok");
  free(ms);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(out));
  return bad ? 1 : 0;
}
