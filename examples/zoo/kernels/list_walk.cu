// list_walk: three warp-cooperative linked-list walks whose speed is set by how many warps
// an SM can hold, each held back by a different occupancy limiter.
//
// The list: `nodes` holds 128-byte nodes of 32 words; word 0 of a node is the index of the
// next node (one random cycle over all nodes, so no short loop stays in cache), words 1-31
// are payload. A warp walks the list: lane l loads word l of the current node (one
// coalesced 128-byte request), lane 0's word is the next index, broadcast with a shuffle.
// Every step waits for the previous one (a DRAM round trip), so a warp spends nearly all
// its time waiting and the memory system is far from busy: the time is
// (warps / resident warps) x steps x latency, and resident warps are the lever.
//
// list_walk_regtile      -- limiter: occupancy-registers. Each thread also accumulates a
//   112-float register tile (like a register-blocked GEMM epilogue would keep), which needs
//   ~128 registers per thread: 2 blocks of 256 threads per SM, 16 of 64 warps (25 %).
// list_walk_smem         -- limiter: occupancy-shared-memory. Each warp keeps the payload of
//   the nodes it visited in a shared-memory history ring; the block asks for ~110 KiB, so
//   2 blocks of 128 threads per SM, 8 of 64 warps (12.5 %).
// list_walk_warp_blocks  -- limiter: occupancy-block-size. Blocks of one warp (32 threads):
//   the limit of 32 resident blocks per SM caps it at 32 of 64 warps (50 %).

// One step of a warp's walk: loads the current node's word `lane`, moves `at` to the next
// node, returns this lane's payload as a float in [0, 1).
__device__ __forceinline__ float walk_step(const unsigned int *__restrict__ nodes,
                                           unsigned int &at,
                                           unsigned int lane) {
    unsigned int v = nodes[(size_t)at * 32 + lane];
    at = __shfl_sync(0xffffffffu, v, 0);
    return (float)(v & 0xffffu) * (1.0f / 65536.0f);
}

// A warp's starting node: spread over the list by a multiplicative hash of the warp index.
__device__ __forceinline__ unsigned int walk_start(unsigned int warp, unsigned int num_nodes) {
    return (unsigned int)(((unsigned long long)warp * 2654435761ull) % num_nodes);
}

#define TILE_ROWS 8
#define TILE_COLS 14  // 8 x 14 = 112 accumulators per thread

extern "C" __global__ void __launch_bounds__(256, 2)
    list_walk_regtile(const unsigned int *__restrict__ nodes,
                      float *__restrict__ out,
                      unsigned int num_nodes,
                      int steps) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x & 31;
    unsigned int at = walk_start(tid / 32, num_nodes);
    float acc[TILE_ROWS][TILE_COLS];
#pragma unroll
    for (int r = 0; r < TILE_ROWS; ++r) {
#pragma unroll
        for (int c = 0; c < TILE_COLS; ++c) {
            acc[r][c] = 0.0f;
        }
    }
    // steps is a multiple of TILE_ROWS: each step of the walk feeds one row of the tile.
    for (int s = 0; s < steps; s += TILE_ROWS) {
#pragma unroll
        for (int r = 0; r < TILE_ROWS; ++r) {
            float f = walk_step(nodes, at, lane);
#pragma unroll
            for (int c = 0; c < TILE_COLS; ++c) {
                acc[r][c] = fmaf(f, 1.0f + 0.125f * c, acc[r][c]);
            }
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < TILE_ROWS; ++r) {
#pragma unroll
        for (int c = 0; c < TILE_COLS; ++c) {
            sum += acc[r][c] * (float)(1 + ((r * TILE_COLS + c) & 3));
        }
    }
    out[tid] = sum;
}

// Dynamic shared memory: ring_rows x 32 floats per warp.
extern "C" __global__ void list_walk_smem(const unsigned int *__restrict__ nodes,
                                          float *__restrict__ out,
                                          unsigned int num_nodes,
                                          int steps,
                                          int ring_rows) {
    extern __shared__ float ring[];
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x & 31;
    float *mine = ring + (size_t)(threadIdx.x / 32) * ring_rows * 32;
    for (int r = 0; r < ring_rows; ++r) {
        mine[r * 32 + lane] = 0.0f;
    }
    unsigned int at = walk_start(tid / 32, num_nodes);
    int row = 0;
    for (int s = 0; s < steps; ++s) {
        float f = walk_step(nodes, at, lane);
        mine[row * 32 + lane] += f;
        row = (row + 1 == ring_rows) ? 0 : row + 1;
    }
    __syncwarp();
    float sum = 0.0f;
    for (int r = 0; r < ring_rows; ++r) {
        sum += mine[r * 32 + lane] * (float)(1 + (r & 3));
    }
    out[tid] = sum;
}

extern "C" __global__ void list_walk_warp_blocks(const unsigned int *__restrict__ nodes,
                                                 float *__restrict__ out,
                                                 unsigned int num_nodes,
                                                 int steps) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x & 31;
    unsigned int at = walk_start(tid / 32, num_nodes);
    float sum = 0.0f;
    for (int s = 0; s < steps; ++s) {
        sum = fmaf(walk_step(nodes, at, lane), 1.0f + 0.125f * (s & 7), sum);
    }
    out[tid] = sum;
}
