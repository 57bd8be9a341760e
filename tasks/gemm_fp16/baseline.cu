// One thread per element of C on a 2D grid (x: columns, y: rows); each thread walks K straight
// from global memory, converting each half to float and accumulating in fp32 on the ordinary
// (non-tensor) pipes. The fp16 values arrive as their raw 16-bit patterns (unsigned short); the
// PTX cvt instruction turns them into floats without needing <cuda_fp16.h>.
__device__ __forceinline__ float half_to_float(unsigned short h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

extern "C" __global__ void gemm_fp16(const unsigned short* A, const unsigned short* B, float* C,
                                     int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += half_to_float(A[row * K + k]) * half_to_float(B[k * N + col]);
        }
        C[row * N + col] = acc;
    }
}
