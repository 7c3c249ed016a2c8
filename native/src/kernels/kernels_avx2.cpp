// x86_64 AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c and only called after
// cpu_features() reported all three, so this file must not define anything a baseline file
// could link to: everything is file-local (header inline helpers are avoided on purpose, since
// the linker could otherwise keep an AVX2-compiled copy of them for the whole program).
#include <immintrin.h>

#include <cstddef>

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

// ---- Row loops, and software prefetch. kernel_table.h's prefetch_bytes is a loop of
// __builtin_prefetch, which GCC 12 counts as free of side effects, so at -O2 / -O3 it removes every
// call of that function as if it did nothing (this file's object had no prefetch instruction; a
// two-line test shows the same). A loop of _mm_prefetch is kept. The four rows the one-activation-row kernels read side by side need it:
// without, they stream from memory at a third of the sequential rate on the x86_64 VM (the Gemma 3
// 270M output matrix, Q8_0 262144 x 640, one thread: 29 ms; with PfStream below 7.7-8.0 ms).
inline void prefetch(const uint8_t* p, size_t bytes) {
    for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p) + off, _MM_HINT_T0);
}

// A prefetch stream spread over a loop: `per` lines each step from p on, until end. The four-row
// kernels ask this way for the group of rows they read kPrefetchGroups steps later, a few lines
// per block, instead of all of it at once: the 40-odd prefetches of a burst stalled on the miss
// buffers (the loop sat on one prefetch a third of its time), and one prefetch per row and block
// kept the rows' four streams apart. Reading four interleaved rows with this stream ran at 20.5
// GB/s on the x86_64 VM, with the burst at 12 and without prefetch at 7.6 (sequential: 23).
struct PfStream {
    const char* p = nullptr;
    const char* end = nullptr;
    int per = 0;
    void step() {
        for (int k = 0; k < per && p < end; ++k, p += 64) _mm_prefetch(p, _MM_HINT_T0);
    }
};

// kPrefetchGroups groups of rows ahead (two measured better than one or four).
constexpr int kPrefetchGroups = 2;

// One row at a time (F32, F16, and the K-quants for one activation row): each row is read front to
// back, which the hardware prefetcher follows; asking for the row two ahead as well did not help
// (Q4_K 262144 x 1024, one thread: 11.0-11.9 ms without, 11.7-11.9 ms with).
template <RowDot Dot>
void rows_seq(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch();
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + r * rb;
        for (int64_t b = 0; b < nb; ++b) y[b * ys + r] = Dot(row, act.row(b), w.n_cols);
    }
}

// Four rows per step (lane r = row r; a leftover row passed again), for the one-activation-row
// (decode) case; the kernel streams in the rows kPrefetchGroups steps ahead as it goes (PfStream).
using Row4DotPf = void (*)(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4], PfStream pf);

template <Row4DotPf Dot>
void rows4_pf(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch(), nblk = w.n_cols / kQK;
    const int per = static_cast<int>((4 * rb + 63) / 64 + nblk - 1) / static_cast<int>(nblk);  // lines per block
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* rows[4];
        for (int i = 0; i < 4; ++i) rows[i] = w.data + (r + i < r1 ? r + i : r1 - 1) * rb;
        PfStream pf;
        if (r + 4 * (kPrefetchGroups + 1) <= r1) {
            pf.p = reinterpret_cast<const char*>(rows[0] + 4 * kPrefetchGroups * rb);
            pf.end = pf.p + 4 * rb;
            pf.per = per;
        }
        for (int64_t b = 0; b < nb; ++b) {
            float o[4];
            Dot(rows, act.row(b), w.n_cols, o, b == 0 ? pf : PfStream{});
            for (int i = 0; i < 4 && r + i < r1; ++i) y[b * ys + r + i] = o[i];
        }
    }
}

// HM_Q4 tiles: a tile is read front to back too, and no software prefetch either (HM_Q4_G128
// 262144 x 1024, one thread: 6.6-7.5 ms without, 7.4-7.9 ms asking for the tile two ahead).
template <TileDot Dot>
void tiles_seq(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const size_t tb = 4 * row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch();
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* tile = w.data + (r / 4) * tb;
        for (int64_t b = 0; b < nb; ++b) {
            float o[4];
            Dot(tile, act.row(b), w.n_cols, o);
            for (int i = 0; i < 4; ++i) y[b * ys + r + i] = o[i];
        }
    }
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

// BF16: the F16 kernel's order; a bf16 widens to fp32 exactly by a shift of 16.
float dot_bf16(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto wide = [&](int64_t i) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    };
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(wide(i), _mm256_loadu_ps(a.f + i), acc0);
        acc1 = _mm256_fmadd_ps(wide(i + 8), _mm256_loadu_ps(a.f + i + 8), acc1);
    }
    float s = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) {
        const uint32_t bits = static_cast<uint32_t>(ld16(w + 2 * i)) << 16;
        float v;
        __builtin_memcpy(&v, &bits, 4);
        s = fma1(v, a.f[i], s);
    }
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

void dot4_q8_0(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4], PfStream pf) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        pf.step();
        const __m256i q = loadu(a.q + kQK * i);
        __m256i d[4];
        for (int r = 0; r < 4; ++r) d[r] = dot_i8(loadu(reinterpret_cast<const BlockQ8_0*>(rows[r])[i].qs), q);
        acc = block_step4(acc, hsum4_i32(d[0], d[1], d[2], d[3]), scales4<BlockQ8_0>(rows, i), a.d[i]);
    }
    _mm_storeu_ps(out, acc);
}

