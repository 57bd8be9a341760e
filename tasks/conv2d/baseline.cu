// One thread per output element (flat index over n, c_out, h, w); each thread loops over the
// input channels and the 3x3 window straight from global memory, skipping the zero padding.
extern "C" __global__ void conv2d(const float* x, const float* weight, float* y,
                                  int n, int c_in, int c_out, int h, int w)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int total = n * c_out * h * w;
    if (idx >= total) {
        return;
    }
    int c = idx % w;
    int r = (idx / w) % h;
    int co = (idx / (w * h)) % c_out;
    int b = idx / (w * h * c_out);
    float acc = 0.0f;
    for (int ci = 0; ci < c_in; ++ci) {
        for (int dr = 0; dr < 3; ++dr) {
            int rr = r + dr - 1;
            if (rr < 0 || rr >= h) {
                continue;
            }
            for (int dc = 0; dc < 3; ++dc) {
                int cc = c + dc - 1;
                if (cc < 0 || cc >= w) {
                    continue;
                }
                acc += x[((b * c_in + ci) * h + rr) * w + cc] * weight[((co * c_in + ci) * 3 + dr) * 3 + dc];
            }
        }
    }
    y[idx] = acc;
}
