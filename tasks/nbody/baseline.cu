// One thread per body; each thread loops over all n bodies straight from global memory.
extern "C" __global__ void nbody_acc(const float* pos, float* acc, int n, float eps2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float xi = pos[4 * i + 0];
    float yi = pos[4 * i + 1];
    float zi = pos[4 * i + 2];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int j = 0; j < n; ++j) {
        float dx = pos[4 * j + 0] - xi;
        float dy = pos[4 * j + 1] - yi;
        float dz = pos[4 * j + 2] - zi;
        float r2 = dx * dx + dy * dy + dz * dz + eps2;
        float inv = rsqrtf(r2);
        float s = pos[4 * j + 3] * inv * inv * inv;
        ax += dx * s;
        ay += dy * s;
        az += dz * s;
    }
    acc[3 * i + 0] = ax;
    acc[3 * i + 1] = ay;
    acc[3 * i + 2] = az;
}
