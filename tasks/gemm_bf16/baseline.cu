// One thread per element of C on a 2D grid (x: columns, y: rows); each thread walks K straight
// from global memory, reading each bf16 as a float and accumulating in fp32 on the ordinary
// (non-tensor) pipes, then rounds once to bf16. The bf16 inputs arrive as their raw 16-bit patterns
// (unsigned short): a bf16 is the top half of a float, so a shift reads it, and one PTX
// cvt rounds the result back.
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

extern "C" __global__ void gemm_bf16(const unsigned short* A, const unsigned short* B, unsigned short* C,
                                     int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += bf16_bits_to_float(A[row * K + k]) * bf16_bits_to_float(B[k * N + col]);
        }
        C[row * N + col] = float_to_bf16_bits(acc);
    }
}
