// One thread per element: reads along a row of the input (coalesced), writes down a column of
// the output (strided by rows).
extern "C" __global__ void matrix_transpose(const float* input, float* output, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        output[c * rows + r] = input[r * cols + c];
    }
}
