// const_table_divergent -- limiter: divergent constant loads (MIO throttle).
//
// Every thread follows two lookup chains through a 4 KiB __constant__ table, one after the
// other; the index of each lookup is the previous value, so the 32 lanes of a warp read 32
// different words. The constant cache serves one address per cycle, so each warp's LDC is
// replayed up to 32 times through the ADU/MIO path: the ADU pipe is busy, warps stall on
// mio_throttle and IPC is tiny while neither memory nor any math pipe is busy. The fix:
// put a table read with divergent indices in shared memory (or read it through the
// read-only global path, __ldg), where one instruction serves all 32 lanes.
// The 1024-word table, written out by the preprocessor: word i is TABLE_WORD(i)
// (mirrored by const_table_word in src/lib.rs). Kept in step with the fixes' copy.
#define TABLE_WORDS 1024
#define TABLE_WORD(i) ((((unsigned int)(i)) * 2654435761u) ^ (((unsigned int)(i)) >> 3))
#define TW4(i) TABLE_WORD(i), TABLE_WORD((i) + 1), TABLE_WORD((i) + 2), TABLE_WORD((i) + 3)
#define TW16(i) TW4(i), TW4((i) + 4), TW4((i) + 8), TW4((i) + 12)
#define TW64(i) TW16(i), TW16((i) + 16), TW16((i) + 32), TW16((i) + 48)
#define TW256(i) TW64(i), TW64((i) + 64), TW64((i) + 128), TW64((i) + 192)
#define TW1024(i) TW256(i), TW256((i) + 256), TW256((i) + 512), TW256((i) + 768)

// One step of a lookup chain: the index depends on the previous value, so every lane of a
// warp reads a different word.
__device__ __forceinline__ unsigned int table_step(unsigned int x, unsigned int word) {
    return (x >> 7) + (x << 3) + word;
}

__device__ __forceinline__ unsigned int chain_start(unsigned int tid, unsigned int chain) {
    return tid * 0x9E3779B9u + chain * 0x85EBCA77u;
}

__constant__ unsigned int table[TABLE_WORDS] = {TW1024(0)};

extern "C" __global__ void const_table_divergent(unsigned int *__restrict__ out, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    for (unsigned int c = 0; c < 2; ++c) {
        unsigned int x = chain_start(tid, c);
        for (int i = 0; i < iters; ++i) {
            x = table_step(x, table[x & (TABLE_WORDS - 1)]);
        }
        acc ^= x;
    }
    out[tid] = acc;
}
