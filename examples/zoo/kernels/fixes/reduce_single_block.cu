// Fixes of reduce_single_block (same total, in a different summation order).
//   __fix1 (first cause, one block on one SM of 132): a grid of blocks. Each block sums a
//          strided share and writes its partial sum; the last block to finish (a counter,
//          reset by that block for the next launch) adds the partials in block order.
//   __fix2 (second cause, one 4-byte load in flight per thread): still one block, but
//          float4 loads, four independent float4s in flight per thread (needs n % 4 == 0
//          or the scalar tail below, and a 16-byte aligned input).
__device__ __forceinline__ float block_sum(float acc, float *warp_sums) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    }
    if ((threadIdx.x & 31) == 0) {
        warp_sums[threadIdx.x / 32] = acc;
    }
    __syncthreads();
    acc = 0.0f;
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            acc += __shfl_xor_sync(0xffffffffu, acc, off);
        }
    }
    return acc;  // the block's sum, in thread 0
}

extern "C" __global__ void reduce_single_block__fix1(const float *__restrict__ partials,
                                                     float *__restrict__ total,
                                                     unsigned int n,
                                                     float *__restrict__ block_sums,
                                                     unsigned int *__restrict__ done) {
    __shared__ float warp_sums[32];
    __shared__ bool last;
    float acc = 0.0f;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        acc += partials[i];
    }
    acc = block_sum(acc, warp_sums);
    if (threadIdx.x == 0) {
        block_sums[blockIdx.x] = acc;
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        __threadfence();
        float s = 0.0f;
        for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
            s += ((volatile float *)block_sums)[b];
        }
        __syncthreads();
        s = block_sum(s, warp_sums);
        if (threadIdx.x == 0) {
            *total = s;
            *done = 0;
        }
    }
}

extern "C" __global__ void reduce_single_block__fix2(const float *__restrict__ partials,
                                                     float *__restrict__ total,
                                                     unsigned int n) {
    __shared__ float warp_sums[32];
    const float4 *p4 = reinterpret_cast<const float4 *>(partials);
    unsigned int n4 = n / 4, step = blockDim.x;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    unsigned int i = threadIdx.x;
    for (; i + 3 * step < n4; i += 4 * step) {
        float4 v0 = p4[i], v1 = p4[i + step], v2 = p4[i + 2 * step], v3 = p4[i + 3 * step];
        a0 += (v0.x + v0.y) + (v0.z + v0.w);
        a1 += (v1.x + v1.y) + (v1.z + v1.w);
        a2 += (v2.x + v2.y) + (v2.z + v2.w);
        a3 += (v3.x + v3.y) + (v3.z + v3.w);
    }
    for (; i < n4; i += step) {
        float4 v = p4[i];
        a0 += (v.x + v.y) + (v.z + v.w);
    }
    for (unsigned int j = 4 * n4 + threadIdx.x; j < n; j += step) {
        a1 += partials[j];
    }
    float acc = block_sum((a0 + a1) + (a2 + a3), warp_sums);
    if (threadIdx.x == 0) {
        *total = acc;
    }
}
