// smem_byte_sum -- limiter: pipe-lsu.
//
// Each 256-thread block stages 8 KiB of bytes in shared memory and then sums them one byte
// per load (LDS.U8): a warp's load reads 32 consecutive bytes (8 banks, one wavefront, no
// conflict), so every shared-memory instruction moves 32 bytes where a 16-byte-per-thread
// load would move 512. The kernel issues one LSU instruction per useful byte per thread:
// LSU/MIO instruction issue saturates long before shared-memory bandwidth. The fix: fewer,
// wider accesses (load 4 or 16 bytes per thread and unpack in registers). `shift` (32 in the
// bench) moves the window every iteration; it is an argument so that the compiler cannot
// prove the loads repeat.
#define BYTES 8192

extern "C" __global__ void __launch_bounds__(256, 8)
    smem_byte_sum(const unsigned int *__restrict__ src, unsigned int *__restrict__ out, int iters, int shift) {
    __shared__ unsigned int words[BYTES / 4];
    for (int i = threadIdx.x; i < BYTES / 4; i += blockDim.x) {
        words[i] = src[i];
    }
    __syncthreads();
    const unsigned char *bytes = (const unsigned char *)words;
    unsigned int acc = 0;
    for (int it = 0; it < iters; ++it) {
        // Largest index 255 + 255 + 7 * 1024 = 7678 < BYTES.
        const unsigned char *p = bytes + threadIdx.x + ((it * shift) & 255);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            acc += p[k * 1024];
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
