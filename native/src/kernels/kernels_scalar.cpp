// Scalar reference for every type: activation quantization, dequantization and dot products.
// The SIMD sets are tested against this file; keep it obvious rather than fast.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "hmllm/ggml_types.h"
#include "kernel_table.h"

namespace hmllm {

ActKind activation_kind(uint32_t weight_type) {
    const TypeInfo* t = type_info(weight_type);
    return t ? t->vec_dot_type : ActKind::None;
}

namespace {

// Symmetric int8 over `n` values: scale amax/127, round half to even.
// Rounds the activations exactly as ggml does (its Q8_0 keeps the scale as fp16; its Q8_K scale
// is 1 / (127 / amax)), so logits agree with llama.cpp's to within summation order and greedy
// decoding follows the same path through near-ties.
float quantize_block(const float* x, int n, int8_t* q, float* d_exact = nullptr) {
    float amax = 0.0f;
    // std::max, not std::fmax: the same for every input here (a NaN is skipped by both, as
    // amax < NaN is false), but inlined, where fmax is a libm call per value on the leader thread
    // (measured 1.7% of Gemma 3 270M decode with 2 threads on x86_64).
    for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const float d = n == kQK ? fp16_to_fp32(fp32_to_fp16(amax / 127.0f)) : (amax > 0.0f ? 1.0f / id : 0.0f);
    if (d_exact != nullptr) *d_exact = amax / 127.0f;
    for (int i = 0; i < n; ++i) {
        const float v = std::nearbyint(x[i] * id);
        q[i] = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, v)));  // NaN -> 127, as fmax/fmin
    }
    return d;
}

int16_t sum_q(const int8_t* q, int n) {
    int s = 0;
    for (int i = 0; i < n; ++i) s += q[i];
    return static_cast<int16_t>(s);
}

}  // namespace

void Activations::quantize(uint32_t weight_type, const float* x, int64_t n_cols, int64_t batch) {
    kind_ = activation_kind(weight_type);
    n_cols_ = n_cols;
    batch_ = batch;
    const size_t n = static_cast<size_t>(n_cols * batch);
    switch (kind_) {
        case ActKind::None:
            break;
        case ActKind::F32:
            f_.assign(x, x + n);
            break;
        case ActKind::Q8_32:
            q_.resize(n);
            d_.resize(n / kQK);
            s_.resize(n / kQK);
            for (size_t i = 0; i < n / kQK; ++i) {
                d_[i] = quantize_block(x + kQK * i, kQK, &q_[kQK * i]);
                s_[i] = sum_q(&q_[kQK * i], kQK);
            }
            break;
        case ActKind::Q8_1:  // ggml's quantize_row_q8_1: s = fp16(d * sum), d the scale before rounding
            q_.resize(n);
            d_.resize(n / kQK);
            s_.resize(n / kQK);
            sd_.resize(n / kQK);
            for (size_t i = 0; i < n / kQK; ++i) {
                float d_exact;
                d_[i] = quantize_block(x + kQK * i, kQK, &q_[kQK * i], &d_exact);
                s_[i] = sum_q(&q_[kQK * i], kQK);
                sd_[i] = fp16_to_fp32(fp32_to_fp16(d_exact * static_cast<float>(s_[i])));
            }
            break;
        case ActKind::Q8_K:
            q_.resize(n);
            d_.resize(n / kQKK);
            s_.resize(n / 16);
            for (size_t i = 0; i < n / kQKK; ++i) d_[i] = quantize_block(x + kQKK * i, kQKK, &q_[kQKK * i]);
            for (size_t i = 0; i < n / 16; ++i) s_[i] = sum_q(&q_[16 * i], 16);
            break;
    }
}