// IQ4_NL: 16 bytes of indices -> the 32 signed table values (kIq4Values in both 128-bit lanes).
inline __m256i iq4_values(const uint8_t* qs) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
    return _mm256_shuffle_epi8(table, unpack_nibbles(qs));
}

void dot4_iq4_nl(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4], PfStream pf) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        pf.step();
        const __m256i q = loadu(a.q + kQK * i);
        __m256i d[4];
        for (int r = 0; r < 4; ++r) d[r] = dot_i8(iq4_values(reinterpret_cast<const BlockIQ4_NL*>(rows[r])[i].qs), q);
        acc = block_step4(acc, hsum4_i32(d[0], d[1], d[2], d[3]), scales4<BlockIQ4_NL>(rows, i), a.d[i]);
    }
    _mm_storeu_ps(out, acc);
}

// Q4_1 / Q5_1: unsigned 0..15 / 0..31 times the activations, then the canonical second step
// acc_r = fma(m_wr, sd_a, acc_r), sd_a the activation block's fp16(d * sum). Each block's m is the
// fp16 at byte 2.
template <class B>
inline __m128 mins4(const uint8_t* const rows[4], int64_t i) {
    const auto m = [&](int r) { return static_cast<uint64_t>(reinterpret_cast<const B*>(rows[r])[i].m); };
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(m(0) | m(1) << 16 | m(2) << 32 | m(3) << 48)));
}

inline __m128 min_step4(__m128 acc, __m128 mw, const ActRow& a, int64_t i) {
    return _mm_fmadd_ps(mw, _mm_set1_ps(a.sd[i]), acc);
}

// Q4_0 / Q5_0 / Q4_1 / Q5_1: unsigned quants (0..15, or 0..31 with the fifth bits) times the
// activations; Q4_0 / Q5_0 then subtract 8 / 16 times the activations' sum (Offset), Q4_1 / Q5_1
// add the canonical second step acc_r = fma(m_wr, sd_a, acc_r) (HasMin).
template <class B, bool Fifth, int Offset, bool HasMin>
void dot4_nibbles(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4], PfStream pf) {
    const __m256i ones = _mm256_set1_epi16(1), x10 = _mm256_set1_epi8(0x10);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        pf.step();
        const __m256i q = loadu(a.q + kQK * i);
        __m256i d[4];
        for (int r = 0; r < 4; ++r) {
            const B& b = reinterpret_cast<const B*>(rows[r])[i];
            __m256i u = unpack_nibbles(b.qs);
            if constexpr (Fifth) {
                uint32_t qh;
                __builtin_memcpy(&qh, b.qh, 4);
                u = _mm256_or_si256(u, _mm256_and_si256(bits_to_bytes(qh), x10));
            }
            d[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), ones);
        }
        __m128i isum = hsum4_i32(d[0], d[1], d[2], d[3]);
        if constexpr (Offset != 0) isum = _mm_sub_epi32(isum, _mm_set1_epi32(Offset * a.s[i]));
        acc = block_step4(acc, isum, scales4<B>(rows, i), a.d[i]);
        if constexpr (HasMin) acc = min_step4(acc, mins4<B>(rows, i), a, i);
    }
    _mm_storeu_ps(out, acc);
}
constexpr auto dot4_q4_0 = dot4_nibbles<BlockQ4_0, false, 8, false>;
constexpr auto dot4_q5_0 = dot4_nibbles<BlockQ5_0, true, 16, false>;
constexpr auto dot4_q4_1 = dot4_nibbles<BlockQ4_1, false, 0, true>;
constexpr auto dot4_q5_1 = dot4_nibbles<BlockQ5_1, true, 0, true>;

// ---- 32-element blocks x a batch of activation rows (prefill). Eight weight rows are decoded to
// int8 once per block and then used by every activation row of the batch, so a prompt pays for
// the unpacking (nibbles, Q5_0's fifth bits, the transposition below) once per block instead of
// once per token. After decoding, w[c] (c = 0..7) holds in 32-bit lane j weight row j's elements
// 4c..4c+3 (an 8 x 8 transposition of the rows' dwords); the activations' bytes 4c..4c+3,
// broadcast to all lanes (a plain vpbroadcastd load), then give lane j = row j's partial dot after
// maddubs: the eight rows' integer sums come out in eight lanes with no horizontal reduction, and
// acc_j = fma((float)isum_j, d_wj * d_a, acc_j) is one 8-lane fma per activation row and block,
// the canonical chain of kernel_table.h on every lane (batch size and tiling change no bit).
// Q4_0 / Q5_0 are decoded unsigned (0..15 / 0..31); -8 * s_a / -16 * s_a enters the exact
// integer sum. maddubs pairs stay below 2^15: 2 * 15 * 127 (eight int16 sums are added before
// madd), 2 * 31 * 127 (four), 2 * 128 * 127 for Q8_0 (each madd'ed alone).
struct Dec8 {
    __m256i w[8];  // the unsigned maddubs operand: Q4_0 / Q5_0 quants, Q8_0 magnitudes
    __m256i s[8];  // Q8_0 only: the signed weights (their signs move onto the activations)
    __m256 d;      // the rows' scales
    __m256 m;      // Q4_1 / Q5_1: the rows' offsets
};

inline void transpose8x8_i32(__m256i v[8]) {
    __m256i t[8], u[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]);      // rows 2k, 2k+1: dwords 0, 1 | 4, 5
        t[2 * k + 1] = _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]);  // dwords 2, 3 | 6, 7
    }
    for (int h = 0; h < 2; ++h) {  // rows 4h .. 4h+3
        u[4 * h + 0] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);      // column 0 | 4
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);      // column 1 | 5
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);  // column 2 | 6
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);  // column 3 | 7
    }
    for (int c = 0; c < 4; ++c) {
        v[c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
        v[c + 4] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
    }
}

