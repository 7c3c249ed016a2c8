// Kernels: every SIMD set bitwise against the scalar reference, the scalar reference against a
// double-precision dot of dequantized weights, and dequantization against hand-made blocks.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "hmllm/cpu_features.h"
#include "hmllm/gguf_reader.h"
#include "hmllm/kernels.h"
#include "hmllm/quant_blocks.h"
#include "test_main.h"

using namespace hmllm;

namespace {

constexpr uint32_t T(GgmlType t) { return static_cast<uint32_t>(t); }

const uint32_t kAllTypes[] = {T(GgmlType::F32),  T(GgmlType::F16),  T(GgmlType::Q4_0),
                              T(GgmlType::Q5_0), T(GgmlType::Q8_0), T(GgmlType::Q4_K),
                              T(GgmlType::Q6_K), T(GgmlType::HM_Q4_G32),
                              T(GgmlType::HM_Q4_G64), T(GgmlType::HM_Q4_G128),
                              T(GgmlType::Q5_K), T(GgmlType::Q3_K), T(GgmlType::Q2_K),
                              T(GgmlType::IQ4_XS), T(GgmlType::IQ4_NL), T(GgmlType::BF16),

                              T(GgmlType::Q4_1), T(GgmlType::Q5_1)};

void put_f16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    p[0] = static_cast<uint8_t>(h);
    p[1] = static_cast<uint8_t>(h >> 8);
}

// The HM_Q4 packer, the same algorithm as hmbuild/int4_format.py: per row and group
// d = fp16(amax / 7), q = clamp(round(x / d) + 8, 0, 15). Fills `ref` with (q - 8) * d.
std::vector<uint8_t> pack_hm_q4(const std::vector<float>& w, int64_t rows, int64_t cols, int g,
                                std::vector<float>* ref) {
    const int64_t groups = cols / g, tgb = hm_tile_group_bytes(g);
    std::vector<uint8_t> out(static_cast<size_t>(rows / 4 * groups * tgb), 0);
    ref->assign(static_cast<size_t>(rows * cols), 0.0f);
    for (int64_t row = 0; row < rows; ++row) {
        for (int64_t k = 0; k < groups; ++k) {
            const float* x = &w[row * cols + k * g];
            float amax = 0.0f;
            for (int c = 0; c < g; ++c) amax = std::fmax(amax, std::fabs(x[c]));
            const uint16_t d16 = fp32_to_fp16(amax / 7.0f);
            const float d = fp16_to_fp32(d16);
            const float id = d > 0.0f ? 1.0f / d : 0.0f;
            uint8_t* tg = &out[(row / 4 * groups + k) * tgb];
            tg[2 * (row % 4)] = static_cast<uint8_t>(d16);
            tg[2 * (row % 4) + 1] = static_cast<uint8_t>(d16 >> 8);
            for (int c = 0; c < g; ++c) {
                const float qf = std::fmin(15.0f, std::fmax(0.0f, std::nearbyint(x[c] * id) + 8.0f));
                const int q = static_cast<int>(qf);
                int byte, shift;
                hm_nibble_pos(static_cast<int>(row % 4), c, &byte, &shift);
                tg[byte] |= static_cast<uint8_t>(q << shift);
                (*ref)[row * cols + k * g + c] = (q - 8) * d;
            }
        }
    }
    return out;
}

// Random numbers straight from mt19937's bits (specified by the standard, unlike the
// distributions, and with no libm involved), so every platform builds the same cases.
float unit(std::mt19937* rng) {  // uniform in [-1, 1), exactly k / 2^23
    return static_cast<float>(static_cast<int32_t>((*rng)() >> 8) - (1 << 23)) / 8388608.0f;
}
uint8_t byte(std::mt19937* rng) { return static_cast<uint8_t>((*rng)() >> 24); }

// Activation-like values: uniform in [-4, 4) with an 8x outlier every 37 elements.
std::vector<float> random_activations(size_t n, std::mt19937* rng) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 4.0f * unit(rng) * (i % 37 == 5 ? 8.0f : 1.0f);
    return x;
}