ActRow Activations::row(int64_t b) const {
    ActRow r{nullptr, nullptr, nullptr, nullptr, nullptr};
    switch (kind_) {
        case ActKind::None: break;
        case ActKind::F32: r.f = f_.data() + b * n_cols_; break;
        case ActKind::Q8_32:
            r.q = q_.data() + b * n_cols_;
            r.d = d_.data() + b * (n_cols_ / kQK);
            r.s = s_.data() + b * (n_cols_ / kQK);
            break;
        case ActKind::Q8_1:
            r.q = q_.data() + b * n_cols_;
            r.d = d_.data() + b * (n_cols_ / kQK);
            r.s = s_.data() + b * (n_cols_ / kQK);
            r.sd = sd_.data() + b * (n_cols_ / kQK);
            break;
        case ActKind::Q8_K:
            r.q = q_.data() + b * n_cols_;
            r.d = d_.data() + b * (n_cols_ / kQKK);
            r.s = s_.data() + b * (n_cols_ / 16);
            break;
    }
    return r;
}

namespace kern {
namespace {

// ---- dequantization of whole blocks (rows of the ggml types are contiguous blocks)

void deq_f32(const uint8_t* w, int64_t n, float* y) { std::memcpy(y, w, n * sizeof(float)); }

void deq_f16(const uint8_t* w, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(load_u16(w + 2 * i));
}

void deq_q4_0(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(w);
    for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = ((b[i].qs[j] & 0xF) - 8) * d;
            y[j + 16] = ((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

// Element e of a Q5_0 / Q5_1 block, unsigned (0..31).
template <class B>
inline int q5_quant(const B& b, int e) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    const int lo = e < 16 ? (b.qs[e] & 0xF) : (b.qs[e - 16] >> 4);
    return lo | (((qh >> e) & 1) << 4);
}
inline int q5_value(const BlockQ5_0& b, int e) { return q5_quant(b, e) - 16; }

// Element e of a Q4_0 / Q4_1 block, unsigned (0..15).
template <class B>
inline int q4_quant(const B& b, int e) {
    return e < 16 ? (b.qs[e] & 0xF) : (b.qs[e - 16] >> 4);
}

void deq_q5_0(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(w);
    for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < 32; ++e) y[e] = q5_value(b[i], e) * d;
    }
}

// Q4_1 / Q5_1: x = d * q + m (ggml's order: one product, one sum).
template <class B, int (*Quant)(const B&, int)>
void deq_affine(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const B*>(w);
    for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        for (int e = 0; e < 32; ++e) y[e] = Quant(b[i], e) * d + m;
    }
}

void deq_q8_0(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(w);
    for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 32; ++j) y[j] = b[i].qs[j] * d;
    }
}

// Element e (0..255) of a Q4_K block, and its sub-block.
inline int q4k_quant(const BlockQ4_K& b, int e) {
    const int c = e / 64, k = e % 64;
    return k < 32 ? (b.qs[32 * c + k] & 0xF) : (b.qs[32 * c + k - 32] >> 4);
}

// Q4_K / Q5_K: eight sub-blocks of 32, each with a 6-bit scale and min (q4k_scale_min),
// x = d * sc * q - dmin * m.
template <class B, int (*Quant)(const B&, int)>
void deq_k_scale_min(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const B*>(w);
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            q4k_scale_min(j, b[i].scales, &sc, &m);
            for (int l = 0; l < 32; ++l) y[32 * j + l] = d * sc * Quant(b[i], 32 * j + l) - dmin * m;
        }
    }
}

inline int q6k_quant(const BlockQ6_K& b, int e) {
    const int h = e / 128, k = e % 128, part = k / 32, l = k % 32;
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t qh = b.qh[32 * h + l];
    const int lo = part == 0 ? (ql[l] & 0xF) : part == 1 ? (ql[l + 32] & 0xF)
                 : part == 2 ? (ql[l] >> 4) : (ql[l + 32] >> 4);
    return (lo | (((qh >> (2 * part)) & 3) << 4)) - 32;
}

inline int q6k_scale(const BlockQ6_K& b, int j) { return b.scales[j]; }

// Q6_K / Q3_K: sixteen sub-blocks of 16, each with a signed scale, x = d * scale * q.
template <class B, int (*Quant)(const B&, int), int (*Scale)(const B&, int)>
void deq_k_scale16(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const B*>(w);
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < 256; ++e) y[e] = d * Scale(b[i], e / 16) * Quant(b[i], e);
    }
}

