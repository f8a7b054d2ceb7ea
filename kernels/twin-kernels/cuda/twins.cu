// The CUDA C++ twins of the Rust kernels in ../src: the same algorithms, written the way CUDA's
// samples and textbooks write them (int indices, raw pointers, __restrict__ where the samples
// use it). gpu-twins compiles this file to PTX with nvcc (-arch=compute_80) and launches both
// sides with the same shapes and inputs. Block shapes must match the Rust crate's constants.

#define BLOCK 256
#define TILE 32
#define ROWS 8
#define GEMM_TILE 16
#define FILTER 5
#define BINS 256
#define SORT_TILE 1024
#define SOFTENING2 0.01f

extern "C" {

__global__ void vector_add(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

__global__ void saxpy(float alpha, const float* x, const float* y, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = alpha * x[i] + y[i];
}

__device__ inline float cnd(float d) {
    const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f,
                A5 = 1.330274429f, RSQRT2PI = 0.39894228040143267793994605993438f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = RSQRT2PI * __expf(-0.5f * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0 ? 1.0f - c : c;
}

struct Market { float riskfree, volatility; };

__global__ void black_scholes(const float* price, const float* strike, const float* years,
                              Market market, float* call, float* put, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float s = price[i], x = strike[i], t = years[i];
        float sqrt_t = sqrtf(t);
        float d1 = (__logf(s / x) + (market.riskfree + 0.5f * market.volatility * market.volatility) * t)
                   / (market.volatility * sqrt_t);
        float d2 = d1 - market.volatility * sqrt_t;
        float cnd1 = cnd(d1), cnd2 = cnd(d2);
        float discounted = x * __expf(-market.riskfree * t);
        call[i] = s * cnd1 - discounted * cnd2;
        put[i] = discounted * (1.0f - cnd2) - s * (1.0f - cnd1);
    }
}

__global__ void rgb_to_gray_planar(const float* r, const float* g, const float* b, float* gray, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) gray[i] = 0.299f * r[i] + 0.587f * g[i] + 0.114f * b[i];
}

__global__ void rgb_to_gray_interleaved(const unsigned char* rgb, int width, int height, unsigned char* gray) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < width && row < height) {
        int pixel = row * width + col;
        unsigned char r = rgb[3 * pixel], g = rgb[3 * pixel + 1], b = rgb[3 * pixel + 2];
        gray[pixel] = (unsigned char)(0.21f * r + 0.71f * g + 0.07f * b);
    }
}

__global__ void convolution_2d(const float* image, const float* filter, int width, int height, float* out) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= width || row >= height) return;
    const int radius = FILTER / 2;
    float sum = 0.0f;
    for (int fy = 0; fy < FILTER; fy++) {
        for (int fx = 0; fx < FILTER; fx++) {
            int y = row + fy - radius, x = col + fx - radius;
            if (y >= 0 && y < height && x >= 0 && x < width)
                sum += filter[fy * FILTER + fx] * image[y * width + x];
        }
    }
    out[row * width + col] = sum;
}

__global__ void transpose_naive(const float* input, int width, int height, float* out) {
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) out[x * height + y + j] = input[(y + j) * width + x];
}

