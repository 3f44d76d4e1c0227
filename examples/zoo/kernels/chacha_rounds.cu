// chacha_rounds -- limiter: pipe-alu.
//
// Each thread runs ChaCha double rounds on a 16-word state held in registers: only 32-bit
// adds, xors and rotations (IADD3, LOP3, SHF/PRMT), no memory inside the loop and no
// floating point. Integer add/logic/shift instructions go to the ALU pipe, which on Hopper
// takes two cycles per warp instruction (16 lanes per SM sub-partition), half the FP32
// rate, so the ALU pipe saturates first.
#define ROTL(v, n) __funnelshift_l((v), (v), (n))
#define QR(a, b, c, d)                                                                   \
    a += b; d ^= a; d = ROTL(d, 16);                                                     \
    c += d; b ^= c; b = ROTL(b, 12);                                                     \
    a += b; d ^= a; d = ROTL(d, 8);                                                      \
    c += d; b ^= c; b = ROTL(b, 7);

extern "C" __global__ void chacha_rounds(const unsigned int *__restrict__ keys,
                                         unsigned int *__restrict__ out,
                                         int double_rounds) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int k = keys[tid];
    unsigned int x0 = 0x61707865u, x1 = 0x3320646eu, x2 = 0x79622d32u, x3 = 0x6b206574u;
    unsigned int x4 = k, x5 = k ^ 0x9e3779b9u, x6 = k + 0x7f4a7c15u, x7 = k * 3u;
    unsigned int x8 = ~k, x9 = k ^ 0x85ebca6bu, x10 = k + 0xc2b2ae35u, x11 = k * 5u;
    unsigned int x12 = tid, x13 = 0, x14 = k >> 3, x15 = k << 3;
    for (int r = 0; r < double_rounds; ++r) {
        QR(x0, x4, x8, x12)
        QR(x1, x5, x9, x13)
        QR(x2, x6, x10, x14)
        QR(x3, x7, x11, x15)
        QR(x0, x5, x10, x15)
        QR(x1, x6, x11, x12)
        QR(x2, x7, x8, x13)
        QR(x3, x4, x9, x14)
    }
    out[tid] = (x0 ^ x1 ^ x2 ^ x3) + (x4 ^ x5 ^ x6 ^ x7) + (x8 ^ x9 ^ x10 ^ x11) +
               (x12 ^ x13 ^ x14 ^ x15);
}