// Q5_K element e: Q4_K's nibble with bit e / 32 of qh[e % 32] above it.
inline int q5k_quant(const BlockQ5_K& b, int e) {
    const int c = e / 64, k = e % 64, l = e % 32;
    const int lo = k < 32 ? (b.qs[32 * c + l] & 0xF) : (b.qs[32 * c + l] >> 4);
    return lo | (((b.qh[l] >> (e / 32)) & 1) << 4);
}

// Q3_K element e, in -4..3.
inline int q3k_quant(const BlockQ3_K& b, int e) {
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    const int lo = (b.qs[32 * h + l] >> (2 * j)) & 3;
    return lo - (((b.hmask[l] >> (4 * h + j)) & 1) ? 0 : 4);
}

inline int q3k_sub_scale(const BlockQ3_K& b, int j) { return q3k_scale(j, b.scales) - 32; }

// Q2_K element e, in 0..3.
inline int q2k_quant(const BlockQ2_K& b, int e) {
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    return (b.qs[32 * h + l] >> (2 * j)) & 3;
}

void deq_q2_k(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(w);
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int e = 0; e < 256; ++e) {
            const int sc = b[i].scales[e / 16];
            y[e] = d * (sc & 0xF) * q2k_quant(b[i], e) - dmin * (sc >> 4);
        }
    }
}

// IQ4 element e of a 32-element run of indices (IQ4_NL's block, IQ4_XS's sub-block).
inline int iq4_value(const uint8_t* qs, int e) {
    return kIq4Values[e < 16 ? (qs[e] & 0xF) : (qs[e - 16] >> 4)];
}

void deq_iq4_nl(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const BlockIQ4_NL*>(w);
    for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < 32; ++e) y[e] = d * iq4_value(b[i].qs, e);
    }
}

void deq_iq4_xs(const uint8_t* w, int64_t n, float* y) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(w);
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 8; ++j) {
            const float dl = d * (iq4xs_scale(j, b[i]) - 32);
            for (int e = 0; e < 32; ++e) y[32 * j + e] = dl * iq4_value(b[i].qs + 16 * j, e);
        }
    }
}

// bf16 is the top half of an fp32: exact.
inline float bf16_to_fp32(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

void deq_bf16(const uint8_t* w, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(load_u16(w + 2 * i));
}

// ---- dots, in the canonical order of kernel_table.h

// F32 / F16: 16 partial sums over i mod 16, halved 16 -> 8 -> 4 -> 2 -> 1, then the tail.
template <class Load>
float dot_float(Load w, const float* x, int64_t n) {
    float p[16] = {};
    const int64_t n16 = n - n % 16;
    for (int64_t i = 0; i < n16; i += 16)
        for (int k = 0; k < 16; ++k) p[k] = std::fma(w(i + k), x[i + k], p[k]);
    for (int k = 0; k < 8; ++k) p[k] = p[k] + p[k + 8];
    for (int k = 0; k < 4; ++k) p[k] = p[k] + p[k + 4];
    float acc = (p[0] + p[2]) + (p[1] + p[3]);
    for (int64_t i = n16; i < n; ++i) acc = std::fma(w(i), x[i], acc);
    return acc;
}

float dot_f32(const uint8_t* w, const ActRow& a, int64_t n) {
    const float* x = reinterpret_cast<const float*>(w);
    return dot_float([x](int64_t i) { return x[i]; }, a.f, n);
}

float dot_f16(const uint8_t* w, const ActRow& a, int64_t n) {
    return dot_float([w](int64_t i) { return fp16_to_fp32(load_u16(w + 2 * i)); }, a.f, n);
}

// The 32-block step: acc = fma((float)isum, d_w * d_a, acc).
inline float block_step(float acc, int isum, uint16_t dw, float da) {
    return std::fma(static_cast<float>(isum), fp16_to_fp32(dw) * da, acc);
}

float dot_q4_0(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int8_t* q = a.q + kQK * i;
        int isum = 0;
        for (int j = 0; j < 16; ++j)
            isum += ((b[i].qs[j] & 0xF) - 8) * q[j] + ((b[i].qs[j] >> 4) - 8) * q[j + 16];
        acc = block_step(acc, isum, b[i].d, a.d[i]);
    }
    return acc;
}