// Random but well-formed weights: random quant bits, finite fp16 scales of realistic size.
std::vector<uint8_t> random_weights(uint32_t type, int64_t rows, int64_t cols, std::mt19937* rng) {
    const size_t rb = row_bytes(type, cols);
    std::vector<uint8_t> w(rb * rows);
    for (auto& b : w) b = byte(rng);
    // mag * (0.2 .. 1.0), written without an a*b+c a compiler could contract into an fma.
    const auto scale = [&](uint8_t* p, float mag) {
        put_f16(p, mag * static_cast<float>(205 + (*rng)() % 820) / 1024.0f);
    };
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
            for (size_t i = 0; i < w.size() / 4; ++i) {
                const float v = unit(rng);
                std::memcpy(&w[4 * i], &v, 4);
            }
            break;
        case GgmlType::F16:
            for (size_t i = 0; i < w.size() / 2; ++i) put_f16(&w[2 * i], unit(rng));
            break;
        case GgmlType::BF16:  // the top half of a float in [-1, 1)
            for (size_t i = 0; i < w.size() / 2; ++i) {
                const float v = unit(rng);
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                w[2 * i] = static_cast<uint8_t>(bits >> 16);
                w[2 * i + 1] = static_cast<uint8_t>(bits >> 24);
            }
            break;
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL: {
            const size_t bs = type_info(type)->type_size;
            for (size_t i = 0; i < w.size(); i += bs) scale(&w[i], 0.01f);
            break;
        }
        case GgmlType::Q4_1:
        case GgmlType::Q5_1: {  // d, then the offset m (about -8 d / -16 d, as a quantizer writes)
            const size_t bs = type_info(type)->type_size;
            for (size_t i = 0; i < w.size(); i += bs) {
                scale(&w[i], 0.01f);
                scale(&w[i + 2], type == T(GgmlType::Q4_1) ? -0.08f : -0.16f);
            }
            break;
        }
        case GgmlType::Q4_K:
            for (size_t i = 0; i < w.size(); i += 144) {
                scale(&w[i], 0.002f);
                scale(&w[i + 2], 0.002f);
            }
            break;
        case GgmlType::Q6_K:
            for (size_t i = 0; i < w.size(); i += 210) scale(&w[i + 208], 0.001f);
            break;
        case GgmlType::Q5_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ5_K)) {
                scale(&w[i], 0.001f);
                scale(&w[i + 2], 0.002f);
            }
            break;
        case GgmlType::Q3_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ3_K)) scale(&w[i + offsetof(BlockQ3_K, d)], 0.002f);
            break;
        case GgmlType::Q2_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ2_K)) {
                scale(&w[i + offsetof(BlockQ2_K, d)], 0.01f);
                scale(&w[i + offsetof(BlockQ2_K, dmin)], 0.005f);
            }
            break;
        case GgmlType::IQ4_XS:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockIQ4_XS)) scale(&w[i], 0.0005f);
            break;
        case GgmlType::HM_Q4_G32:
        case GgmlType::HM_Q4_G64:
        case GgmlType::HM_Q4_G128: {
            const size_t tgb = hm_tile_group_bytes(hm_group(type));
            for (size_t i = 0; i < w.size(); i += tgb)
                for (int r = 0; r < 4; ++r) scale(&w[i + 2 * r], 0.01f);
            break;
        }
        default: break;
    }
    return w;
}

struct Case {
    uint32_t type;
    int64_t rows, cols, batch;
    std::vector<uint8_t> w;
    std::vector<float> x;
    std::vector<std::vector<float>> deq;  // dequantized rows
    std::vector<double> bound;            // ||w_r|| * ||x_b||, [b * rows + r]
};

Case make_case(uint32_t type, int64_t rows, int64_t cols, int64_t batch, uint32_t seed) {
    std::mt19937 rng(seed);
    Case c{type, rows, cols, batch, random_weights(type, rows, cols, &rng), {}, {}, {}};
    c.x = random_activations(static_cast<size_t>(cols * batch), &rng);
    MatView mv{type, c.w.data(), cols, rows};
    c.deq.assign(rows, std::vector<float>(cols));
    for (int64_t r = 0; r < rows; ++r) dequantize_row(mv, r, c.deq[r].data());
    for (int64_t b = 0; b < batch; ++b) {
        double xx = 0;
        for (int64_t i = 0; i < cols; ++i) xx += double(c.x[b * cols + i]) * c.x[b * cols + i];
        for (int64_t r = 0; r < rows; ++r) {
            double ww = 0;
            for (float v : c.deq[r]) ww += double(v) * v;
            c.bound.push_back(std::sqrt(ww * xx));
        }
    }
    return c;
}

// Runs the active kernel set over all rows, as a sequence of row ranges with the given
// boundaries (as threads would split them); y_stride is larger than n_rows on purpose.
std::vector<float> run(const Case& c, const std::vector<int64_t>& bounds) {
    MatView mv{c.type, c.w.data(), c.cols, c.rows};
    Activations act;
    act.quantize(c.type, c.x.data(), c.cols, c.batch);
    const int64_t stride = c.rows + 3;
    std::vector<float> y(static_cast<size_t>(stride * c.batch), NAN);
    for (size_t i = 0; i + 1 < bounds.size(); ++i) matmul(mv, act, y.data(), stride, bounds[i], bounds[i + 1]);
    std::vector<float> out;
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t r = 0; r < c.rows; ++r) out.push_back(y[b * stride + r]);
    for (int64_t b = 0; b < c.batch; ++b)  // the padding past n_rows is never written
        for (int64_t r = c.rows; r < stride; ++r) CHECK(std::isnan(y[b * stride + r]));
    return out;
}

bool valid_cols(uint32_t type, int64_t cols) { return row_bytes(type, cols) != 0; }

double g_worst_ref = 0;
int64_t g_bitwise_cases = 0;
uint64_t g_digest = 1469598103934665603ull;  // of every scalar output, to compare across hosts

void digest(const std::vector<float>& v, uint64_t* h = &g_digest) {  // FNV-1a
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(float); ++i) *h = (*h ^ p[i]) * 1099511628211ull;
}

bool interleavable(uint32_t type) { return type == T(GgmlType::Q8_0) || type == T(GgmlType::Q5_0); }

