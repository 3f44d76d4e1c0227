// Same-address global atomics: every thread adds each of its elements into one word.
//
// atomic_total_f32: atomicAdd(total, x[i]) for 16.8 M floats. The result is unused, so each
// add is a fire-and-forget RED; all of them go to one address, which the L2 slice owning it
// applies one after another. The SMs issue a load and a RED per element and then wait: on
// the LSU queue the REDs fill (lg_throttle) and, at the end, for the REDs to drain.
// atomic_total_u64: the same with 64-bit integer adds of 33.6 M values (16 bits each).
//
// The fix (`__fix`): sum in registers, then across the warp with shuffles and across the
// block through shared memory; one atomic per block.
extern "C" __global__ void atomic_total_f32(const float *__restrict__ x, float *total, unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(total, x[i]);
    }
}

extern "C" __global__ void atomic_total_u64(const unsigned int *__restrict__ v, unsigned long long *total,
                                            unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(total, (unsigned long long)(v[i] & 0xffffu));
    }
}

// The block's sum of `acc` (blockDim.x a multiple of 32, at most 1024), valid in thread 0.
template <typename T> __device__ T block_sum(T acc) {
    __shared__ T warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    }
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_sums[warp] = acc;
    }
    __syncthreads();
    acc = 0;
    if (warp == 0) {
        acc = lane < (blockDim.x >> 5) ? warp_sums[lane] : (T)0;
        for (int o = 16; o > 0; o >>= 1) {
            acc += __shfl_down_sync(0xffffffffu, acc, o);
        }
    }
    return acc;
}

extern "C" __global__ void atomic_total_f32__fix(const float *__restrict__ x, float *total, unsigned int n) {
    float acc = 0.f;
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        acc += x[i];
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        atomicAdd(total, acc);
    }
}

extern "C" __global__ void atomic_total_u64__fix(const unsigned int *__restrict__ v, unsigned long long *total,
                                                 unsigned int n) {
    unsigned long long acc = 0;
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        acc += v[i] & 0xffffu;
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        atomicAdd(total, acc);
    }
}
