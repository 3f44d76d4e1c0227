// aos_field_gather -- limiter: uncoalesced-global.
//
// Particles are stored as an array of 32-byte structs and the kernel wants one field:
// out[i] = p[i].x * scale. Consecutive lanes read 4 bytes 32 bytes apart, so every lane
// touches its own 32-byte sector: 32 sectors per load request where 4 would do (4-byte
// accesses), and 7/8 of every sector fetched from DRAM is thrown away. The fix is a
// structure-of-arrays layout (or reading whole structs with 16-byte loads and using them).
struct Particle {
    float x, y, z, vx, vy, vz, mass, charge;
};

extern "C" __global__ void aos_field_gather(const Particle *__restrict__ p,
                                            float *__restrict__ out,
                                            float scale,
                                            unsigned long n) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        out[i] = p[i].x * scale;
    }
}
