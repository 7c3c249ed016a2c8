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

// 16 bytes of nibbles -> 32 bytes: low nibbles first (elements 0..15), then high (16..31). The
// 16 bytes are loaded into both halves (vbroadcasti128 is a plain load, where inserting a shifted
// copy took two shuffle-port uops) and only the upper half's 32-bit lanes shift right by 4: after
// the mask each byte there holds its own high nibble.
inline __m256i unpack_nibbles(const uint8_t* p) {
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_and_si256(_mm256_srlv_epi32(t, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

// Bit i of x -> byte i = 0xFF or 0.
inline __m256i bits_to_bytes(uint32_t x) {
    const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), idx);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

// Exactly rounded a*b + c, as std::fma in the scalar reference.
inline float fma1(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

// The int32 totals of four 8-lane vectors, lane r = total of v_r.
inline __m128i hsum4_i32(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(v0, v1), _mm256_unpackhi_epi32(v0, v1));
    const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(v2, v3), _mm256_unpackhi_epi32(v2, v3));
    const __m256i h = _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// F32 / F16: lanes k of acc0 and acc1 are the partial sums p_k and p_{k+8} of the canonical
// order; (acc0 + acc1) then hsum's halvings are its 16 -> 8 -> 4 -> 2 -> 1 reduction.
float dot_f32(const uint8_t* w, const ActRow& a, int64_t n) {
    const float* x = reinterpret_cast<const float*>(w);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(a.f + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(a.f + i + 8), acc1);
    }
    float s = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) s = fma1(x[i], a.f[i], s);
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
    for (; i < n; ++i) s = fma1(h2f(ld16(w + 2 * i)), a.f[i], s);
    return s;
}

// 32-blocks, four rows per pass (lane r = row r): the per-block int dots of the rows are reduced
// to one int32 each, then acc_r = fma((float)isum_r, d_wr * d_a, acc_r) as a 4-lane vector.
// The block's fp16 scale is its first two bytes in all three layouts.
// The four halves are packed in a general register (integer ALUs), then moved over once: four
// vpinsrw would queue on the vector shuffle port the dots need.
template <class B>
inline __m128 scales4(const uint8_t* const rows[4], int64_t i) {
    const auto d = [&](int r) { return static_cast<uint64_t>(reinterpret_cast<const B*>(rows[r])[i].d); };
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(d(0) | d(1) << 16 | d(2) << 32 | d(3) << 48)));
}

inline __m128 block_step4(__m128 acc, __m128i isum, __m128 dw, float da) {
    return _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(dw, _mm_set1_ps(da)), acc);
}

void dot4_q8_0(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const __m256i q = loadu(a.q + kQK * i);
        __m256i d[4];
        for (int r = 0; r < 4; ++r) d[r] = dot_i8(loadu(reinterpret_cast<const BlockQ8_0*>(rows[r])[i].qs), q);
        acc = block_step4(acc, hsum4_i32(d[0], d[1], d[2], d[3]), scales4<BlockQ8_0>(rows, i), a.d[i]);
    }
    _mm_storeu_ps(out, acc);
}

// Q4_0 / Q5_0 as unsigned 0..15 / 0..31 times the activations, minus 8 / 16 times their sum.
void dot4_q4_0(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const __m256i q = loadu(a.q + kQK * i);
        __m256i d[4];
        for (int r = 0; r < 4; ++r) {
            const __m256i u = unpack_nibbles(reinterpret_cast<const BlockQ4_0*>(rows[r])[i].qs);
            d[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), ones);
        }
        const __m128i isum = _mm_sub_epi32(hsum4_i32(d[0], d[1], d[2], d[3]), _mm_set1_epi32(8 * a.s[i]));
        acc = block_step4(acc, isum, scales4<BlockQ4_0>(rows, i), a.d[i]);
    }
    _mm_storeu_ps(out, acc);
}

void dot4_q5_0(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
    const __m256i ones = _mm256_set1_epi16(1), x10 = _mm256_set1_epi8(0x10);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const __m256i q = loadu(a.q + kQK * i);
        __m256i d[4];
        for (int r = 0; r < 4; ++r) {
            const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(rows[r])[i];
            uint32_t qh;
            __builtin_memcpy(&qh, b.qh, 4);
            const __m256i u = _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bits_to_bytes(qh), x10));
            d[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), ones);
        }
        const __m128i isum = _mm_sub_epi32(hsum4_i32(d[0], d[1], d[2], d[3]), _mm_set1_epi32(16 * a.s[i]));
        acc = block_step4(acc, isum, scales4<BlockQ5_0>(rows, i), a.d[i]);
    }
    _mm_storeu_ps(out, acc);
}

// K-quants: one row; the super-block's integer sums are reduced exactly, then its float steps
// run on lane 0 (_mm_fmadd_ss / _mm_fnmadd_ss: one rounding each, as std::fma).
inline __m128i hsum2_i32(__m128i a, __m128i b) {  // [sum a, sum b, sum a, sum b]
    const __m128i t = _mm_hadd_epi32(a, b);
    return _mm_hadd_epi32(t, t);
}

