// 64-bit index math: a slice of a tensor with more than 2^32 elements, addressed by its
// global linear index g = base + i (base = 2^34). Each element's coordinates come from
// 64-bit division and modulo by runtime extents, a call to the 64-bit division routine
// (tens of integer instructions) per division, for a few bytes of memory traffic.
//   index64_div2d: (row, col) = (g / width, g % width): one division routine per element;
//     out[i] = in[i] * row_scale[row - row0] + col_bias[col].
//   index64_div3d: (z, y, x) from g / nx and its quotient / ny: two per element;
//     out[i] = in[i] * wz[z - z0] + wy[y] + wx[x].
// 32 M elements each (256 MiB moved).
//
// The fix (`__fix`): hoist the index math. A thread divides once, for its first element;
// a grid-stride step then adds the stride's own quotient and remainder with one carry.
extern "C" __global__ void index64_div2d(const float *__restrict__ in, const float *__restrict__ row_scale,
                                         const float *__restrict__ col_bias, float *__restrict__ out,
                                         unsigned long n, unsigned long base, unsigned long width) {
    unsigned long row0 = base / width;
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long g = base + i;
        unsigned long row = g / width, col = g % width;
        out[i] = in[i] * row_scale[row - row0] + col_bias[col];
    }
}

extern "C" __global__ void index64_div3d(const float *__restrict__ in, const float *__restrict__ wz,
                                         const float *__restrict__ wy, const float *__restrict__ wx,
                                         float *__restrict__ out, unsigned long n, unsigned long base,
                                         unsigned long nx, unsigned long ny) {
    unsigned long z0 = base / (nx * ny);
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long g = base + i;
        unsigned long q = g / nx;
        unsigned long x = g - q * nx;
        unsigned long z = q / ny;
        unsigned long y = q - z * ny;
        out[i] = in[i] * wz[z - z0] + wy[y] + wx[x];
    }
}

extern "C" __global__ void index64_div2d__fix(const float *__restrict__ in, const float *__restrict__ row_scale,
                                              const float *__restrict__ col_bias, float *__restrict__ out,
                                              unsigned long n, unsigned long base, unsigned long width) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    // Rows relative to row0, columns as they are: one division for the first element and
    // one for the stride, then carries.
    unsigned long row0 = base / width, col0 = base - row0 * width;
    unsigned int step_rows = (unsigned int)(stride / width), step_cols = (unsigned int)(stride % width);
    unsigned long first = col0 + i;
    unsigned int row = (unsigned int)(first / width), col = (unsigned int)(first % width);
    unsigned int w = (unsigned int)width;
    for (; i < n; i += stride) {
        out[i] = in[i] * row_scale[row] + col_bias[col];
        row += step_rows;
        col += step_cols;
        if (col >= w) {
            col -= w;
            row += 1;
        }
    }
}

extern "C" __global__ void index64_div3d__fix(const float *__restrict__ in, const float *__restrict__ wz,
                                              const float *__restrict__ wy, const float *__restrict__ wx,
                                              float *__restrict__ out, unsigned long n, unsigned long base,
                                              unsigned long nx, unsigned long ny) {
    unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
    unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long plane = nx * ny, z0 = base / plane;
    // Coordinates of the first element, relative to z0, and of the stride.
    unsigned long first = base - z0 * plane + i;
    unsigned int z = (unsigned int)(first / plane);
    unsigned int rem = (unsigned int)(first - (unsigned long)z * plane);
    unsigned int y = rem / (unsigned int)nx, x = rem % (unsigned int)nx;
    unsigned int sz = (unsigned int)(stride / plane);
    unsigned int srem = (unsigned int)(stride % plane);
    unsigned int sy = srem / (unsigned int)nx, sx = srem % (unsigned int)nx;
    unsigned int X = (unsigned int)nx, Y = (unsigned int)ny;
    for (; i < n; i += stride) {
        out[i] = in[i] * wz[z] + wy[y] + wx[x];
        x += sx;
        y += sy;
        z += sz;
        if (x >= X) {
            x -= X;
            y += 1;
        }
        if (y >= Y) {
            y -= Y;
            z += 1;
        }
    }
}
