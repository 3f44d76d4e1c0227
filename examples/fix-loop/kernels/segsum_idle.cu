// An oversized block with idle threads and a shared-memory tree: each block sums one
// segment of SEG floats per iteration with BLOCK threads, of which only the first SEG
// load an element; the tree then halves all BLOCK slots with a barrier per level
// (log2(BLOCK) levels), idle warps included. Every iteration waits for its loads, then
// for ten (or nine) barriers, and the idle warps hold warp slots that could have run
// other segments.
//   segsum_idle_1024x64: blocks of 1024 threads, segments of 64 (30 of 32 warps idle)
//   segsum_idle_512x128: blocks of 512 threads, segments of 128 (12 of 16 warps idle)
//
// The fix (`__fix`): a warp per segment, each lane loading 2 (float2) or 4 (float4)
// elements, a shuffle reduction, no shared memory and no barrier; blocks of 256 threads.
template <unsigned BLOCK, unsigned SEG>
__device__ void segsum_idle_body(const float *__restrict__ x, float *__restrict__ out, unsigned int segs) {
    __shared__ float s[BLOCK];
    unsigned int t = threadIdx.x;
    for (unsigned int g = blockIdx.x; g < segs; g += gridDim.x) {
        s[t] = t < SEG ? x[(size_t)g * SEG + t] : 0.f;
        __syncthreads();
        for (unsigned int stride = BLOCK / 2; stride > 0; stride >>= 1) {
            if (t < stride) {
                s[t] += s[t + stride];
            }
            __syncthreads();
        }
        if (t == 0) {
            out[g] = s[0];
        }
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(1024)
    segsum_idle_1024x64(const float *__restrict__ x, float *__restrict__ out, unsigned int segs) {
    segsum_idle_body<1024, 64>(x, out, segs);
}

extern "C" __global__ void __launch_bounds__(512)
    segsum_idle_512x128(const float *__restrict__ x, float *__restrict__ out, unsigned int segs) {
    segsum_idle_body<512, 128>(x, out, segs);
}

__device__ float warp_sum(float acc) {
    for (int o = 16; o > 0; o >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    }
    return acc;
}

extern "C" __global__ void segsum_idle_1024x64__fix(const float *__restrict__ x, float *__restrict__ out,
                                                    unsigned int segs) {
    unsigned int lane = threadIdx.x & 31;
    unsigned int warps = (gridDim.x * blockDim.x) >> 5;
    for (unsigned int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; g < segs; g += warps) {
        float2 v = reinterpret_cast<const float2 *>(x + (size_t)g * 64)[lane];
        float acc = warp_sum(v.x + v.y);
        if (lane == 0) {
            out[g] = acc;
        }
    }
}

extern "C" __global__ void segsum_idle_512x128__fix(const float *__restrict__ x, float *__restrict__ out,
                                                    unsigned int segs) {
    unsigned int lane = threadIdx.x & 31;
    unsigned int warps = (gridDim.x * blockDim.x) >> 5;
    for (unsigned int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; g < segs; g += warps) {
        float4 v = reinterpret_cast<const float4 *>(x + (size_t)g * 128)[lane];
        float acc = warp_sum((v.x + v.y) + (v.z + v.w));
        if (lane == 0) {
            out[g] = acc;
        }
    }
}