// The first rows of c (a multiple of 4) interleaved as the loader does when a set prefers it: every
// row dequantizes to the file layout's values and every set's products are bitwise the scalar
// reference's on the file layout (ref), for splits into 4-row granules.
void check_interleaved(const Case& c, const std::vector<float>& ref) {
    const int64_t rows = c.rows / 4 * 4;
    std::vector<uint8_t> xw(row_bytes(c.type, c.cols) * size_t(rows));
    interleave_rows(c.type, c.w.data(), c.cols, 0, rows, xw.data());
    CHECK(std::memcmp(xw.data(), c.w.data(), xw.size()) != 0);  // the layout did move bytes
    MatView mv{c.type, xw.data(), c.cols, rows};
    mv.interleaved = true;
    std::vector<float> row(c.cols);
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(mv, r, row.data());
        CHECK(std::memcmp(row.data(), c.deq[r].data(), row.size() * sizeof(float)) == 0);
    }
    Activations act;
    act.quantize(c.type, c.x.data(), c.cols, c.batch);
    for (const char* set : available_kernels()) {
        CHECK(select_kernels(set));
        for (int64_t step : {rows, int64_t(4), int64_t(8)}) {
            std::vector<float> y(size_t(rows * c.batch), NAN);
            for (int64_t r0 = 0; r0 < rows; r0 += step) matmul(mv, act, y.data(), rows, r0, std::min(rows, r0 + step));
            bool same = true;
            for (int64_t b = 0; b < c.batch; ++b)
                for (int64_t r = 0; r < rows; ++r)
                    same = same && std::memcmp(&y[b * rows + r], &ref[b * c.rows + r], sizeof(float)) == 0;
            if (!same) std::printf("  %s interleaved type %u cols %lld batch %lld step %lld differs from scalar\n", set,
                                   c.type, (long long)c.cols, (long long)c.batch, (long long)step);
            CHECK(same);
            ++g_bitwise_cases;
        }
    }
}

// Every SIMD set gives bitwise the scalar reference's outputs (kernel_table.h's canonical
// order), for every shape, batch size and split into row ranges; and the scalar reference is
// close to a double-precision dot of the dequantized weights.
void compare_all_sets(uint32_t type) {
    std::vector<int64_t> cols_list = {256, 640, 1024, 2048, 2560};
    const int64_t batches[] = {1, 2, 3, 4, 7, 17};
    const bool is_float = type == T(GgmlType::F32) || type == T(GgmlType::F16) || type == T(GgmlType::BF16);
    if (is_float) cols_list.insert(cols_list.end(), {1, 37, 100});  // a tail past the 16 lanes
    const int64_t g = row_granularity(type);
    // HM_Q4 kernels take 4 chunks of 32 columns per step: 1-3 chunks left over (and no full step).
    if (g == 4) cols_list.insert(cols_list.end(), {32, 64, 96, 160, 192, 224, 320, 384, 448});
    const int64_t rows = g == 1 ? 19 : 20;  // 19: 4-row kernels get a leftover row
    std::vector<std::vector<int64_t>> splits = {{0, rows}, {0, g, 4 * g, rows}, {}};
    for (int64_t r = 0; r <= rows; r += g) splits[2].push_back(r);  // one granule at a time
    uint32_t seed = type * 1000;
    for (int64_t cols : cols_list) {
        if (!valid_cols(type, cols)) continue;
        for (int64_t batch : batches) {
            const Case c = make_case(type, rows, cols, batch, ++seed);
            CHECK(select_kernels("scalar"));
            const std::vector<float> ref = run(c, splits[0]);
            digest(ref);
            // Scalar reference against double-precision dequantized weights x float activations:
            // the only loss is the 8-bit activation quantization (none for F32/F16).
            const double ref_tol = is_float ? 1e-5 : 2e-2;
            for (int64_t b = 0; b < batch; ++b) {
                for (int64_t r = 0; r < rows; ++r) {
                    double exact = 0;
                    for (int64_t i = 0; i < cols; ++i) exact += double(c.deq[r][i]) * c.x[b * cols + i];
                    const double err = std::fabs(ref[b * rows + r] - exact) / c.bound[b * rows + r];
                    g_worst_ref = std::fmax(g_worst_ref, err);
                    if (!(err <= ref_tol)) {
                        std::printf("  type %u cols %lld batch %lld row %lld: scalar %g exact %g\n",
                                    type, (long long)cols, (long long)batch, (long long)r,
                                    ref[b * rows + r], exact);
                    }
                    CHECK(err <= ref_tol);
                }
            }
            for (const char* set : available_kernels()) {
                CHECK(select_kernels(set));
                for (const auto& bounds : splits) {
                    const std::vector<float> y = run(c, bounds);
                    const bool same = std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)) == 0;
                    if (!same) {
                        size_t i = 0;
                        while (std::memcmp(&y[i], &ref[i], sizeof(float)) == 0) ++i;
                        std::printf("  %s type %u cols %lld batch %lld ranges %zu: out %zu (row %lld) "
                                    "%.9g vs scalar %.9g\n", set, type, (long long)cols,
                                    (long long)batch, bounds.size() - 1, i, (long long)(i % rows),
                                    y[i], ref[i]);
                    }
                    CHECK(same);
                    ++g_bitwise_cases;
                }
            }
            if (interleavable(type)) check_interleaved(c, ref);
        }
    }
    CHECK(select_kernels("auto"));
}

}  // namespace

TEST_CASE(fp16_conversions) {
    CHECK_EQ(fp16_to_fp32(0x3c00), 1.0f);
    CHECK_EQ(fp16_to_fp32(0xc000), -2.0f);
    CHECK_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
    CHECK_EQ(fp16_to_fp32(0x7bff), 65504.0f);
    CHECK(std::isinf(fp16_to_fp32(0x7c00)));
    CHECK_EQ(fp32_to_fp16(1.0f), 0x3c00);
    CHECK_EQ(fp32_to_fp16(-2.0f), 0xc000);
    CHECK_EQ(fp32_to_fp16(65504.0f), 0x7bff);
    CHECK_EQ(fp32_to_fp16(1e6f), 0x7c00);
    CHECK_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
    CHECK_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie rounds to even
    for (uint32_t h = 0; h < 0x7c00; ++h) CHECK_EQ(fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h))), h);
}