// The fp16 at byte `off` of each of eight blocks, as floats (lane r = block r).
template <class B>
inline __m256 fp16x8(const B* const b[8], size_t off) {
    const auto h = [&](int r) { return static_cast<uint64_t>(ld16(reinterpret_cast<const uint8_t*>(b[r]) + off)); };
    const uint64_t lo = h(0) | h(1) << 16 | h(2) << 32 | h(3) << 48;
    const uint64_t hi = h(4) | h(5) << 16 | h(6) << 32 | h(7) << 48;
    return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)));
}

inline __m256i bcast4(const void* p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// off * s_a in every int32 lane, from the activation block's int16 sum at s: a broadcast load and
// one madd against (off, 0) pairs (a scalar multiply, move and broadcast took three more uops).
inline __m256i offset(const int16_t* s, int off) {
    return _mm256_madd_epi16(_mm256_set1_epi16(*s), _mm256_set1_epi32(off & 0xFFFF));
}

struct Q8_0x8 {
    using Block = BlockQ8_0;
    static void decode(const Block* const b[8], Dec8* o) {
        for (int r = 0; r < 8; ++r) o->s[r] = loadu(b[r]->qs);
        transpose8x8_i32(o->s);
        for (int c = 0; c < 8; ++c) o->w[c] = _mm256_abs_epi8(o->s[c]);
        o->d = fp16x8(b, 0);  // d is each block's first field
    }
    static __m256i isum(const Dec8& w, const int8_t* q, const int16_t*) {
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i acc = _mm256_madd_epi16(_mm256_maddubs_epi16(w.w[0], _mm256_sign_epi8(bcast4(q), w.s[0])), ones);
        for (int c = 1; c < 8; ++c) {
            const __m256i p = _mm256_maddubs_epi16(w.w[c], _mm256_sign_epi8(bcast4(q + 4 * c), w.s[c]));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
        }
        return acc;
    }
};

struct Q4_0x8 {
    using Block = BlockQ4_0;
    static void decode(const Block* const b[8], Dec8* o) {
        for (int r = 0; r < 8; ++r) o->w[r] = unpack_nibbles(b[r]->qs);
        transpose8x8_i32(o->w);
        o->d = fp16x8(b, 0);  // d is each block's first field
    }
    static __m256i isum(const Dec8& w, const int8_t* q, const int16_t* s) {
        __m256i p = _mm256_maddubs_epi16(w.w[0], bcast4(q));
        for (int c = 1; c < 8; ++c) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w.w[c], bcast4(q + 4 * c)));
        return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), offset(s, -8));
    }
};

struct Q5_0x8 {
    using Block = BlockQ5_0;
    static void decode(const Block* const b[8], Dec8* o) {
        const __m256i x10 = _mm256_set1_epi8(0x10);
        for (int r = 0; r < 8; ++r) {
            uint32_t qh;
            __builtin_memcpy(&qh, b[r]->qh, 4);
            o->w[r] = _mm256_or_si256(unpack_nibbles(b[r]->qs), _mm256_and_si256(bits_to_bytes(qh), x10));
        }
        transpose8x8_i32(o->w);
        o->d = fp16x8(b, 0);  // d is each block's first field
    }
    static __m256i isum(const Dec8& w, const int8_t* q, const int16_t* s) {
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i p0 = _mm256_maddubs_epi16(w.w[0], bcast4(q));
        __m256i p1 = _mm256_maddubs_epi16(w.w[4], bcast4(q + 16));
        for (int c = 1; c < 4; ++c) {
            p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(w.w[c], bcast4(q + 4 * c)));
            p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(w.w[c + 4], bcast4(q + 16 + 4 * c)));
        }
        const __m256i d = _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
        return _mm256_add_epi32(d, offset(s, -16));
    }
};

// IQ4_NL: the table values are signed like Q8_0's quants (|v| <= 127), so Q8_0's sums apply.
struct IQ4_NLx8 {
    using Block = BlockIQ4_NL;
    static void decode(const Block* const b[8], Dec8* o) {
        for (int r = 0; r < 8; ++r) o->s[r] = iq4_values(b[r]->qs);
        transpose8x8_i32(o->s);
        for (int c = 0; c < 8; ++c) o->w[c] = _mm256_abs_epi8(o->s[c]);
        o->d = fp16x8(b, 0);  // d is the block's first field
    }
    static __m256i isum(const Dec8& w, const int8_t* q, const int16_t* s) { return Q8_0x8::isum(w, q, s); }
};

// Q4_1 / Q5_1 as Q4_0 / Q5_0 without the offset in the integer sum (kMin: the block's m_w
// enters as a second fma per block, kernel_table.h). m is each block's second fp16 (byte 2).
struct Q4_1x8 {
    using Block = BlockQ4_1;
    static constexpr bool kMin = true;
    static void decode(const Block* const b[8], Dec8* o) {
        for (int r = 0; r < 8; ++r) o->w[r] = unpack_nibbles(b[r]->qs);
        transpose8x8_i32(o->w);
        o->d = fp16x8(b, 0);
        o->m = fp16x8(b, 2);
    }
    static __m256i isum(const Dec8& w, const int8_t* q, const int16_t*) {
        __m256i p = _mm256_maddubs_epi16(w.w[0], bcast4(q));
        for (int c = 1; c < 8; ++c) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w.w[c], bcast4(q + 4 * c)));
        return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    }
};