__global__ void transpose_tiled(const float* input, int width, int height, float* out) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = input[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void reduce_shared_tree(const float* input, float* block_sums, int n) {
    __shared__ float partial[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (2 * BLOCK) + tid;
    float sum = 0.0f;
    if (i < n) sum = input[i];
    if (i + BLOCK < n) sum += input[i + BLOCK];
    partial[tid] = sum;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) block_sums[blockIdx.x] = partial[0];
}

__global__ void block_sum_grid_stride(const float* input, float* block_sums, int n) {
    __shared__ float warp_sums[BLOCK / 32];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += input[i];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < BLOCK / 32 ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = sum;
}

__global__ void block_scan(const float* input, float* out, int n) {
    __shared__ float temp[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    temp[tid] = i < n ? input[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        float add = tid >= offset ? temp[tid - offset] : 0.0f;
        __syncthreads();
        temp[tid] += add;
        __syncthreads();
    }
    if (i < n) out[i] = temp[tid];
}

__global__ void histogram_256(const unsigned char* data, int n, unsigned int* bins) {
    __shared__ unsigned int counts[BINS];
    for (int b = threadIdx.x; b < BINS; b += BLOCK) counts[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&counts[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += BLOCK) {
        unsigned int c = counts[b];
        if (c > 0) atomicAdd(&bins[b], c);
    }
}

__global__ void heat_step_1d(const float* u, float alpha, float* out, int n) {
    __shared__ float tile[BLOCK + 2];
    int tid = threadIdx.x;
    int g = blockIdx.x * blockDim.x + tid;
    if (g < n) {
        tile[tid + 1] = u[g];
        if (tid == 0 && g > 0) tile[0] = u[g - 1];
        if ((tid == BLOCK - 1 || g == n - 1) && g + 1 < n) tile[tid + 2] = u[g + 1];
    }
    __syncthreads();
    if (g < n) {
        float c = tile[tid + 1];
        out[g] = (g == 0 || g == n - 1) ? c : c + alpha * (tile[tid] - 2.0f * c + tile[tid + 2]);
    }
}

__global__ void jacobi_step_2d(const float* u, int width, int height, float* out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int i = y * width + x;
    out[i] = (x == 0 || y == 0 || x == width - 1 || y == height - 1)
                 ? u[i]
                 : 0.25f * (u[i - 1] + u[i + 1] + u[i - width] + u[i + width]);
}

struct Dims { unsigned m, n, k; };

__global__ void sgemm_tiled(const float* a, const float* b, Dims dims, float* c) {
    __shared__ float tile_a[GEMM_TILE][GEMM_TILE];
    __shared__ float tile_b[GEMM_TILE][GEMM_TILE];
    int m = dims.m, n = dims.n, k = dims.k;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * GEMM_TILE + ty, col = blockIdx.x * GEMM_TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (k + GEMM_TILE - 1) / GEMM_TILE; t++) {
        int a_col = t * GEMM_TILE + tx, b_row = t * GEMM_TILE + ty;
        tile_a[ty][tx] = (row < m && a_col < k) ? a[row * k + a_col] : 0.0f;
        tile_b[ty][tx] = (b_row < k && col < n) ? b[b_row * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < GEMM_TILE; p++) acc += tile_a[ty][p] * tile_b[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}

__global__ void spmv_csr(const unsigned* row_start, const unsigned* columns, const float* values,
                         const float* x, float* y, int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (unsigned j = row_start[row]; j < row_start[row + 1]; j++) sum += values[j] * x[columns[j]];
        y[row] = sum;
    }
}

__global__ void nbody_accel(const float4* bodies, float4* accel, int n) {
    __shared__ float4 tile[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = i < n ? bodies[i] : make_float4(0, 0, 0, 0);
    float ax = 0, ay = 0, az = 0;
    for (int start = 0; start < n; start += BLOCK) {
        int j = start + threadIdx.x;
        tile[threadIdx.x] = j < n ? bodies[j] : make_float4(0, 0, 0, 0);
        __syncthreads();
        for (int k = 0; k < BLOCK; k++) {
            float4 other = tile[k];
            float dx = other.x - me.x, dy = other.y - me.y, dz = other.z - me.z;
            float dist2 = dx * dx + dy * dy + dz * dz + SOFTENING2;
            float inv = rsqrtf(dist2);
            float s = other.w * inv * inv * inv;
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        __syncthreads();
    }
    if (i < n) accel[i] = make_float4(ax, ay, az, 0.0f);
}

__global__ void bitonic_sort_shared(const unsigned* keys, unsigned* out) {
    __shared__ unsigned s[SORT_TILE];
    unsigned tid = threadIdx.x;
    unsigned base = blockIdx.x * SORT_TILE;
    const unsigned half = SORT_TILE / 2;
    s[tid] = keys[base + tid];
    s[tid + half] = keys[base + tid + half];
    for (unsigned size = 2; size <= SORT_TILE; size <<= 1) {
        bool descending = (tid & (size / 2)) != 0;
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned pos = 2 * tid - (tid & (stride - 1));
            unsigned a = s[pos], b = s[pos + stride];
            if ((a > b) != descending) { s[pos] = b; s[pos + stride] = a; }
        }
    }
    __syncthreads();
    out[base + tid] = s[tid];
    out[base + tid + half] = s[tid + half];
}

}  // extern "C"