TEST_CASE(layout_sizes) {
    CHECK_EQ(row_bytes(T(GgmlType::Q4_K), 512), size_t(288));
    CHECK_EQ(row_bytes(T(GgmlType::Q6_K), 256), size_t(210));
    CHECK_EQ(row_bytes(T(GgmlType::Q4_K), 640), size_t(0));
    CHECK_EQ(row_bytes(T(GgmlType::HM_Q4_G32), 128), size_t(72));
    CHECK_EQ(row_bytes(T(GgmlType::HM_Q4_G32), 48), size_t(0));
    CHECK_EQ(row_bytes(T(GgmlType::HM_Q4_G64), 128), size_t(68));
    CHECK_EQ(row_bytes(T(GgmlType::HM_Q4_G128), 128), size_t(66));
    // The per-row size agrees with gguf_reader's type table for the HM types too.
    CHECK_EQ(type_info(GgmlType::HM_Q4_G32)->block_size, 32u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G32)->type_size, 18u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G64)->type_size, 34u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G128)->type_size, 66u);
    CHECK_EQ(std::string(type_info(GgmlType::HM_Q4_G32)->name), std::string("hm_q4_g32"));
    CHECK_EQ(row_granularity(T(GgmlType::HM_Q4_G32)), 4);
    CHECK_EQ(row_granularity(T(GgmlType::HM_Q4_G64)), 4);
    CHECK_EQ(row_granularity(T(GgmlType::Q8_0)), 1);
    for (uint32_t t : kAllTypes) CHECK(kernel_supported(t));
    CHECK(!kernel_supported(T(GgmlType::Q8_K)));  // an activation format, never a weight
}

TEST_CASE(dequantize_q4_0_block) {
    uint8_t b[18];
    put_f16(b, 0.5f);
    for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>((j & 0xF) | ((15 - j) << 4));
    float y[32];
    dequantize_row(MatView{T(GgmlType::Q4_0), b, 32, 1}, 0, y);
    for (int j = 0; j < 16; ++j) {
        CHECK_EQ(y[j], (j - 8) * 0.5f);
        CHECK_EQ(y[j + 16], (7 - j) * 0.5f);
    }
}

TEST_CASE(dequantize_q5_0_block) {
    uint8_t b[22];
    put_f16(b, 0.25f);
    const uint32_t qh = 0x80000001u;  // fifth bit set for elements 0 and 31
    std::memcpy(b + 2, &qh, 4);
    for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>(3 | (9 << 4));
    float y[32];
    dequantize_row(MatView{T(GgmlType::Q5_0), b, 32, 1}, 0, y);
    CHECK_EQ(y[0], (19 - 16) * 0.25f);
    CHECK_EQ(y[1], (3 - 16) * 0.25f);
    CHECK_EQ(y[16], (9 - 16) * 0.25f);
    CHECK_EQ(y[31], (25 - 16) * 0.25f);
}

TEST_CASE(dequantize_q4_1_block) {
    uint8_t b[20];
    put_f16(b, 0.5f);
    put_f16(b + 2, -3.25f);
    for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>((j & 0xF) | ((15 - j) << 4));
    float y[32];
    dequantize_row(MatView{T(GgmlType::Q4_1), b, 32, 1}, 0, y);
    for (int j = 0; j < 16; ++j) {
        CHECK_EQ(y[j], j * 0.5f - 3.25f);
        CHECK_EQ(y[j + 16], (15 - j) * 0.5f - 3.25f);
    }
}

TEST_CASE(dequantize_q5_1_block) {
    // Two blocks: the second row element of block 1 checks the block stride (24 bytes).
    uint8_t b[48] = {};
    put_f16(b, 0.25f);
    put_f16(b + 2, 1.5f);
    const uint32_t qh = 0x80000001u;  // fifth bit set for elements 0 and 31
    std::memcpy(b + 4, &qh, 4);
    for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<uint8_t>(3 | (9 << 4));
    put_f16(b + 24, 2.0f);
    put_f16(b + 26, -1.0f);
    b[32] = 7;
    float y[64];
    dequantize_row(MatView{T(GgmlType::Q5_1), b, 64, 1}, 0, y);
    CHECK_EQ(y[0], 19 * 0.25f + 1.5f);
    CHECK_EQ(y[1], 3 * 0.25f + 1.5f);
    CHECK_EQ(y[16], 9 * 0.25f + 1.5f);
    CHECK_EQ(y[31], 25 * 0.25f + 1.5f);
    CHECK_EQ(y[32], 7 * 2.0f - 1.0f);
    CHECK_EQ(y[33], -1.0f);
}

TEST_CASE(dequantize_q8_0_block) {
    uint8_t b[34];
    put_f16(b, 2.0f);
    for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    float y[32];
    dequantize_row(MatView{T(GgmlType::Q8_0), b, 32, 1}, 0, y);
    for (int j = 0; j < 32; ++j) CHECK_EQ(y[j], (j - 16) * 2.0f);
}