struct Q5_1x8 {
    using Block = BlockQ5_1;
    static constexpr bool kMin = true;
    static void decode(const Block* const b[8], Dec8* o) {
        const __m256i x10 = _mm256_set1_epi8(0x10);
        for (int r = 0; r < 8; ++r) {
            uint32_t qh;
            __builtin_memcpy(&qh, b[r]->qh, 4);
            o->w[r] = _mm256_or_si256(unpack_nibbles(b[r]->qs), _mm256_and_si256(bits_to_bytes(qh), x10));
        }
        transpose8x8_i32(o->w);
        o->d = fp16x8(b, 0);
        o->m = fp16x8(b, 2);
    }
    static __m256i isum(const Dec8& w, const int8_t* q, const int16_t*) {
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i p0 = _mm256_maddubs_epi16(w.w[0], bcast4(q));
        __m256i p1 = _mm256_maddubs_epi16(w.w[4], bcast4(q + 16));
        for (int c = 1; c < 4; ++c) {
            p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(w.w[c], bcast4(q + 4 * c)));
            p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(w.w[c + 4], bcast4(q + 16 + 4 * c)));
        }
        return _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
    }
};

// Whether a layout's blocks have an offset m_w (Q4_1 / Q5_1).
template <class L, class = void>
struct HasMin { static constexpr bool value = false; };
template <class L>
struct HasMin<L, decltype(void(L::kMin))> { static constexpr bool value = L::kMin; };

// Activation rows as a first row and strides: up to kSpan rows b0 .. b0 + n - 1, row k's quants at
// a.q + k * q, its scales at a.d + k * d, its sums at a.s + k * s. Walking them by strides instead
// of a pointer table per row saved 7% of the Q5_0 batch tile. Activations lays its rows out back to
// back (kernels_scalar.cpp); that is checked, and rows spaced otherwise go one per span.
struct ActSpan {
    ActRow a;
    int64_t q, d, s, sd;
    int n;
};
constexpr int kSpan = 64;

template <class F>
void for_act_spans(const Activations& act, F&& f) {
    const int64_t nb = act.batch();
    for (int64_t b0 = 0; b0 < nb; b0 += kSpan) {
        const int n = static_cast<int>(nb - b0 < kSpan ? nb - b0 : kSpan);
        ActSpan sp{act.row(b0), 0, 0, 0, 0, n};
        if (n > 1) {
            const ActRow a1 = act.row(b0 + 1);
            sp.q = a1.q - sp.a.q;
            sp.d = a1.d - sp.a.d;
            sp.s = a1.s - sp.a.s;
            sp.sd = sp.a.sd ? a1.sd - sp.a.sd : 0;
        }
        bool even = true;
        for (int k = 2; k < n && even; ++k) {
            const ActRow ak = act.row(b0 + k);
            even = ak.q == sp.a.q + k * sp.q && ak.d == sp.a.d + k * sp.d && ak.s == sp.a.s + k * sp.s &&
                   (!sp.a.sd || ak.sd == sp.a.sd + k * sp.sd);
        }
        if (even) {
            f(b0, sp);
        } else {
            for (int k = 0; k < n; ++k) f(b0 + k, ActSpan{act.row(b0 + k), 0, 0, 0, 0, 1});
        }
    }
}

// y rows r .. r+7 (those below r1) of activation rows b0 .. b0 + n - 1.
inline void store8(const __m256* acc, int n, float* y, int64_t ys, int64_t b0, int64_t r, int64_t r1) {
    for (int k = 0; k < n; ++k) {
        float* out = y + (b0 + k) * ys + r;
        if (r + 8 <= r1) {
            _mm256_storeu_ps(out, acc[k]);
        } else {
            float v[8];
            _mm256_storeu_ps(v, acc[k]);
            for (int e = 0; r + e < r1; ++e) out[e] = v[e];
        }
    }
}

// Groups of eight rows (a leftover row passed again: lanes are independent) against a span of
// activation rows, their accumulators on the stack (no heap allocation here, see the top of the
// file). Below kMinBatch activation rows (decode) the four-row kernel Dot4, which needs no
// transposition, is used instead.
template <class L, Row4DotPf Dot4>
void matmul_32x8(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    using B = typename L::Block;
    constexpr int kMinBatch = 2;
    if (act.batch() < kMinBatch) {
        rows4_pf<Dot4>(w, act, y, ys, r0, r1);
        return;
    }
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nblk = w.n_cols / kQK;
    for_act_spans(act, [&](int64_t b0, const ActSpan& sp) {
        __m256 acc[kSpan];
        for (int64_t r = r0; r < r1; r += 8) {
            const B* b[8];
            for (int i = 0; i < 8; ++i) b[i] = reinterpret_cast<const B*>(w.data + (r + i < r1 ? r + i : r1 - 1) * rb);
            if (r + 16 <= r1) prefetch(w.data + (r + 8) * rb, 8 * rb);
            for (int k = 0; k < sp.n; ++k) acc[k] = _mm256_setzero_ps();
            for (int64_t i = 0; i < nblk; ++i) {
                Dec8 dec;
                L::decode(b, &dec);
                for (int j = 0; j < 8; ++j) ++b[j];
                const int8_t* q = sp.a.q + kQK * i;
                const float* d = sp.a.d + i;
                const int16_t* s = sp.a.s + i;
                const float* sd = HasMin<L>::value ? sp.a.sd + i : nullptr;
                for (int k = 0; k < sp.n; ++k, q += sp.q, d += sp.d, s += sp.s, sd += HasMin<L>::value ? sp.sd : 0) {
                    const __m256i isum = L::isum(dec, q, s);
                    acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dec.d, _mm256_set1_ps(*d)), acc[k]);
                    if constexpr (HasMin<L>::value)
                        acc[k] = _mm256_fmadd_ps(dec.m, _mm256_set1_ps(*sd), acc[k]);
                }
            }
            store8(acc, sp.n, y, ys, b0, r, r1);
        }
    });
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

