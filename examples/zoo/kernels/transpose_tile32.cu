// transpose_tile32 (held out): out = in^T for a row-major width x height float matrix,
// through a 32 x 32 shared-memory tile, with 32 x 8 thread blocks (each thread moves 4
// elements). Global loads and stores are both coalesced; the tile is declared without the
// usual +1 padding.
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_tile32(const float *__restrict__ in,
                                            float *__restrict__ out,
                                            int width,
                                            int height) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < width && y + j < height) {
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * width + x];
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < height && y + j < width) {
            out[(size_t)(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}