TEST_CASE(dequantize_q4_k_block) {
    BlockQ4_K b{};
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.25f);
    // Sub-block j: scale j + 1, min 2j + 3 (> 15 for j >= 7 needs the top bits too), plus one
    // 6-bit value that uses the high bits: sub-block 5's scale = 40, sub-block 6's min = 50.
    uint8_t sc[8] = {1, 2, 3, 4, 5, 40, 7, 8}, mn[8] = {3, 5, 7, 9, 11, 13, 50, 17};
    for (int j = 0; j < 4; ++j) {
        b.scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        b.scales[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
        b.scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
    }
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
    float y[256];
    dequantize_row(MatView{T(GgmlType::Q4_K), reinterpret_cast<const uint8_t*>(&b), 256, 1}, 0, y);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32, l = e % 32, q = (j % 2 == 0) ? l % 16 : 15 - l % 16;
        CHECK_EQ(y[e], 0.5f * sc[j] * q - 0.25f * mn[j]);
    }
}

TEST_CASE(dequantize_q6_k_block) {
    BlockQ6_K b{};
    b.d = fp32_to_fp16(0.125f);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j - 8);
    // Element e gets q = e % 64: low nibble in ql, two high bits in qh, as the layout says.
    for (int e = 0; e < 256; ++e) {
        const int q = e % 64, h = e / 128, k = e % 128, part = k / 32, l = k % 32;
        const int ql_idx = 64 * h + l + (part % 2) * 32;
        b.ql[ql_idx] |= static_cast<uint8_t>((q & 0xF) << (part >= 2 ? 4 : 0));
        b.qh[32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * part));
    }
    float y[256];
    dequantize_row(MatView{T(GgmlType::Q6_K), reinterpret_cast<const uint8_t*>(&b), 256, 1}, 0, y);
    for (int e = 0; e < 256; ++e) CHECK_EQ(y[e], 0.125f * (e / 16 - 8) * (e % 64 - 32));
}

TEST_CASE(dequantize_q5_k_block) {
    BlockQ5_K b{};
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.25f);
    // Scales and mins packed as Q4_K's (sub-block 5's scale and 6's min use the top bits).
    uint8_t sc[8] = {1, 2, 3, 4, 5, 40, 7, 8}, mn[8] = {3, 5, 7, 9, 11, 13, 50, 17};
    for (int j = 0; j < 4; ++j) {
        b.scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        b.scales[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
        b.scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
    }
    // Element e = 32j + l gets q = (l + 3j) % 32: nibble in qs, fifth bit at bit j of qh[l].
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32, l = e % 32, q = (l + 3 * j) % 32, c = e / 64;
        b.qs[32 * c + l] |= static_cast<uint8_t>((q & 0xF) << (j % 2 ? 4 : 0));
        b.qh[l] |= static_cast<uint8_t>((q >> 4) << j);
    }
    float y[256];
    dequantize_row(MatView{T(GgmlType::Q5_K), reinterpret_cast<const uint8_t*>(&b), 256, 1}, 0, y);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32, q = (e % 32 + 3 * j) % 32;
        CHECK_EQ(y[e], 0.5f * sc[j] * q - 0.25f * mn[j]);
    }
}

TEST_CASE(dequantize_q3_k_block) {
    BlockQ3_K b{};
    b.d = fp32_to_fp16(0.25f);
    // Sub-block i's 6-bit scale s_i = (7 * i + 5) % 64 (weights use s_i - 32), packed as the
    // layout says: low nibbles in bytes 0..7 (i < 8 low, i >= 8 high), top bits in bytes 8..11.
    int s[16];
    for (int i = 0; i < 16; ++i) {
        s[i] = (7 * i + 5) % 64;
        b.scales[i % 8] |= static_cast<uint8_t>((s[i] & 0xF) << (i < 8 ? 0 : 4));
        b.scales[8 + i % 4] |= static_cast<uint8_t>((s[i] >> 4) << (2 * (i / 4)));
    }
    // Element e = 128h + 32j + l gets q = (e % 8) - 4: low bits in qs, high bit in hmask.
    for (int e = 0; e < 256; ++e) {
        const int h = e / 128, j = (e % 128) / 32, l = e % 32, u = e % 8;
        b.qs[32 * h + l] |= static_cast<uint8_t>((u & 3) << (2 * j));
        b.hmask[l] |= static_cast<uint8_t>((u >> 2) << (4 * h + j));
    }
    float y[256];
    dequantize_row(MatView{T(GgmlType::Q3_K), reinterpret_cast<const uint8_t*>(&b), 256, 1}, 0, y);
    for (int e = 0; e < 256; ++e) CHECK_EQ(y[e], 0.25f * (s[e / 16] - 32) * (e % 8 - 4));
}

TEST_CASE(dequantize_q2_k_block) {
    BlockQ2_K b{};
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.125f);
    for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<uint8_t>((i % 16) | ((15 - i) << 4));
    for (int e = 0; e < 256; ++e) {
        const int h = e / 128, j = (e % 128) / 32, l = e % 32;
        b.qs[32 * h + l] |= static_cast<uint8_t>(((e / 3) % 4) << (2 * j));
    }
    float y[256];
    dequantize_row(MatView{T(GgmlType::Q2_K), reinterpret_cast<const uint8_t*>(&b), 256, 1}, 0, y);
    for (int e = 0; e < 256; ++e) CHECK_EQ(y[e], 0.5f * (e / 16) * ((e / 3) % 4) - 0.125f * (15 - e / 16));
}

