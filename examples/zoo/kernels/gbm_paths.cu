// gbm_paths (held out): Monte Carlo of a European call under geometric Brownian motion, one
// path per thread, built with --use_fast_math. Each pair of steps draws two uniforms from a
// 32-bit LCG, turns them into two normals (Box-Muller: log, sqrt, sin, cos) and moves the
// price by exp(drift_dt + vol_sqrt_dt * z). Writes max(S_T - strike, 0) per path.
__device__ __forceinline__ unsigned int lcg(unsigned int s) {
    return s * 1664525u + 1013904223u;
}

// A uniform in [0, 1) from the top 23 bits, by building a float in [1, 2).
__device__ __forceinline__ float uniform01(unsigned int s) {
    return __uint_as_float(0x3f800000u | (s >> 9)) - 1.0f;
}

extern "C" __global__ void gbm_paths(const unsigned int *__restrict__ seeds,
                                     float *__restrict__ payoff,
                                     int steps,
                                     float s0,
                                     float drift_dt,
                                     float vol_sqrt_dt,
                                     float strike) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int st = seeds[tid];
    float s = s0;
    for (int t = 0; t < steps; t += 2) {
        st = lcg(st);
        float u1 = 1.0f - uniform01(st);  // (0, 1]
        st = lcg(st);
        float u2 = uniform01(st);
        float radius = sqrtf(-2.0f * logf(u1));
        float angle = 6.2831853f * u2;
        float z1 = radius * cosf(angle);
        float z2 = radius * sinf(angle);
        s *= expf(drift_dt + vol_sqrt_dt * z1);
        s *= expf(drift_dt + vol_sqrt_dt * z2);
    }
    payoff[tid] = fmaxf(s - strike, 0.0f);
}
