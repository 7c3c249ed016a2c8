// x86_64 AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c and only called after
// cpu_features() reported all three, so this file must not define anything a baseline file
// could link to: everything is file-local (header inline helpers are avoided on purpose, since
// the linker could otherwise keep an AVX2-compiled copy of them for the whole program).
#include <immintrin.h>

#include "kernel_table.h"

namespace hmllm {
namespace kern {
namespace {

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t ld16(const uint8_t* p) { uint16_t v; __builtin_memcpy(&v, p, 2); return v; }

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Signed x signed int8 dot in 8 int32 lanes (maddubs needs one unsigned operand: move the sign).
inline __m256i dot_i8(__m256i x, __m256i y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

// 16 bytes of nibbles -> 32 bytes: low nibbles first (elements 0..15), then high (16..31).
inline __m256i unpack_nibbles(const uint8_t* p) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

// Bit i of x -> byte i = 0xFF or 0.
inline __m256i bits_to_bytes(uint32_t x) {
    const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), idx);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

void scale_min(int j, const uint8_t* s, int* sc, int* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

float dot_f32(const uint8_t* w, const ActRow& a, int64_t n) {
    const float* x = reinterpret_cast<const float*>(w);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(a.f + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(a.f + i + 8), acc1);
    }
    float s = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) s += x[i] * a.f[i];
    return s;
}

float dot_f16(const uint8_t* w, const ActRow& a, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * i)));
        const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * i + 16)));
        acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a.f + i), acc0);
        acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a.f + i + 8), acc1);
    }
    float s = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) s += h2f(ld16(w + 2 * i)) * a.f[i];
    return s;
}

float dot_q8_0(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(w);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const __m256i d = dot_i8(loadu(b[i].qs), loadu(a.q + kQK * i));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(h2f(b[i].d) * a.d[i]), acc);
    }
    return hsum(acc);
}

float dot_q4_0(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(w);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const __m256i q = _mm256_sub_epi8(unpack_nibbles(b[i].qs), _mm256_set1_epi8(8));
        const __m256i d = dot_i8(q, loadu(a.q + kQK * i));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(h2f(b[i].d) * a.d[i]), acc);
    }
    return hsum(acc);
}

float dot_q5_0(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(w);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        uint32_t qh;
        __builtin_memcpy(&qh, b[i].qh, 4);
        const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(b[i].qs), hi), _mm256_set1_epi8(16));
        const __m256i d = dot_i8(q, loadu(a.q + kQK * i));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(h2f(b[i].d) * a.d[i]), acc);
    }
    return hsum(acc);
}

float dot_q4_k(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(w);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float acc_min = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        int sc[8], m[8], msum = 0;
        for (int j = 0; j < 8; ++j) {
            scale_min(j, b[i].scales, &sc[j], &m[j]);
            msum += m[j] * (bs[2 * j] + bs[2 * j + 1]);
        }
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = loadu(b[i].qs + 32 * c);
            const __m256i lo = _mm256_and_si256(raw, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            const __m256i plo = _mm256_maddubs_epi16(lo, loadu(q + 64 * c));
            const __m256i phi = _mm256_maddubs_epi16(hi, loadu(q + 64 * c + 32));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, _mm256_set1_epi16(static_cast<short>(sc[2 * c]))));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, _mm256_set1_epi16(static_cast<short>(sc[2 * c + 1]))));
        }
        const float da = a.d[i];
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].d) * da), _mm256_cvtepi32_ps(isum), acc);
        acc_min += h2f(b[i].dmin) * da * msum;
    }
    return hsum(acc) - acc_min;
}

float dot_q6_k(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float acc_bias = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = b[i].ql + 64 * h;
            const int8_t* sc = b[i].scales + 8 * h;
            const int8_t* q = a.q + kQKK * i + 128 * h;
            const __m256i l0 = loadu(ql), l1 = loadu(ql + 32), hb = loadu(b[i].qh + 32 * h);
            __m256i qv[4];
            qv[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
            qv[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
            qv[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
            qv[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
            for (int k = 0; k < 4; ++k) {
                const __m256i p = _mm256_maddubs_epi16(qv[k], loadu(q + 32 * k));
                const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
            }
        }
        // q - 32: the offset times each sub-block's activation sum.
        const int16_t* bs = a.s + 16 * i;
        int bias = 0;
        for (int j = 0; j < 16; ++j) bias += b[i].scales[j] * bs[j];
        const float d = h2f(b[i].d) * a.d[i];
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
        acc_bias += d * static_cast<float>(32 * bias);
    }
    return hsum(acc) - acc_bias;
}

// HM_Q4 tile: one 32-byte load holds 4 rows x 8 columns of low nibbles and 4 x 8 of high ones.
// Activations are broadcast 4 bytes at a time so each int32 lane ends up as one row's partial dot.
template <int G>
void dot4_hm(const uint8_t* tile, const ActRow& a, int64_t n, float out[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const __m256i sh01 = _mm256_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4,
                                          5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
    const __m256i sh23 = _mm256_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 12,
                                          13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15);
    __m128 acc = _mm_setzero_ps();
    for (int64_t k = 0; k < n / G; ++k) {
        const uint8_t* p = tile + k * (8 + 2 * G);
        const __m128 ws = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        for (int c = 0; c < G / 32; ++c) {
            const int64_t blk = k * (G / 32) + c;
            const int8_t* q = a.q + 32 * blk;
            const __m256i alo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
            const __m256i ahi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
            const __m256i v01 = loadu(p + 8 + 64 * c), v23 = loadu(p + 8 + 64 * c + 32);
            __m256i s = _mm256_maddubs_epi16(_mm256_and_si256(v01, m4), _mm256_shuffle_epi8(alo, sh01));
            s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(v23, m4), _mm256_shuffle_epi8(alo, sh23)));
            s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v01, 4), m4),
                                                         _mm256_shuffle_epi8(ahi, sh01)));
            s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v23, 4), m4),
                                                         _mm256_shuffle_epi8(ahi, sh23)));
            const __m256i d32 = _mm256_madd_epi16(s, ones);
            __m128i r = _mm_add_epi32(_mm256_castsi256_si128(d32), _mm256_extracti128_si256(d32, 1));
            r = _mm_sub_epi32(r, _mm_set1_epi32(8 * a.s[blk]));
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(r), _mm_mul_ps(ws, _mm_set1_ps(a.d[blk])), acc);
        }
    }
    _mm_storeu_ps(out, acc);
}

}  // namespace

void fill_avx2(KernelSet* ks) {
    ks->mm[kF32] = matmul_rows<dot_f32>;
    ks->mm[kF16] = matmul_rows<dot_f16>;
    ks->mm[kQ4_0] = matmul_rows<dot_q4_0>;
    ks->mm[kQ5_0] = matmul_rows<dot_q5_0>;
    ks->mm[kQ8_0] = matmul_rows<dot_q8_0>;
    ks->mm[kQ4_K] = matmul_rows<dot_q4_k>;
    ks->mm[kQ6_K] = matmul_rows<dot_q6_k>;
    ks->mm[kHm64] = matmul_tiles<dot4_hm<64>>;
    ks->mm[kHm128] = matmul_tiles<dot4_hm<128>>;
}

}  // namespace kern
}  // namespace hmllm