TEST_CASE(dequantize_iq4_nl_block) {
    const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    uint8_t b[18];
    put_f16(b, 0.5f);
    for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    float y[32];
    dequantize_row(MatView{T(GgmlType::IQ4_NL), b, 32, 1}, 0, y);
    for (int j = 0; j < 16; ++j) {
        CHECK_EQ(y[j], 0.5f * table[j]);
        CHECK_EQ(y[j + 16], 0.5f * table[15 - j]);
    }
}

TEST_CASE(dequantize_iq4_xs_block) {
    const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    BlockIQ4_XS b{};
    b.d = fp32_to_fp16(0.25f);
    const int ls[8] = {0, 63, 32, 33, 17, 48, 5, 40};  // 6-bit; the weights use ls - 32
    for (int j = 0; j < 8; ++j) {
        b.scales_l[j / 2] |= static_cast<uint8_t>((ls[j] & 0xF) << (4 * (j % 2)));
        b.scales_h |= static_cast<uint16_t>((ls[j] >> 4) << (2 * j));
    }
    for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>((k % 16) | (((k + 5) % 16) << 4));
    float y[256];
    dequantize_row(MatView{T(GgmlType::IQ4_XS), reinterpret_cast<const uint8_t*>(&b), 256, 1}, 0, y);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32, l = e % 32, k = 16 * j + l % 16;
        const int idx = l < 16 ? k % 16 : (k + 5) % 16;
        CHECK_EQ(y[e], 0.25f * (ls[j] - 32) * table[idx]);
    }
}

TEST_CASE(dequantize_bf16_row) {
    const uint8_t h[8] = {0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40, 0x00, 0x00};  // 1, -2, 3.140625, 0
    float y[4];
    dequantize_row(MatView{T(GgmlType::BF16), h, 4, 1}, 0, y);
    CHECK_EQ(y[0], 1.0f);
    CHECK_EQ(y[1], -2.0f);
    CHECK_EQ(y[2], 3.140625f);
    CHECK_EQ(y[3], 0.0f);
}

// Blocks of every computable GGUF type and gguf-py's gguf.quants.dequantize of them
// (scripts/record_dequant_reference.py; tests/test_ggml_types.py checks the fixture is what the
// installed gguf package gives): to_float is bitwise the same.
TEST_CASE(to_float_equals_gguf_py) {
    std::FILE* f = std::fopen(HMLLM_TEST_DATA_DIR "/gguf_dequant.bin", "rb");
    CHECK(f != nullptr);
    if (f == nullptr) return;
    std::vector<uint8_t> data;
    uint8_t buf[4096];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) data.insert(data.end(), buf, buf + got);
    std::fclose(f);
    const auto u32 = [&](size_t off) {
        uint32_t v;
        std::memcpy(&v, &data[off], 4);
        return v;
    };
    CHECK(data.size() >= 12 && std::memcmp(data.data(), "HMDQ", 4) == 0 && u32(4) == 1);
    const uint32_t count = u32(8);
    std::set<uint32_t> seen;
    size_t off = 12;
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t type = u32(off), n = u32(off + 4), nbytes = u32(off + 8);
        off += 12;
        CHECK(kernel_supported(type));
        CHECK_EQ(row_bytes(type, n), size_t(nbytes));
        std::vector<float> want(n), got(n, NAN);
        std::memcpy(want.data(), &data[off + nbytes], 4 * size_t(n));
        dequantize_row(MatView{type, &data[off], n, 1}, 0, got.data());
        int bad = 0;
        for (uint32_t i = 0; i < n; ++i)
            if (std::memcmp(&got[i], &want[i], 4) != 0 && bad++ < 3)
                std::printf("  type %u element %u: to_float %.9g, gguf-py %.9g\n", type, i, got[i], want[i]);
        CHECK_EQ(bad, 0);
        seen.insert(type);
        off += nbytes + 4 * size_t(n);
    }
    CHECK_EQ(off, data.size());
    // Every ggml type the runtime computes is in the fixture.
    for (uint32_t t : kAllTypes)
        if (t != T(GgmlType::F32) && type_info(t)->tile_rows == 1) CHECK(seen.count(t) == 1);
}

TEST_CASE(dequantize_f16_f32_rows) {
    uint8_t h[8];
    const float vals[4] = {1.0f, -0.5f, 3.0f, 0.0f};
    for (int i = 0; i < 4; ++i) put_f16(h + 2 * i, vals[i]);
    float y[4];
    dequantize_row(MatView{T(GgmlType::F16), h, 4, 1}, 0, y);
    for (int i = 0; i < 4; ++i) CHECK_EQ(y[i], vals[i]);
    dequantize_row(MatView{T(GgmlType::F32), reinterpret_cast<const uint8_t*>(vals), 2, 2}, 1, y);
    CHECK_EQ(y[0], 3.0f);
    CHECK_EQ(y[1], 0.0f);
}

TEST_CASE(hm_q4_layout_and_dequantize) {
    for (int g : {32, 64, 128}) {
        const uint32_t type = g == 32   ? T(GgmlType::HM_Q4_G32)
                              : g == 64 ? T(GgmlType::HM_Q4_G64)
                                        : T(GgmlType::HM_Q4_G128);
        const int64_t rows = 8, cols = 2 * g;
        std::mt19937 rng(7 + g);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(rows * cols), ref;
        for (auto& v : w) v = normal(rng);
        const std::vector<uint8_t> bytes = pack_hm_q4(w, rows, cols, g, &ref);
        CHECK_EQ(bytes.size(), row_bytes(type, cols) * rows);
        std::vector<float> y(cols);
        for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(MatView{type, bytes.data(), cols, rows}, r, y.data());
            for (int64_t c = 0; c < cols; ++c) CHECK_EQ(y[c], ref[r * cols + c]);
        }
        // Hand check of the first tile-group: row 1's scale at bytes 2-3; its column 5 in the low
        // nibble of byte 8 + 16 * 1 + 4 * 1 + 1 and column 21 in the high nibble of the same byte.
        dequantize_row(MatView{type, bytes.data(), cols, rows}, 1, y.data());
        const float d1 = fp16_to_fp32(load_u16(&bytes[2]));
        CHECK_EQ(y[5], ((bytes[8 + 16 + 4 + 1] & 0xF) - 8) * d1);
        CHECK_EQ(y[21], ((bytes[8 + 16 + 4 + 1] >> 4) - 8) * d1);
    }
}

