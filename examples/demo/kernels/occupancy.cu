// occupancy: a streaming kernel held back by occupancy.
//
// Each block of 128 threads stages tiles of the input through ~200 KB of dynamic shared
// memory and writes them out reversed within the tile. That much shared memory lets only one
// block (4 warps) live on an SM, against 64 warp slots, so too few loads are in flight to
// cover DRAM latency. Expect ncu to show theoretical occupancy of about 6 %, limited by
// shared memory, and DRAM throughput well below the copy kernel's.
extern "C" __global__ void occupancy_kernel(const float4 *__restrict__ src,
                                            float4 *__restrict__ dst,
                                            unsigned long n,
                                            unsigned int tile_elems) {
    extern __shared__ float4 tile[];
    for (unsigned long base = (unsigned long)blockIdx.x * tile_elems; base < n;
         base += (unsigned long)gridDim.x * tile_elems) {
        unsigned int count = (unsigned int)min((unsigned long)tile_elems, n - base);
        for (unsigned int j = threadIdx.x; j < count; j += blockDim.x) {
            tile[j] = src[base + j];
        }
        __syncthreads();
        for (unsigned int j = threadIdx.x; j < count; j += blockDim.x) {
            dst[base + j] = tile[count - 1 - j];
        }
        __syncthreads();
    }
}