// ---- K-quants, eight rows x a batch (prefill): the layout of the 32-blocks above, one 32-element
// chunk of a super-block at a time. Chunk j of the eight rows is unpacked and transposed once and
// used by every activation row; its integer sums come out in eight lanes (lane r = row r), scaled
// per lane by madd against the rows' sub-block scales (two equal int16 per lane). The super-block's
// integer sums are those of dot_q4_k / dot_q6_k (exact in any order), then each (row, activation
// row) output does the canonical float steps on its own lane.
struct KScales8 {
    __m256i sc[16];  // sub-block j's scale, lane r = row r's, as two equal int16
    __m256i aux[8];  // Q4_K: sub-block j's min, likewise; Q6_K: lane r = row r's scales 2k, 2k+1
    __m256 d, dmin;
};

inline __m256i dup_lo16(__m256i v) { return _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(v, 0xA0), 0xA0); }
inline __m256i dup_hi16(__m256i v) { return _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(v, 0xF5), 0xF5); }

struct Q4_Kx8 {
    using Block = BlockQ4_K;
    static void scales(const Block* const b[8], KScales8* o) {
        constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
        __m256i v[8];
        for (int r = 0; r < 8; ++r) {
            uint32_t u[4];  // scales in bytes 0..7, mins in 8..15, as in dot_q4_k
            __builtin_memcpy(u, b[r]->scales, 12);
            u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
            const uint32_t mins_lo = u[1] & k1;
            u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
            u[2] = mins_lo;
            u[0] &= k1;
            v[r] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u)));
        }
        transpose8x8_i32(v);  // v[p], p < 4: scales 2p, 2p+1; p >= 4: mins 2(p-4), 2(p-4)+1
        for (int p = 0; p < 4; ++p) {
            o->sc[2 * p] = dup_lo16(v[p]);
            o->sc[2 * p + 1] = dup_hi16(v[p]);
            o->aux[2 * p] = dup_lo16(v[4 + p]);
            o->aux[2 * p + 1] = dup_hi16(v[4 + p]);
        }
        o->d = fp16x8(b, 0);
        o->dmin = fp16x8(b, 2);
    }
    // Sub-block j (0..7, 32 quants in 0..15): chunk j / 2's low (j even) or high nibbles.
    static void quants(const Block* const b[8], int j, __m256i w[8]) {
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        for (int r = 0; r < 8; ++r) {
            const __m256i raw = loadu(b[r]->qs + 32 * (j / 2));
            w[r] = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(raw, 4) : raw, m4);
        }
        transpose8x8_i32(w);
    }
    // Eight int16 sums of at most 2 * 15 * 127 each, then one madd with the sub-block's scales.
    static __m256i chunk(const __m256i w[8], const KScales8& s, int j, const int8_t* q) {
        __m256i p = _mm256_maddubs_epi16(w[0], bcast4(q));
        for (int c = 1; c < 8; ++c) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[c], bcast4(q + 4 * c)));
        return _mm256_madd_epi16(p, s.sc[j]);
    }
    // msum = sum_j m_j * (s_a[2j] + s_a[2j+1]); acc = fma(isum, d * d_a, acc), fma(msum, -(dmin * d_a), acc).
    static __m256 finish(const KScales8& s, const int16_t* as, float da, __m256i isum, __m256 acc) {
        __m256i m = _mm256_madd_epi16(s.aux[0], bcast4(as));
        for (int j = 1; j < 8; ++j) m = _mm256_add_epi32(m, _mm256_madd_epi16(s.aux[j], bcast4(as + 2 * j)));
        const __m256 vda = _mm256_set1_ps(da);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(s.d, vda), acc);
        return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(s.dmin, vda), acc);
    }
};

struct Q6_Kx8 {
    using Block = BlockQ6_K;
    static void scales(const Block* const b[8], KScales8* o) {
        __m256i v[8];
        for (int r = 0; r < 8; ++r) v[r] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[r]->scales)));
        transpose8x8_i32(v);  // v[k]: scales 2k, 2k+1
        for (int k = 0; k < 8; ++k) {
            o->aux[k] = v[k];
            o->sc[2 * k] = dup_lo16(v[k]);
            o->sc[2 * k + 1] = dup_hi16(v[k]);
        }
        o->d = fp16x8(b, offsetof(BlockQ6_K, d));
    }
    // Chunk j = 4h + k: elements 128h + 32k .. +31 (sub-blocks 2j, 2j+1), unpacked as dot_q6_k.
    static void quants(const Block* const b[8], int j, __m256i w[8]) {
        const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
        const int h = j / 4, k = j % 4;
        for (int r = 0; r < 8; ++r) {
            const __m256i l = loadu(b[r]->ql + 64 * h + 32 * (k & 1)), hb = loadu(b[r]->qh + 32 * h);
            const __m256i lo = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), m4);
            const __m256i hi = _mm256_and_si256(k ? _mm256_srli_epi16(hb, 2 * k) : hb, m2);
            w[r] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
        }
        transpose8x8_i32(w);
    }
    // Products of at most 2 * 63 * 127: two int16 sums per madd.
    static __m256i chunk(const __m256i w[8], const KScales8& s, int j, const int8_t* q) {
        __m256i p[4];
        for (int t = 0; t < 4; ++t)
            p[t] = _mm256_add_epi16(_mm256_maddubs_epi16(w[2 * t], bcast4(q + 8 * t)),
                                    _mm256_maddubs_epi16(w[2 * t + 1], bcast4(q + 8 * t + 4)));
        const __m256i s0 = s.sc[2 * j], s1 = s.sc[2 * j + 1];
        return _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(p[0], s0), _mm256_madd_epi16(p[1], s0)),
                                _mm256_add_epi32(_mm256_madd_epi16(p[2], s1), _mm256_madd_epi16(p[3], s1)));
    }
    // q - 32: minus 32 times the scales times each sub-block's activation sum; acc = fma(isum, d * d_a, acc).
    static __m256 finish(const KScales8& s, const int16_t* as, float da, __m256i isum, __m256 acc) {
        __m256i bias = _mm256_madd_epi16(s.aux[0], bcast4(as));
        for (int k = 1; k < 8; ++k) bias = _mm256_add_epi32(bias, _mm256_madd_epi16(s.aux[k], bcast4(as + 2 * k)));
        isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 5));
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(s.d, _mm256_set1_ps(da)), acc);
    }
};