// Bytes written by hmbuild/int4_format.py (quantize_hm_q4(w, G, method="amax"), the rule of
// pack_hm_q4 above) for 4 x 64 weights w[r][c] = ((r * k + c) % 15 - 7) / 4: the C++ reader and
// the Python packer agree on the layout.
namespace {
void check_python_fixture(int g, int k, const char* python_hex) {
    const int64_t rows = 4, cols = 64;
    std::vector<float> w(rows * cols), ref;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) w[r * cols + c] = ((r * k + c) % 15 - 7) / 4.0f;
    const std::vector<uint8_t> bytes = pack_hm_q4(w, rows, cols, g, &ref);
    std::string hex;
    for (uint8_t b : bytes) {
        char s[3];
        std::snprintf(s, sizeof s, "%02x", b);
        hex += s;
    }
    CHECK_EQ(hex, std::string(python_hex));
    for (size_t i = 0; i < w.size(); ++i) CHECK_EQ(ref[i], w[i]);  // exactly representable
}
}  // namespace

TEST_CASE(hm_q4_python_fixture) {
    check_python_fixture(64, 7,  // G64, k = 7
        "00340034003400342132435498a9bacb1f2132438798a9ba65768798dcedfe1f"
        "54657687cbdcedfea9bacbdc2132435498a9bacb1f213243edfe1f2165768798"
        "dcedfe1f5465768743546576bacbdced32435465a9bacbdc8798a9bafe1f2132"
        "768798a9edfe1f21cbdcedfe43546576bacbdced324354651f2132438798a9ba"
        "fe1f2132768798a9");
    check_python_fixture(32, 5,  // G32, k = 5: two tile-groups of 8 + 64 bytes
        "003400340034003421324354768798a9cbdcedfe2132435465768798bacbdced"
        "1f21324365768798a9bacbdcfe1f213254657687a9bacbdcedfe1f2143546576"
        "98a9bacbedfe1f2100340034003400344354657698a9bacbedfe1f2143546576"
        "8798a9badcedfe1f324354658798a9bacbdcedfe21324354768798a9cbdcedfe"
        "1f21324365768798bacbdced1f213243");
}

TEST_CASE(selects_only_available_sets) {
    CHECK(select_kernels("scalar"));
    CHECK_EQ(std::string(active_kernels()), std::string("scalar"));
    CHECK(!select_kernels("no-such-set"));
    const CpuFeatures& f = cpu_features();
#if defined(__aarch64__)
    CHECK(!select_kernels("avx2"));
    CHECK_EQ(select_kernels("neon-dotprod"), f.dotprod);
    CHECK_EQ(select_kernels("neon-i8mm"), f.dotprod && f.i8mm);
    CHECK(select_kernels("neon"));
#else
    CHECK(!select_kernels("neon"));
    CHECK(!select_kernels("neon-dotprod"));
    CHECK(!select_kernels("neon-i8mm"));
    CHECK_EQ(select_kernels("avx2"), f.avx2 && f.fma && f.f16c);
#endif
    CHECK(select_kernels("auto"));
    std::printf("# cpu: neon=%d dotprod=%d i8mm=%d avx2=%d fma=%d f16c=%d; auto = %s; available:",
                f.neon, f.dotprod, f.i8mm, f.avx2, f.fma, f.f16c, active_kernels());
    for (const char* s : available_kernels()) std::printf(" %s", s);
    std::printf("\n");
}

TEST_CASE(matmul_f32) { compare_all_sets(T(GgmlType::F32)); }
TEST_CASE(matmul_f16) { compare_all_sets(T(GgmlType::F16)); }
TEST_CASE(matmul_q4_0) { compare_all_sets(T(GgmlType::Q4_0)); }
TEST_CASE(matmul_q5_0) { compare_all_sets(T(GgmlType::Q5_0)); }
TEST_CASE(matmul_q4_1) { compare_all_sets(T(GgmlType::Q4_1)); }
TEST_CASE(matmul_q5_1) { compare_all_sets(T(GgmlType::Q5_1)); }
TEST_CASE(matmul_q8_0) { compare_all_sets(T(GgmlType::Q8_0)); }
TEST_CASE(matmul_q4_k) { compare_all_sets(T(GgmlType::Q4_K)); }
TEST_CASE(matmul_q6_k) { compare_all_sets(T(GgmlType::Q6_K)); }
TEST_CASE(matmul_hm_q4_g32) { compare_all_sets(T(GgmlType::HM_Q4_G32)); }
TEST_CASE(matmul_hm_q4_g64) { compare_all_sets(T(GgmlType::HM_Q4_G64)); }
TEST_CASE(matmul_hm_q4_g128) { compare_all_sets(T(GgmlType::HM_Q4_G128)); }
TEST_CASE(matmul_q5_k) { compare_all_sets(T(GgmlType::Q5_K)); }
TEST_CASE(matmul_q3_k) { compare_all_sets(T(GgmlType::Q3_K)); }
TEST_CASE(matmul_q2_k) { compare_all_sets(T(GgmlType::Q2_K)); }
TEST_CASE(matmul_iq4_xs) { compare_all_sets(T(GgmlType::IQ4_XS)); }
TEST_CASE(matmul_iq4_nl) { compare_all_sets(T(GgmlType::IQ4_NL)); }
TEST_CASE(matmul_bf16) { compare_all_sets(T(GgmlType::BF16)); }

