// code_switch_64 -- limiter: instruction-cache.
//
// An interpreter-like kernel: in every step each warp picks one of 64 code blocks (warp-
// uniform, from a hash of the warp and the step) through a switch (an indirect branch).
// Each block is 256 straight-line FFMAs with its own constants (4 KiB of SASS), generated
// by template + macro repetition, so the kernel body is about 256 KiB of code, twice the
// SM's instruction cache, and the warps of an SM run different blocks at the same time.
// Warps keep missing in the instruction caches and stall with no instruction to issue
// (stall_no_instruction). The fix: shrink the code (a loop over constants in a table
// instead of unrolled copies, fewer specializations).
#define PER_BLOCK 64  // iterations of 4 FFMAs: 256 FFMAs per code block

template <int N>
__device__ __forceinline__ void code_block(float &a, float &b, float &c, float &d, float k) {
    // Multipliers 0.5 + m / 1024 with m in [0, 256): exact in float, below 1 so the chains
    // stay bounded, and different in every block so no two blocks are the same code.
#pragma unroll
    for (int i = 0; i < PER_BLOCK; ++i) {
        a = fmaf(a, 0.5f + (float)((N * 37 + i * 11) & 255) * (1.0f / 1024.0f), k);
        b = fmaf(b, 0.5f + (float)((N * 37 + i * 11 + 3) & 255) * (1.0f / 1024.0f), k);
        c = fmaf(c, 0.5f + (float)((N * 37 + i * 11 + 5) & 255) * (1.0f / 1024.0f), k);
        d = fmaf(d, 0.5f + (float)((N * 37 + i * 11 + 7) & 255) * (1.0f / 1024.0f), k);
    }
}

#define CASE1(n) case (n): code_block<(n)>(a, b, c, d, k); break;
#define CASE4(n) CASE1(n) CASE1((n) + 1) CASE1((n) + 2) CASE1((n) + 3)
#define CASE16(n) CASE4(n) CASE4((n) + 4) CASE4((n) + 8) CASE4((n) + 12)
#define CASE64 CASE16(0) CASE16(16) CASE16(32) CASE16(48)

// The code block a warp runs in a step: 6 bits of a multiplicative hash, the same for all
// lanes of the warp. Host code mirrors this in its reference.
__device__ __forceinline__ unsigned int pick_block(unsigned int warp, unsigned int step) {
    return (warp * 0x9E3779B1u + step * 0x85EBCA77u) >> 26;
}

extern "C" __global__ void code_switch_64(const float *__restrict__ in,
                                          float *__restrict__ out,
                                          float k,
                                          int steps) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int warp = tid / 32;
    float a = in[tid], b = -a, c = 0.5f * a, d = -0.5f * a;
    for (int s = 0; s < steps; ++s) {
        switch (pick_block(warp, (unsigned int)s)) {
            CASE64
        }
    }
    out[tid] = (a + b) + (c + d);
}