float dot_q5_0(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int8_t* q = a.q + kQK * i;
        int isum = 0;
        for (int e = 0; e < 32; ++e) isum += q5_value(b[i], e) * q[e];
        acc = block_step(acc, isum, b[i].d, a.d[i]);
    }
    return acc;
}

// Q4_1 / Q5_1: the unsigned quants' integer dot, then the offset m_w times the activation
// block's fp16(d * sum) (llama.cpp: d_w * d_a * isum + m_w * s_a, s_a from block_q8_1).
template <class B, int (*Quant)(const B&, int)>
float dot_affine(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const B*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int8_t* q = a.q + kQK * i;
        int isum = 0;
        for (int e = 0; e < 32; ++e) isum += Quant(b[i], e) * q[e];
        acc = block_step(acc, isum, b[i].d, a.d[i]);
        acc = std::fma(fp16_to_fp32(b[i].m), a.sd[i], acc);
    }
    return acc;
}

// Q4_K / Q5_K (deq_k_scale_min's blocks).
template <class B, int (*Quant)(const B&, int)>
float dot_k_scale_min(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const B*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        int isum = 0, msum = 0;
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            q4k_scale_min(j, b[i].scales, &sc, &m);
            int s = 0;
            for (int l = 0; l < 32; ++l) s += Quant(b[i], 32 * j + l) * q[32 * j + l];
            isum += sc * s;
            msum += m * (bs[2 * j] + bs[2 * j + 1]);
        }
        const float da = a.d[i];
        acc = std::fma(static_cast<float>(isum), fp16_to_fp32(b[i].d) * da, acc);
        acc = std::fma(static_cast<float>(msum), -(fp16_to_fp32(b[i].dmin) * da), acc);
    }
    return acc;
}

// Q6_K / Q3_K (deq_k_scale16's blocks).
template <class B, int (*Quant)(const B&, int), int (*Scale)(const B&, int)>
float dot_k_scale16(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const B*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        int isum = 0;
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += Quant(b[i], 16 * j + l) * q[16 * j + l];
            isum += Scale(b[i], j) * s;
        }
        acc = std::fma(static_cast<float>(isum), fp16_to_fp32(b[i].d) * a.d[i], acc);
    }
    return acc;
}

float dot_bf16(const uint8_t* w, const ActRow& a, int64_t n) {
    return dot_float([w](int64_t i) { return bf16_to_fp32(load_u16(w + 2 * i)); }, a.f, n);
}

float dot_iq4_nl(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockIQ4_NL*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int8_t* q = a.q + kQK * i;
        int isum = 0;
        for (int e = 0; e < 32; ++e) isum += iq4_value(b[i].qs, e) * q[e];
        acc = block_step(acc, isum, b[i].d, a.d[i]);
    }
    return acc;
}

float dot_q2_k(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        int isum = 0, msum = 0;
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += q2k_quant(b[i], 16 * j + l) * q[16 * j + l];
            isum += (b[i].scales[j] & 0xF) * s;
            msum += (b[i].scales[j] >> 4) * bs[j];
        }
        const float da = a.d[i];
        acc = std::fma(static_cast<float>(isum), fp16_to_fp32(b[i].d) * da, acc);
        acc = std::fma(static_cast<float>(msum), -(fp16_to_fp32(b[i].dmin) * da), acc);
    }
    return acc;
}

float dot_iq4_xs(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        int isum = 0;
        for (int j = 0; j < 8; ++j) {
            int s = 0;
            for (int e = 0; e < 32; ++e) s += iq4_value(b[i].qs + 16 * j, e) * q[32 * j + e];
            isum += (iq4xs_scale(j, b[i]) - 32) * s;
        }
        acc = std::fma(static_cast<float>(isum), fp16_to_fp32(b[i].d) * a.d[i], acc);
    }
    return acc;
}