// The scalar reference (activation quantization included) gives the same bits on every
// platform: these digests were computed on the x86_64 host and hold under qemu-aarch64 too, so
// with the bitwise tests above every kernel set on every CPU gives the host's outputs. A change
// here is a change of the canonical order in kernel_table.h (or of the activation rounding).
TEST_CASE(scalar_outputs_platform_independent) {
    const struct {
        uint32_t type;
        int64_t cols;
        uint64_t digest;
    } golden[] = {
        {T(GgmlType::F32), 517, 0x7dc6d199de257d6eull},
        {T(GgmlType::F16), 517, 0x6a14a6cadcd7bcc1ull},
        {T(GgmlType::Q4_0), 512, 0x622fca498dbcd5e7ull},
        {T(GgmlType::Q5_0), 512, 0x2bfdcf4d1fa69d6bull},
        {T(GgmlType::Q8_0), 512, 0x9a5f8246d4c2066cull},
        {T(GgmlType::Q4_1), 512, 0x87dcbde4f2e7f65bull},
        {T(GgmlType::Q5_1), 512, 0xacb6c1585075b2c7ull},
        {T(GgmlType::Q4_K), 512, 0x96dba08d13362959ull},
        {T(GgmlType::Q6_K), 512, 0x505c204dff6dfc58ull},
        {T(GgmlType::HM_Q4_G32), 512, 0xa874427d0e82e0a2ull},
        {T(GgmlType::HM_Q4_G64), 512, 0x6e5d1b633cd6bdd4ull},
        {T(GgmlType::HM_Q4_G128), 512, 0xd21d200ecd406a25ull},
        {T(GgmlType::Q5_K), 512, 0x79267714cf434e6aull},
        {T(GgmlType::Q3_K), 512, 0xf28ef90dd567672aull},
        {T(GgmlType::Q2_K), 512, 0x58553520af91ea21ull},
        {T(GgmlType::IQ4_XS), 512, 0x8c3bbf2716ff6c8full},
        {T(GgmlType::IQ4_NL), 512, 0x8fc00f6af6f9272eull},
        {T(GgmlType::BF16), 517, 0x705f3b4cc107a2bbull},
    };
    for (const auto& g : golden) {
        const Case c = make_case(g.type, 8, g.cols, 3, 4242 + g.type);
        for (const char* set : available_kernels()) {
            CHECK(select_kernels(set));
            uint64_t h = 1469598103934665603ull;
            digest(run(c, {0, 8}), &h);
            if (h != g.digest) std::printf("  %s type %u: digest 0x%016llxull\n", set, g.type, (unsigned long long)h);
            CHECK_EQ(h, g.digest);
        }
    }
    CHECK(select_kernels("auto"));
}

TEST_CASE(report_worst_errors) {
    std::printf("# %lld (set, type, shape, batch, row ranges) cases bitwise equal to scalar; "
                "worst scalar vs exact error / (|w||x|) %.3g (tol 2e-2); scalar digest %016llx\n",
                (long long)g_bitwise_cases, g_worst_ref, (unsigned long long)g_digest);
}

// hadamard_rows is R = blockdiag(H/sqrt(128)) with H[i][j] = (-1)^popcount(i & j) (the rotation
// hmbuild quantize applies to the stored matrices, hmbuild/int4_format.py): a unit vector comes
// out as a row of H, scaled, and applying it twice gives the input back.
TEST_CASE(hadamard_rows_is_the_normalized_sylvester_rotation) {
    const int64_t n = 256;
    std::vector<float> x(size_t(2 * n), 0.0f);
    x[5] = 1.0f;          // row 0: e_5 in the first block
    x[n + 128 + 3] = 2.0f;  // row 1: 2 e_3 in the second block
    hadamard_rows(x.data(), n, 2);
    const float s = 1.0f / std::sqrt(128.0f);
    for (int64_t j = 0; j < 128; ++j) {
        const float h5 = (__builtin_popcountll(uint64_t(5 & j)) % 2 ? -s : s);
        const float h3 = (__builtin_popcountll(uint64_t(3 & j)) % 2 ? -s : s);
        CHECK(std::fabs(x[size_t(j)] - h5) < 1e-6f);
        CHECK(x[size_t(128 + j)] == 0.0f);
        CHECK(x[size_t(n + j)] == 0.0f);
        CHECK(std::fabs(x[size_t(n + 128 + j)] - 2.0f * h3) < 1e-6f);
    }
    std::vector<float> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) y[size_t(i)] = std::sin(0.37f * float(i)) * 3.0f;
    std::vector<float> z = y;
    hadamard_rows(z.data(), n, 1);
    hadamard_rows(z.data(), n, 1);
    for (int64_t i = 0; i < n; ++i) CHECK(std::fabs(z[size_t(i)] - y[size_t(i)]) < 1e-5f);
}