template <class L, RowDot Dot>
void matmul_k8(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    using B = typename L::Block;
    constexpr int kMinBatch = 2;
    if (act.batch() < kMinBatch) {
        rows_seq<Dot>(w, act, y, ys, r0, r1);
        return;
    }
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nsb = w.n_cols / kQKK;
    for_act_spans(act, [&](int64_t b0, const ActSpan& sp) {
        __m256 acc[kSpan];
        __m256i isum[kSpan];
        for (int64_t r = r0; r < r1; r += 8) {
            const B* b[8];
            for (int i = 0; i < 8; ++i) b[i] = reinterpret_cast<const B*>(w.data + (r + i < r1 ? r + i : r1 - 1) * rb);
            if (r + 16 <= r1) prefetch(w.data + (r + 8) * rb, 8 * rb);
            for (int k = 0; k < sp.n; ++k) acc[k] = _mm256_setzero_ps();
            for (int64_t i = 0; i < nsb; ++i) {
                KScales8 ks;
                L::scales(b, &ks);
                for (int k = 0; k < sp.n; ++k) isum[k] = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j) {
                    __m256i wq[8];
                    L::quants(b, j, wq);
                    const int8_t* q = sp.a.q + kQKK * i + 32 * j;
                    for (int k = 0; k < sp.n; ++k, q += sp.q) isum[k] = _mm256_add_epi32(isum[k], L::chunk(wq, ks, j, q));
                }
                const float* d = sp.a.d + i;
                const int16_t* s = sp.a.s + 16 * i;
                for (int k = 0; k < sp.n; ++k, d += sp.d, s += sp.s) acc[k] = L::finish(ks, s, *d, isum[k], acc[k]);
                for (int j = 0; j < 8; ++j) ++b[j];
            }
            store8(acc, sp.n, y, ys, b0, r, r1);
        }
    });
}

// ---- Q5_K, Q3_K, Q2_K, IQ4_XS: a super-block unpacked into its 256 weights as int8 in element
// order (v[m] = elements 32m .. 32m+31) with one integer scale and min per 16 elements, then one
// step per activation row in the canonical order of kernel_table.h: isum = sum over 16-element runs
// of scale * dot and msum = sum of min * s_a, both exact integers (a 32-element sub-block's scale
// and min stand in both of its halves), then the float steps on lane 0. Q5_K and Q2_K are unsigned
// (0..31, 0..3) and Q3_K is taken as q + 4 (0..7, kernel_table.h), so maddubs takes them as they
// are and Q3_K subtracts 4 * sum(scale * s_a); IQ4_XS's table values are signed (|v| <= 127): the
// sign moves onto the activations. maddubs pairs stay below 2^15 (at most 2 * 127 * 127), then
// madd against the scales.
struct KGen8 {
    __m256i v[8];
    __m256i sc[8];   // int16: low 128-bit lane the scale of elements 32m..+15, high lane of +16..+31
    int16_t mn[16];  // per 16 elements: the mins (HasMin), or Q3_K's scales (for its offset)
    float d, dmin;
};

inline __m256i scale_pair(int lo, int hi) {
    return _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(lo)), _mm_set1_epi16(static_cast<short>(hi)));
}

// HasMin: Q5_K / Q2_K's second step; Signed: IQ4_XS; Offset: Q3_K's 4.
template <bool HasMin, bool Signed, int Offset>
inline float step_kgen(const KGen8& u, const ActRow& a, int64_t i, float acc) {
    const int8_t* q = a.q + kQKK * i;
    __m256i isum = _mm256_setzero_si256();
    for (int m = 0; m < 8; ++m) {
        const __m256i p = Signed ? _mm256_maddubs_epi16(_mm256_sign_epi8(u.v[m], u.v[m]), _mm256_sign_epi8(loadu(q + 32 * m), u.v[m]))
                                 : _mm256_maddubs_epi16(u.v[m], loadu(q + 32 * m));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, u.sc[m]));
    }
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(isum), _mm256_extracti128_si256(isum, 1));
    if constexpr (HasMin || Offset != 0) {
        // Q2_K / Q5_K: msum = sum mn * s_a; Q3_K: the offset, sum sc * s_a (mn holds the scales).
        const __m256i m = _mm256_madd_epi16(loadu(u.mn), loadu(a.s + 16 * i));
        __m128i mt = _mm_add_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
        if constexpr (Offset != 0) {
            t = _mm_sub_epi32(t, _mm_mullo_epi32(mt, _mm_set1_epi32(Offset)));  // lanes wrap; the total is exact
            t = hsum2_i32(t, t);
        } else {
            t = hsum2_i32(t, mt);  // [isum, msum, ..]
        }
    } else {
        t = hsum2_i32(t, t);
    }
    const float da = a.d[i];
    acc = fma1(static_cast<float>(_mm_cvtsi128_si32(t)), u.d * da, acc);
    if constexpr (HasMin) acc = fma1(static_cast<float>(_mm_extract_epi32(t, 1)), -(u.dmin * da), acc);
    return acc;
}

