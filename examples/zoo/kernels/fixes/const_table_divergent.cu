// Fixes of const_table_divergent (same result, same launch).
//   __fix1 (first cause, divergent constant loads): the table is copied to shared memory
//          once per block; a divergent shared load costs a few bank-conflict wavefronts
//          instead of up to 32 serialised constant-cache accesses.
//   __fix2 (second cause, one dependent chain at a time): the table stays in constant
//          memory, but the two chains are interleaved, so two lookups are in flight.
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

extern "C" __global__ void const_table_divergent__fix1(unsigned int *__restrict__ out, int iters) {
    __shared__ unsigned int s_table[TABLE_WORDS];
    for (int i = threadIdx.x; i < TABLE_WORDS; i += blockDim.x) {
        s_table[i] = table[i];
    }
    __syncthreads();
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    for (unsigned int c = 0; c < 2; ++c) {
        unsigned int x = chain_start(tid, c);
        for (int i = 0; i < iters; ++i) {
            x = table_step(x, s_table[x & (TABLE_WORDS - 1)]);
        }
        acc ^= x;
    }
    out[tid] = acc;
}

extern "C" __global__ void const_table_divergent__fix2(unsigned int *__restrict__ out, int iters) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int x0 = chain_start(tid, 0);
    unsigned int x1 = chain_start(tid, 1);
    for (int i = 0; i < iters; ++i) {
        unsigned int w0 = table[x0 & (TABLE_WORDS - 1)];
        unsigned int w1 = table[x1 & (TABLE_WORDS - 1)];
        x0 = table_step(x0, w0);
        x1 = table_step(x1, w1);
    }
    out[tid] = x0 ^ x1;
}
