// Three launches through a scratch matrix of scores (bh x sq x sk):
// scores: one thread per (head, query, key), the scaled dot product of a q row and a k row;
// softmax_rows: one thread per (head, query), softmax over its sk scores in place;
// weighted_sum: one thread per output element, the probability-weighted sum of a v column.
extern "C" __global__ void scores(const float* q, const float* k, float* s, int sq, int sk, int d)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z;
    if (i < sq && j < sk) {
        const float* qi = q + ((size_t)b * sq + i) * d;
        const float* kj = k + ((size_t)b * sk + j) * d;
        float acc = 0.0f;
        for (int c = 0; c < d; ++c) {
            acc += qi[c] * kj[c];
        }
        s[((size_t)b * sq + i) * sk + j] = acc / sqrtf((float)d);
    }
}

extern "C" __global__ void softmax_rows(float* s, int rows, int sk)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    float* sr = s + (size_t)row * sk;
    float m = sr[0];
    for (int j = 1; j < sk; ++j) {
        m = fmaxf(m, sr[j]);
    }
    float sum = 0.0f;
    for (int j = 0; j < sk; ++j) {
        float e = expf(sr[j] - m);
        sr[j] = e;
        sum += e;
    }
    for (int j = 0; j < sk; ++j) {
        sr[j] /= sum;
    }
}

extern "C" __global__ void weighted_sum(const float* s, const float* v, float* o, int sq, int sk, int d)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z;
    if (i < sq && c < d) {
        const float* p = s + ((size_t)b * sq + i) * sk;
        const float* vb = v + (size_t)b * sk * d;
        float acc = 0.0f;
        for (int j = 0; j < sk; ++j) {
            acc += p[j] * vb[(size_t)j * d + c];
        }
        o[((size_t)b * sq + i) * d + c] = acc;
    }
}