// Shuffle mask broadcasting int16 element k of each 128-bit lane.
inline __m256i bcast16_mask(int k) { return _mm256_set1_epi16(static_cast<short>(((2 * k + 1) << 8) | (2 * k))); }

float dot_q4_k(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(w);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        // Unpack the 6-bit scales into bytes 0..7 of u and the mins into bytes 8..15 (the bit
        // layout of q4k_scale_min, four sub-blocks per 32-bit word).
        uint32_t u[4];
        __builtin_memcpy(u, b[i].scales, 12);
        u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
        const uint32_t mins_lo = u[1] & k1;
        u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
        u[2] = mins_lo;
        u[0] &= k1;
        const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
        const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        // Mins times the activation sums of their 32 elements (two 16-sums each).
        const __m128i asum = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bs)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(bs + 8)));
        const __m128i msum = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), asum);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = loadu(b[i].qs + 32 * c);
            const __m256i lo = _mm256_and_si256(raw, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            const __m256i plo = _mm256_maddubs_epi16(lo, loadu(q + 64 * c));
            const __m256i phi = _mm256_maddubs_epi16(hi, loadu(q + 64 * c + 32));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, _mm256_shuffle_epi8(sc, bcast16_mask(2 * c))));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, _mm256_shuffle_epi8(sc, bcast16_mask(2 * c + 1))));
        }
        const __m128i i4 = _mm_add_epi32(_mm256_castsi256_si128(isum), _mm256_extracti128_si256(isum, 1));
        const __m128 f = _mm_cvtepi32_ps(hsum2_i32(i4, msum));  // [isum, msum, ..]
        uint32_t dd16;
        __builtin_memcpy(&dd16, &b[i].d, 4);  // d, dmin
        const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd16))), _mm_set1_ps(a.d[i]));
        acc = _mm_fmadd_ss(f, dd, acc);
        acc = _mm_fnmadd_ss(_mm_movehdup_ps(f), _mm_movehdup_ps(dd), acc);
    }
    return _mm_cvtss_f32(acc);
}

float dot_q6_k(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].scales));
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = b[i].ql + 64 * h;
            const int8_t* q = a.q + kQKK * i + 128 * h;
            // This half's 8 scales as int16 in both 128-bit lanes.
            const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h ? _mm_srli_si128(sc8, 8) : sc8));
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
                // Elements 32k .. 32k+15 are sub-block 2k (low lane), 32k+16 .. 32k+31 2k+1.
                const __m256i p = _mm256_maddubs_epi16(qv[k], loadu(q + 32 * k));
                const __m256i s = _mm256_shuffle_epi8(sc, _mm256_setr_epi8(
                    4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1,
                    4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, 4 * k + 2,
                    4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2,
                    4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
            }
        }
        // q - 32: minus 32 times the scales times each sub-block's activation sum, in integers
        // (lanes wrap freely; their total is exact).
        const int16_t* bs = a.s + 16 * i;
        const __m128i bias = _mm_add_epi32(
            _mm_madd_epi16(_mm_cvtepi8_epi16(sc8), _mm_loadu_si128(reinterpret_cast<const __m128i*>(bs))),
            _mm_madd_epi16(_mm_cvtepi8_epi16(_mm_srli_si128(sc8, 8)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(bs + 8))));
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(isum), _mm256_extracti128_si256(isum, 1));
        t = _mm_sub_epi32(t, _mm_slli_epi32(bias, 5));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
        acc = _mm_fmadd_ss(_mm_cvtepi32_ps(t), _mm_set_ss(h2f(b[i].d) * a.d[i]), acc);
    }
    return _mm_cvtss_f32(acc);
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
        const uint8_t* p = tile + k * hm_tile_group_bytes(G);
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
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(r), _mm_mul_ps(ws, _mm_set1_ps(a.d[blk])), acc);  // canonical per lane
        }
    }
    _mm_storeu_ps(out, acc);
}

}  // namespace

void fill_avx2(KernelSet* ks) {
    ks->mm[kF32] = matmul_rows<dot_f32>;
    ks->mm[kF16] = matmul_rows<dot_f16>;
    ks->mm[kQ4_0] = matmul_rows4<dot4_q4_0>;
    ks->mm[kQ5_0] = matmul_rows4<dot4_q5_0>;
    ks->mm[kQ8_0] = matmul_rows4<dot4_q8_0>;
    ks->mm[kQ4_K] = matmul_rows<dot_q4_k>;
    ks->mm[kQ6_K] = matmul_rows<dot_q6_k>;
    ks->mm[kHm32] = matmul_tiles<dot4_hm<32>>;
    ks->mm[kHm64] = matmul_tiles<dot4_hm<64>>;
    ks->mm[kHm128] = matmul_tiles<dot4_hm<128>>;
}

}  // namespace kern
}  // namespace hmllm
