// l2_reread_cg -- limiter: l2-bandwidth.
//
// A 4 MiB table (256 Ki float4) is read `passes` times by every block, each block starting
// at its own rotation so that concurrent blocks spread over all L2 slices. The loads use
// __ldcg (ld.global.cg: cache in L2, not in L1), so L1 absorbs nothing and every byte comes
// from L2; the table fits L2 many times over, so DRAM only sees its first touch. Little math
// per byte (four adds per 16 bytes). Expect L2 (lts) throughput near its peak, DRAM near 0,
// and an L1 hit rate of 0 %.
extern "C" __global__ void l2_reread_cg(const float4 *__restrict__ table,
                                        float *__restrict__ out,
                                        unsigned int n4,
                                        int passes) {
    // A rotation that is a multiple of 32 float4s keeps every warp's 512 bytes contiguous.
    unsigned int rot = (blockIdx.x * 8192u) % n4;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
#pragma unroll 4
        for (unsigned int j = threadIdx.x; j < n4; j += blockDim.x) {
            unsigned int k = j + rot;
            if (k >= n4) {
                k -= n4;
            }
            float4 v = __ldcg(&table[k]);
            acc += (v.x + v.y) + (v.z + v.w);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