inline void unpack_q5_k(const BlockQ5_K& b, KGen8* u) {
    constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    uint32_t sm32[4];  // scales in bytes 0..7, mins in 8..15, as in dot_q4_k
    __builtin_memcpy(sm32, b.scales, 12);
    sm32[3] = ((sm32[2] >> 4) & k2) | (((sm32[1] >> 6) & k3) << 4);
    const uint32_t mins_lo = sm32[1] & k1;
    sm32[1] = (sm32[2] & k2) | (((sm32[0] >> 6) & k3) << 4);
    sm32[2] = mins_lo;
    sm32[0] &= k1;
    uint8_t sm[16];
    __builtin_memcpy(sm, sm32, 16);
    const __m256i m4 = _mm256_set1_epi8(0x0F), x10 = _mm256_set1_epi8(0x10), qh = loadu(b.qh);
    for (int m = 0; m < 8; ++m) {  // sub-block m: chunk m / 2's low (m even) or high nibbles, bit m of qh
        const __m256i raw = loadu(b.qs + 32 * (m / 2));
        const __m256i nib = _mm256_and_si256(m & 1 ? _mm256_srli_epi16(raw, 4) : raw, m4);
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1u << m));
        const __m256i hb = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit), x10);
        u->v[m] = _mm256_or_si256(nib, hb);
        u->sc[m] = scale_pair(sm[m], sm[m]);
        u->mn[2 * m] = u->mn[2 * m + 1] = sm[8 + m];
    }
    u->d = h2f(b.d);
    u->dmin = h2f(b.dmin);
}

// Q3_K and Q2_K: elements 128h + 32j + l (m = 4h + j) have their two low bits at bit 2j of byte
// 32h + l of qs.
inline __m256i low2(const uint8_t* qs, int m) {
    const __m256i raw = loadu(qs + 32 * (m / 4));
    return _mm256_and_si256(_mm256_srl_epi16(raw, _mm_cvtsi32_si128(2 * (m % 4))), _mm256_set1_epi8(3));
}

inline void unpack_q3_k(const BlockQ3_K& b, KGen8* u) {
    const __m256i hm = loadu(b.hmask), four = _mm256_set1_epi8(4);
    int8_t sc[16];
    q3k_scales16(b.scales, sc);
    for (int m = 0; m < 8; ++m) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1u << m));  // bit 4h + j of hmask[l]
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit);
        u->v[m] = _mm256_or_si256(low2(b.qs, m), _mm256_and_si256(set, four));  // q + 4 = low + 4 * high bit
        u->sc[m] = scale_pair(sc[2 * m], sc[2 * m + 1]);
    }
    for (int k = 0; k < 16; ++k) u->mn[k] = sc[k];
    u->d = h2f(b.d);
}

inline void unpack_q2_k(const BlockQ2_K& b, KGen8* u) {
    for (int m = 0; m < 8; ++m) {
        u->v[m] = low2(b.qs, m);
        u->sc[m] = scale_pair(b.scales[2 * m] & 0xF, b.scales[2 * m + 1] & 0xF);
    }
    for (int k = 0; k < 16; ++k) u->mn[k] = b.scales[k] >> 4;
    u->d = h2f(b.d);
    u->dmin = h2f(b.dmin);
}

inline void unpack_iq4_xs(const BlockIQ4_XS& b, KGen8* u) {
    for (int m = 0; m < 8; ++m) {
        u->v[m] = iq4_values(b.qs + 16 * m);
        const int ls = iq4xs_scale(m, b) - 32;
        u->sc[m] = scale_pair(ls, ls);
    }
    u->d = h2f(b.d);
}

// One activation row (decode) of Q5_K and Q3_K: the quants decoded straight into the products
// (dot_q4_k's structure), the same integers as the unpacked path, so the same bits.
float dot_q5_k_fused(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ5_K*>(w);
    const __m256i m4 = _mm256_set1_epi8(0x0F), x10 = _mm256_set1_epi8(0x10);
    constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        uint32_t u[4];  // scales in bytes 0..7, mins in 8..15, as in dot_q4_k
        __builtin_memcpy(u, b[i].scales, 12);
        u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
        const uint32_t mins_lo = u[1] & k1;
        u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
        u[2] = mins_lo;
        u[0] &= k1;
        const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
        const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        const __m128i asum = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bs)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(bs + 8)));
        const __m128i msum = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), asum);
        const __m256i qh = loadu(b[i].qh);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = loadu(b[i].qs + 32 * c);
            const __m256i blo = _mm256_set1_epi8(static_cast<char>(1u << (2 * c)));
            const __m256i bhi = _mm256_set1_epi8(static_cast<char>(1u << (2 * c + 1)));
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(raw, m4),
                                               _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, blo), blo), x10));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4),
                                               _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bhi), bhi), x10));
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

// Q3_K elements 32M..32M+31 as q + 4 (0..7): bits 2(M % 4) of half M / 4's qs, and bit M of
// hmask moved to bit 2 (shifts within a byte, so 16-bit shifts do).
template <int M>
inline __m256i q3k_u(__m256i raw, __m256i hm) {
    constexpr int J = M % 4;
    const __m256i m3 = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    __m256i lo = raw, hb = hm;
    if constexpr (J > 0) lo = _mm256_srli_epi16(raw, 2 * J);
    if constexpr (M < 2) hb = _mm256_slli_epi16(hm, 2 - M);
    if constexpr (M > 2) hb = _mm256_srli_epi16(hm, M - 2);
    return _mm256_or_si256(_mm256_and_si256(lo, m3), _mm256_and_si256(hb, four));
}