template <int G>
void dot4_hm(const uint8_t* tile, const ActRow& a, int64_t n, float out[4]) {
    dot4_hm_ref(tile, a, n, G, out);
}

}  // namespace

float dot_q8_0_ref(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int8_t* q = a.q + kQK * i;
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += b[i].qs[j] * q[j];
        acc = block_step(acc, isum, b[i].d, a.d[i]);
    }
    return acc;
}

void dot4_hm_ref(const uint8_t* tile, const ActRow& a, int64_t n, int group, float out[4]) {
    for (int r = 0; r < 4; ++r) out[r] = 0.0f;
    const int64_t tgb = hm_tile_group_bytes(group);
    for (int64_t k = 0; k < n / group; ++k) {
        const uint8_t* p = tile + k * tgb;
        for (int c = 0; c < group / 32; ++c) {
            const int64_t blk = (k * group) / 32 + c;
            const int8_t* q = a.q + 32 * blk;
            const uint8_t* nib = p + 8 + 64 * c;
            int isum[4] = {0, 0, 0, 0};
            for (int j = 0; j < 64; ++j) {
                const int i = j / 16, r = (j % 16) / 4, e = j % 4;
                isum[r] += (nib[j] & 0xF) * q[4 * i + e] + (nib[j] >> 4) * q[16 + 4 * i + e];
            }
            for (int r = 0; r < 4; ++r)
                out[r] = block_step(out[r], isum[r] - 8 * a.s[blk], load_u16(p + 2 * r), a.d[blk]);
        }
    }
}

// ---- the type table's to_float: one row of a matrix

namespace {
const uint8_t* row_start(GgmlType t, const uint8_t* m, int64_t row, int64_t n) {
    return m + row * row_bytes(static_cast<uint32_t>(t), n);
}
}  // namespace

void to_float_f32(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_f32(row_start(GgmlType::F32, m, row, n), n, y); }
void to_float_f16(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_f16(row_start(GgmlType::F16, m, row, n), n, y); }
void to_float_q4_0(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_q4_0(row_start(GgmlType::Q4_0, m, row, n), n, y); }
void to_float_q5_0(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_q5_0(row_start(GgmlType::Q5_0, m, row, n), n, y); }
void to_float_q4_1(const uint8_t* m, int64_t row, int64_t n, float* y) {
    deq_affine<BlockQ4_1, q4_quant<BlockQ4_1>>(row_start(GgmlType::Q4_1, m, row, n), n, y);
}
void to_float_q5_1(const uint8_t* m, int64_t row, int64_t n, float* y) {
    deq_affine<BlockQ5_1, q5_quant<BlockQ5_1>>(row_start(GgmlType::Q5_1, m, row, n), n, y);
}
void to_float_q8_0(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_q8_0(row_start(GgmlType::Q8_0, m, row, n), n, y); }
void to_float_q4_k(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_k_scale_min<BlockQ4_K, q4k_quant>(row_start(GgmlType::Q4_K, m, row, n), n, y); }
void to_float_q6_k(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_k_scale16<BlockQ6_K, q6k_quant, q6k_scale>(row_start(GgmlType::Q6_K, m, row, n), n, y); }
void to_float_q5_k(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_k_scale_min<BlockQ5_K, q5k_quant>(row_start(GgmlType::Q5_K, m, row, n), n, y); }
void to_float_q3_k(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_k_scale16<BlockQ3_K, q3k_quant, q3k_sub_scale>(row_start(GgmlType::Q3_K, m, row, n), n, y); }
void to_float_q2_k(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_q2_k(row_start(GgmlType::Q2_K, m, row, n), n, y); }
void to_float_iq4_xs(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_iq4_xs(row_start(GgmlType::IQ4_XS, m, row, n), n, y); }
void to_float_iq4_nl(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_iq4_nl(row_start(GgmlType::IQ4_NL, m, row, n), n, y); }
void to_float_bf16(const uint8_t* m, int64_t row, int64_t n, float* y) { deq_bf16(row_start(GgmlType::BF16, m, row, n), n, y); }

