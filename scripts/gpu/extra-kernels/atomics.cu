// atomics.cu: 64-bin histogram of N random 32-bit ints (default 256 Mi = 1 GiB) with one
// global atomicAdd per element and no privatization (no shared-memory or per-warp bins).
//
// What it does: grid-stride loop over int4 loads (coalesced, 16 B per thread); for each of
// the 4 values, atomicAdd(&bins[v & 63], 1). The result is unused, so the compiler emits
// fire-and-forget RED.ADD instructions, performed in L2. All 64 counters share 256 bytes
// (two 128-byte lines, 8 sectors), so every atomic in the GPU queues on the atomic units of
// one or two L2 slices, with heavy same-address contention.
// Inputs: uniform random ints from an integer hash, written by a fill kernel.
//
// Launch: histogram_atomic_kernel<<<8 * SMs (1056 on an H200), 256>>>: full occupancy.
// Expected time: ~3-40 ms (wide because the L2 atomic rate on two hot lines is not
// published; a DRAM-bound read of the same 1 GiB would take ~0.27 ms). If it is above
// ~20 ms, the size argument (e.g. 64) brings it into the 0.2-5 ms range.
//
// Usage: ./atomics [LAUNCHES=4] [MI_INTS=256]
//
// Expected ncu verdict: LATENCY-BOUND (atomic throughput / serialization at L2), low DRAM:
//   - DRAM throughput very low (< 10 %): 1 GiB over several ms.
//   - Memory throughput (SOL) NOT high either: L2 throughput is averaged over all slices and
//     only one or two slices are hot, so lts__throughput.avg stays low; same for SM
//     throughput. Both low -> the SOL rule points at latency.
//   - smsp__inst_executed_op_global_red.sum = N/32 (8 Mi warp-level REDs) and
//     lts__t_sectors_srcunit_tex_op_red.sum ~= 8 x that (each RED spans the 8 bin sectors);
//     the rest of the instruction mix is a few LDG.128 and index math.
//   - Warp stalls: lg_throttle (LSU/memory queue back-pressure from the REDs) dominant,
//     then drain / membar-like waits at the end; issue active low; occupancy high but useless.
#include <cstdio>
#include <cstdlib>
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

__global__ void fill_ints(int* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = (int)hash32((unsigned)i * 0x9e3779b9u ^ seed);
}

constexpr int kBins = 64;

// n4 = number of int4; the input is a multiple of 4 ints.
__global__ void __launch_bounds__(256)
histogram_atomic_kernel(const int4* __restrict__ in, size_t n4, unsigned* __restrict__ bins) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
       i += (size_t)gridDim.x * blockDim.x) {
    const int4 v = in[i];
    atomicAdd(&bins[v.x & (kBins - 1)], 1u);
    atomicAdd(&bins[v.y & (kBins - 1)], 1u);
    atomicAdd(&bins[v.z & (kBins - 1)], 1u);
    atomicAdd(&bins[v.w & (kBins - 1)], 1u);
  }
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 4;
  long mi = argc > 2 ? atol(argv[2]) : 256;
  if (launches < 1 || mi < 1) {
    fprintf(stderr, "usage: %s [LAUNCHES>=1] [MI_INTS>=1]\n", argv[0]);
    return 2;
  }
  const size_t n = (size_t)mi << 20;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = 8 * sms, threads = 256;

  int* in = nullptr;
  unsigned* bins = nullptr;
  CHECK(cudaMalloc(&in, n * sizeof(int)));
  CHECK(cudaMalloc(&bins, kBins * sizeof(unsigned)));
  fill_ints<<<4 * sms, 256>>>(in, n, 0x7777u);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  float* ms = (float*)malloc(sizeof(float) * launches);
  unsigned h[kBins];
  for (int it = 0; it < launches; ++it) {
    CHECK(cudaMemset(bins, 0, kBins * sizeof(unsigned)));
    CHECK(cudaEventRecord(t0));
    histogram_atomic_kernel<<<blocks, threads>>>((const int4*)in, n / 4, bins);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventElapsedTime(&ms[it], t0, t1));
  }
  CHECK(cudaMemcpy(h, bins, sizeof(h), cudaMemcpyDeviceToHost));
  int first = launches > 1 ? 1 : 0, m = launches - first;
  for (int a = first; a < launches; ++a)
    for (int b = a + 1; b < launches; ++b)
      if (ms[b] < ms[a]) { float t = ms[a]; ms[a] = ms[b]; ms[b] = t; }
  float med = (m % 2) ? ms[first + m / 2] : 0.5f * (ms[first + m / 2 - 1] + ms[first + m / 2]);

  unsigned long long total = 0, fnv = 1469598103934665603ull;
  unsigned lo = h[0], hi = h[0];
  for (int i = 0; i < kBins; ++i) {
    total += h[i];
    fnv = (fnv ^ h[i]) * 1099511628211ull;
    lo = h[i] < lo ? h[i] : lo;
    hi = h[i] > hi ? h[i] : hi;
  }
  const bool ok = total == n;
  printf("atomics: n=%zu ints bins=%d grid=%d block=%d launches=%d median_ms=%.4f "
         "Gatomics/s=%.2f checksum=%016llx min_bin=%u max_bin=%u check=%s\n",
         n, kBins, blocks, threads, launches, med, n / (med * 1e-3) / 1e9, fnv, lo, hi,
         ok ? "ok" : "FAILED");
  free(ms);
  CHECK(cudaFree(in));
  CHECK(cudaFree(bins));
  return ok ? 0 : 1;
}
