// rowsum_per_thread (held out): sums[r] = sum of row r of a row-major rows x cols float
// matrix, one thread per row, each thread walking along its row.
extern "C" __global__ void rowsum_per_thread(const float *__restrict__ m,
                                             float *__restrict__ sums,
                                             int rows,
                                             int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) {
        return;
    }
    const float *row = m + (size_t)r * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
        acc += row[c];
    }
    sums[r] = acc;
}
