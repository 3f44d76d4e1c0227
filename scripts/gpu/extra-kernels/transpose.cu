// transpose.cu: NAIVE out-of-place transpose of an N x N float matrix (default 16384 x 16384,
// 1 GiB in + 1 GiB out).
//
// What it does: out[x * N + y] = in[y * N + x], one element per thread, no shared-memory tile.
// A warp covers 32 consecutive x of one row y: its loads are one contiguous 128-byte line
// (coalesced), its stores go to 32 different rows of `out`, 64 KiB apart (uncoalesced: 32
// sectors per request, 4 of every 32 bytes used per request).
// Inputs: uniform [0, 1) floats from an integer hash, written by a fill kernel.
//
// Launch: transpose_naive_kernel<<<(N/32, N/8) = (512, 2048), (32, 8)>>>: 1 Mi blocks of 256.
// The 8 warps of a block write 8 consecutive y, so together they fill whole 32-byte sectors,
// and L2 merges them before write-back: DRAM traffic should stay near 2 GiB. The waste is in
// the L1 -> L2 path: 8x more store sector requests than a coalesced store.
// Expected time: ~1.2-2.5 ms (a coalesced 2 GiB copy would take ~0.5 ms): ~288 Mi L2 sector
// accesses (256 Mi partial-sector stores + 32 Mi load sectors) at a few hundred per cycle.
//
// Usage: ./transpose [LAUNCHES=4] [N=16384]   (N a multiple of 32)
//
// Expected ncu verdict: MEMORY-BOUND, limited by L1/L2 transactions, not by DRAM bandwidth.
//   - Memory throughput (gpu__compute_memory_throughput) high (~60-90 %), its top unit
//     being L2 (lts__throughput) or L1TEX, not DRAM; gpu__dram_throughput well below peak
//     (~20-45 %).
//   - Stores: l1tex__t_sectors_pipe_lsu_mem_global_op_st / requests ~= 32 (ideal 4);
//     loads ~= 4 sectors per request. The UncoalescedGlobalAccess / "uncoalesced global
//     accesses" rule should fire on the store line with an estimated speedup.
//   - dram__bytes_read ~= dram__bytes_write ~= 1 GiB (L2 merges the partial sectors).
//   - SM (compute) throughput low (~10-25 %); stalls: lg_throttle and long_scoreboard.
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

__global__ void fill_uniform(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = (hash32((unsigned)i ^ seed) >> 8) * (1.0f / 16777216.0f);  // [0, 1)
}

__global__ void transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out,
                                       int n) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;  // column of `in`: fast across a warp
  const int y = blockIdx.y * blockDim.y + threadIdx.y;  // row of `in`
  if (x < n && y < n) out[(size_t)x * n + y] = in[(size_t)y * n + x];
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 4;
  int n = argc > 2 ? atoi(argv[2]) : 16384;
  if (launches < 1 || n < 32 || n % 32) {
    fprintf(stderr, "usage: %s [LAUNCHES>=1] [N, a multiple of 32]\n", argv[0]);
    return 2;
  }
  const size_t elems = (size_t)n * n;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));

  float *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, elems * sizeof(float)));
  CHECK(cudaMalloc(&out, elems * sizeof(float)));
  fill_uniform<<<4 * sms, 256>>>(in, elems, 0xabcdef1u);
  CHECK(cudaGetLastError());
  CHECK(cudaMemset(out, 0, elems * sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  const dim3 block(32, 8), grid(n / 32, n / 8);
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  float* ms = (float*)malloc(sizeof(float) * launches);
  for (int it = 0; it < launches; ++it) {
    CHECK(cudaEventRecord(t0));
    transpose_naive_kernel<<<grid, block>>>(in, out, n);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventElapsedTime(&ms[it], t0, t1));
  }
  int first = launches > 1 ? 1 : 0, m = launches - first;
  for (int a = first; a < launches; ++a)
    for (int b = a + 1; b < launches; ++b)
      if (ms[b] < ms[a]) { float t = ms[a]; ms[a] = ms[b]; ms[b] = t; }
  float med = (m % 2) ? ms[first + m / 2] : 0.5f * (ms[first + m / 2 - 1] + ms[first + m / 2]);

  // Check 64 pseudo-random positions; the checksum is the sum of the checked values.
  int bad = 0;
  double checksum = 0.0;
  for (int k = 0; k < 64; ++k) {
    const size_t r = hash32(2 * k + 1) % n, c = hash32(2 * k + 2) % n;
    float a = 0.f, b = 0.f;
    CHECK(cudaMemcpy(&a, in + r * n + c, sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&b, out + c * n + r, sizeof(float), cudaMemcpyDeviceToHost));
    if (a != b) ++bad;
    checksum += b;
  }
  double gbs = 2.0 * elems * sizeof(float) / (med * 1e-3) / 1e9;
  printf("transpose: n=%d grid=(%d,%d) block=(32,8) launches=%d median_ms=%.4f GB/s=%.1f "
         "checksum=%.6f check=%s\n",
         n, grid.x, grid.y, launches, med, gbs, checksum, bad ? "FAILED" : "ok");
  free(ms);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  return bad ? 1 : 0;
}