// HM rows are interleaved in 4-row tiles: row r of a tile is one nibble lane of each tile-group.
template <int G>
void to_float_hm(const uint8_t* m, int64_t row, int64_t n, float* y) {
    const int64_t tgb = hm_tile_group_bytes(G);
    const uint8_t* tile = m + (row / kHmTileRows) * (n / G) * tgb;
    const int r = static_cast<int>(row % kHmTileRows);
    for (int64_t k = 0; k < n / G; ++k) {
        const uint8_t* tg = tile + k * tgb;
        const float d = fp16_to_fp32(load_u16(tg + 2 * r));
        for (int col = 0; col < G; ++col) {
            int byte, shift;
            hm_nibble_pos(r, col, &byte, &shift);
            y[k * G + col] = (((tg[byte] >> shift) & 0xF) - 8) * d;
        }
    }
}
template void to_float_hm<32>(const uint8_t*, int64_t, int64_t, float*);
template void to_float_hm<64>(const uint8_t*, int64_t, int64_t, float*);
template void to_float_hm<128>(const uint8_t*, int64_t, int64_t, float*);

// ---- Interleaved row groups (kernels.h): the layout, both ways, byte by byte.

namespace {
// Bytes of one group of four blocks (the same as four file-layout blocks).
size_t group_bytes(uint32_t type) { return 4 * row_bytes(type, kQK); }
}  // namespace

void interleave_group(uint32_t type, const uint8_t* const blocks[4], uint8_t* g) {
    if (type == static_cast<uint32_t>(GgmlType::Q8_0)) {
        for (int r = 0; r < 4; ++r) {
            for (int k = 0; k < 8; ++k) std::memcpy(g + 16 * k + 4 * r, blocks[r] + 2 + 4 * k, 4);
            std::memcpy(g + 128 + 2 * r, blocks[r], 2);  // the fp16 scale
        }
        return;
    }
    // Q5_0: the fifth bits regrouped, then the nibble bytes as Q8_0's quants are, then the scales.
    for (int r = 0; r < 4; ++r) {
        uint32_t bits;
        std::memcpy(&bits, blocks[r] + 2, 4);
        // qh[4r + j] bit k = bit 4k + j: the bits 4 apart gathered into one byte in three steps.
        for (int j = 0; j < 4; ++j) {
            uint32_t y = (bits >> j) & 0x11111111u;
            y = (y | (y >> 3)) & 0x03030303u;
            y = (y | (y >> 6)) & 0x000F000Fu;
            g[4 * r + j] = uint8_t(y | (y >> 12));
        }
        for (int k = 0; k < 4; ++k) std::memcpy(g + 16 + 16 * k + 4 * r, blocks[r] + 6 + 4 * k, 4);
        std::memcpy(g + 80 + 2 * r, blocks[r], 2);
    }
}

void deinterleave_block(uint32_t type, const uint8_t* g, int r, uint8_t* block) {
    if (type == static_cast<uint32_t>(GgmlType::Q8_0)) {
        std::memcpy(block, g + 128 + 2 * r, 2);
        for (int k = 0; k < 8; ++k) std::memcpy(block + 2 + 4 * k, g + 16 * k + 4 * r, 4);
        return;
    }
    std::memcpy(block, g + 80 + 2 * r, 2);
    uint32_t bits = 0;
    for (int k = 0; k < 8; ++k)
        for (int j = 0; j < 4; ++j) bits |= uint32_t((g[4 * r + j] >> k) & 1u) << (4 * k + j);
    std::memcpy(block + 2, &bits, 4);
    for (int k = 0; k < 4; ++k) std::memcpy(block + 6 + 4 * k, g + 16 + 16 * k + 4 * r, 4);
}

