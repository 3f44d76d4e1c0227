// median5x5 (held out): a square median filter on a width x height float image (edges
// clamped), with the radius an argument (at most MAX_R; the bench uses 2, a 5 x 5 window).
// Each thread gathers its window and keeps it sorted by insertion as values arrive; the
// median is the middle element.
#define MAX_R 3
#define MAX_WIN ((2 * MAX_R + 1) * (2 * MAX_R + 1))

extern "C" __global__ void median5x5(const float *__restrict__ img,
                                     float *__restrict__ out,
                                     int width,
                                     int height,
                                     int radius) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) {
        return;
    }
    int r = min(radius, MAX_R);
    float win[MAX_WIN];
    int n = 0;
    for (int dy = -r; dy <= r; ++dy) {
        int yy = min(max(y + dy, 0), height - 1);
        for (int dx = -r; dx <= r; ++dx) {
            int xx = min(max(x + dx, 0), width - 1);
            float v = img[(size_t)yy * width + xx];
            int j = n;
            while (j > 0 && win[j - 1] > v) {
                win[j] = win[j - 1];
                --j;
            }
            win[j] = v;
            ++n;
        }
    }
    out[(size_t)y * width + x] = win[n / 2];
}
