// One thread per row: the sum of squares in fp32, sequentially, then every element scaled and
// rounded to bf16 once. The bf16 values arrive as their raw 16-bit patterns (unsigned short): a
// bf16 is the top half of a float, so a shift reads it, and one PTX cvt rounds a float back.
__device__ __forceinline__ float bf16_bits_to_float(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

__device__ __forceinline__ unsigned short float_to_bf16_bits(float f)
{
    unsigned short b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));  // round to nearest even, as __float2bfloat16
    return b;
}

extern "C" __global__ void rmsnorm_rows(const unsigned short* x, const unsigned short* w, unsigned short* y,
                                        int rows, int cols, float eps)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const unsigned short* row = x + (long long)r * cols;
        float ss = 0.0f;
        for (int c = 0; c < cols; ++c) {
            float v = bf16_bits_to_float(row[c]);
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(ss / cols + eps);
        for (int c = 0; c < cols; ++c) {
            float v = bf16_bits_to_float(row[c]) * inv * bf16_bits_to_float(w[c]);
            y[(long long)r * cols + c] = float_to_bf16_bits(v);
        }
    }
}