template <int M>
inline __m256i q3k_step(__m256i isum, __m256i raw, __m256i hm, __m256i sc, __m256i pick, const int8_t* q) {
    const __m256i s = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(sc, _mm256_set1_epi32(M)), pick);
    return _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(q3k_u<M>(raw, hm), loadu(q + 32 * M)), s));
}

float dot_q3_k_fused(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(w);
    // Picks int16 0 of each dword in the low 128-bit lane and int16 1 in the high one.
    const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                                          2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        int8_t sc8[16];
        q3k_scales16(b[i].scales, sc8);
        // Sixteen int16 scales: dword m holds sub-blocks 2m, 2m+1.
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc8)));
        const __m256i hm = loadu(b[i].hmask), r0 = loadu(b[i].qs), r1 = loadu(b[i].qs + 32);
        __m256i isum = q3k_step<0>(_mm256_setzero_si256(), r0, hm, sc, pick, q);
        isum = q3k_step<1>(isum, r0, hm, sc, pick, q);
        isum = q3k_step<2>(isum, r0, hm, sc, pick, q);
        isum = q3k_step<3>(isum, r0, hm, sc, pick, q);
        isum = q3k_step<4>(isum, r1, hm, sc, pick, q);
        isum = q3k_step<5>(isum, r1, hm, sc, pick, q);
        isum = q3k_step<6>(isum, r1, hm, sc, pick, q);
        isum = q3k_step<7>(isum, r1, hm, sc, pick, q);
        // The offset: 4 * sum_k sc_k * s_a[k] (lanes wrap freely; the total is exact).
        const __m256i bias = _mm256_madd_epi16(sc, loadu(a.s + 16 * i));
        const __m256i t8 = _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 2));
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(t8), _mm256_extracti128_si256(t8, 1));
        t = hsum2_i32(t, t);
        acc = fma1(static_cast<float>(_mm_cvtsi128_si32(t)), h2f(b[i].d) * a.d[i], acc);
    }
    return acc;
}

template <class B, void (*Unpack)(const B&, KGen8*), bool HasMin, bool Signed, int Offset>
float dot_kgen(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const B*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        KGen8 u;
        Unpack(b[i], &u);
        acc = step_kgen<HasMin, Signed, Offset>(u, a, i, acc);
    }
    return acc;
}

// One row at a time; a super-block is unpacked once for up to kGenBatch activation rows (prefill).
template <class B, void (*Unpack)(const B&, KGen8*), bool HasMin, bool Signed = false, int Offset = 0,
          RowDot Decode = dot_kgen<B, Unpack, HasMin, Signed, Offset>>
void matmul_kgen(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    constexpr int kGenBatch = 16;
    const int64_t nb = act.batch();
    if (nb == 1) return rows_seq<Decode>(w, act, y, ys, r0, r1);
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nsb = w.n_cols / kQKK;
    for (int64_t r = r0; r < r1; ++r) {
        const auto* b = reinterpret_cast<const B*>(w.data + r * rb);
        for (int64_t b0 = 0; b0 < nb; b0 += kGenBatch) {
            const int n = static_cast<int>(nb - b0 < kGenBatch ? nb - b0 : kGenBatch);
            ActRow a[kGenBatch];
            float acc[kGenBatch];
            for (int k = 0; k < n; ++k) {
                a[k] = act.row(b0 + k);
                acc[k] = 0.0f;
            }
            for (int64_t i = 0; i < nsb; ++i) {
                KGen8 u;
                Unpack(b[i], &u);
                for (int k = 0; k < n; ++k) acc[k] = step_kgen<HasMin, Signed, Offset>(u, a[k], i, acc[k]);
            }
            for (int k = 0; k < n; ++k) y[(b0 + k) * ys + r] = acc[k];
        }
    }
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
    ks->mm[kF32] = rows_seq<dot_f32>;
    ks->mm[kF16] = rows_seq<dot_f16>;
    ks->mm[kQ4_0] = matmul_32x8<Q4_0x8, dot4_q4_0>;
    ks->mm[kQ5_0] = matmul_32x8<Q5_0x8, dot4_q5_0>;
    ks->mm[kQ8_0] = matmul_32x8<Q8_0x8, dot4_q8_0>;
    ks->mm[kQ4_1] = matmul_32x8<Q4_1x8, dot4_q4_1>;
    ks->mm[kQ5_1] = matmul_32x8<Q5_1x8, dot4_q5_1>;
    ks->mm[kQ4_K] = matmul_k8<Q4_Kx8, dot_q4_k>;
    ks->mm[kQ6_K] = matmul_k8<Q6_Kx8, dot_q6_k>;
    ks->mm[kHm32] = tiles_seq<dot4_hm<32>>;
    ks->mm[kHm64] = tiles_seq<dot4_hm<64>>;
    ks->mm[kHm128] = tiles_seq<dot4_hm<128>>;
    ks->mm[kQ5_K] = matmul_kgen<BlockQ5_K, unpack_q5_k, true, false, 0, dot_q5_k_fused>;
    ks->mm[kQ3_K] = matmul_kgen<BlockQ3_K, unpack_q3_k, false, false, 4, dot_q3_k_fused>;
    ks->mm[kQ2_K] = matmul_kgen<BlockQ2_K, unpack_q2_k, true>;
    ks->mm[kIQ4_XS] = matmul_kgen<BlockIQ4_XS, unpack_iq4_xs, false, true>;
    ks->mm[kIQ4_NL] = matmul_32x8<IQ4_NLx8, dot4_iq4_nl>;
    ks->mm[kBF16] = rows_seq<dot_bf16>;
}

}  // namespace kern
}  // namespace hmllm