void interleave_matrix(uint32_t type, const uint8_t* src, int64_t n_cols, int64_t r0, int64_t r1, uint8_t* dst) {
    const size_t rb = row_bytes(type, n_cols), bb = row_bytes(type, kQK), gb = group_bytes(type);
    const int64_t nb = n_cols / kQK;
    for (int64_t r = r0; r < r1; r += 4) {
        uint8_t* out = dst + size_t(r - r0) * rb;
        for (int64_t i = 0; i < nb; ++i) {
            const uint8_t* blocks[4];
            for (int k = 0; k < 4; ++k) blocks[k] = src + size_t(r + k) * rb + size_t(i) * bb;
            interleave_group(type, blocks, out + size_t(i) * gb);
        }
    }
}

namespace {
// Row `row` of an interleaved matrix in its file layout (n_cols / 32 blocks at out).
void deinterleave_row(uint32_t type, const uint8_t* m, int64_t row, int64_t n_cols, uint8_t* out) {
    const size_t rb = row_bytes(type, n_cols), bb = row_bytes(type, kQK), gb = group_bytes(type);
    const uint8_t* group_row = m + size_t(row / 4) * 4 * rb;
    for (int64_t i = 0; i < n_cols / kQK; ++i)
        deinterleave_block(type, group_row + size_t(i) * gb, static_cast<int>(row % 4), out + size_t(i) * bb);
}

// The reference over an interleaved matrix: each row rebuilt in its file layout, then the row dot.
template <RowDot Dot>
void matmul_x4_ref(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    std::vector<uint8_t> row(row_bytes(w.type, w.n_cols));
    for (int64_t r = r0; r < r1; ++r) {
        deinterleave_row(w.type, w.data, r, w.n_cols, row.data());
        for (int64_t b = 0; b < act.batch(); ++b) y[b * ys + r] = Dot(row.data(), act.row(b), w.n_cols);
    }
}
}  // namespace

void fill_scalar(KernelSet* ks) {
    ks->mm_x4[kQ5_0] = matmul_x4_ref<dot_q5_0>;
    ks->mm_x4[kQ8_0] = matmul_x4_ref<dot_q8_0_ref>;
    ks->mm[kF32] = matmul_rows<dot_f32>;
    ks->mm[kF16] = matmul_rows<dot_f16>;
    ks->mm[kQ4_0] = matmul_rows<dot_q4_0>;
    ks->mm[kQ5_0] = matmul_rows<dot_q5_0>;
    ks->mm[kQ8_0] = matmul_rows<dot_q8_0_ref>;
    ks->mm[kQ4_K] = matmul_rows<dot_k_scale_min<BlockQ4_K, q4k_quant>>;
    ks->mm[kQ6_K] = matmul_rows<dot_k_scale16<BlockQ6_K, q6k_quant, q6k_scale>>;
    ks->mm[kHm32] = matmul_tiles<dot4_hm<32>>;
    ks->mm[kHm64] = matmul_tiles<dot4_hm<64>>;
    ks->mm[kHm128] = matmul_tiles<dot4_hm<128>>;
    ks->mm[kQ5_K] = matmul_rows<dot_k_scale_min<BlockQ5_K, q5k_quant>>;
    ks->mm[kQ3_K] = matmul_rows<dot_k_scale16<BlockQ3_K, q3k_quant, q3k_sub_scale>>;
    ks->mm[kQ2_K] = matmul_rows<dot_q2_k>;
    ks->mm[kIQ4_XS] = matmul_rows<dot_iq4_xs>;
    ks->mm[kIQ4_NL] = matmul_rows<dot_iq4_nl>;
    ks->mm[kBF16] = matmul_rows<dot_bf16>;
    ks->mm[kQ4_1] = matmul_rows<dot_affine<BlockQ4_1, q4_quant<BlockQ4_1>>>;
    ks->mm[kQ5_1] = matmul_rows<dot_affine<BlockQ5_1, q5_quant<BlockQ5_1>>>;
}

}  // namespace kern
}  // namespace hmllm
