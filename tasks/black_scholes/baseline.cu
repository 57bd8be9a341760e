// One thread per option, straight from the formula, with the CUDA math library's normcdff.
extern "C" __global__ void black_scholes(const float* price, const float* strike, const float* years,
                                         float* call, float* put, float r, float sigma, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float s = price[i];
    float k = strike[i];
    float t = years[i];
    float vol = sigma * sqrtf(t);
    float d1 = (logf(s / k) + (r + 0.5f * sigma * sigma) * t) / vol;
    float d2 = d1 - vol;
    float discounted = k * expf(-r * t);
    call[i] = s * normcdff(d1) - discounted * normcdff(d2);
    put[i] = discounted * normcdff(-d2) - s * normcdff(-d1);
}
