// nbody_fp64 (held out): all-pairs gravitational accelerations in double precision, with
// the j loop split into gridDim.y chunks (each block row writes its own partial sums).
// Bodies are (x, y, z, mass); positions of a chunk are staged through shared memory in
// tiles of blockDim.x bodies (blockDim.x must be 128 and divide the chunk).
#define TILE 128

struct __align__(32) Body {
    double x, y, z, mass;
};

extern "C" __global__ void nbody_fp64(const Body *__restrict__ bodies,
                                      double *__restrict__ acc,
                                      int n,
                                      double eps2) {
    __shared__ Body tile[TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = n / gridDim.y;
    int j0 = blockIdx.y * chunk;
    Body me = bodies[i];
    double ax = 0.0, ay = 0.0, az = 0.0;
    for (int t = j0; t < j0 + chunk; t += TILE) {
        tile[threadIdx.x] = bodies[t + threadIdx.x];
        __syncthreads();
#pragma unroll 4
        for (int j = 0; j < TILE; ++j) {
            Body other = tile[j];
            double dx = other.x - me.x;
            double dy = other.y - me.y;
            double dz = other.z - me.z;
            double r2 = fma(dx, dx, fma(dy, dy, fma(dz, dz, eps2)));
            double inv = rsqrt(r2);
            double s = other.mass * (inv * inv * inv);
            ax = fma(dx, s, ax);
            ay = fma(dy, s, ay);
            az = fma(dz, s, az);
        }
        __syncthreads();
    }
    size_t o = ((size_t)blockIdx.y * n + i) * 3;
    acc[o] = ax;
    acc[o + 1] = ay;
    acc[o + 2] = az;
}
