// NEON row kernels shared by kernels_neon.cpp (ARMv8.0: vmull_s8 + vpadalq_s16) and
// kernels_neon_dotprod.cpp / kernels_neon_i8mm.cpp (vdotq_s32). Each of those files includes
// this inside an anonymous namespace, after <arm_neon.h>, with HMLLM_NEON_DOTPROD set to 0 or 1,
// so every copy is private to a file compiled with matching flags.
#ifndef HMLLM_NEON_DOTPROD
#error "define HMLLM_NEON_DOTPROD before including kernels_neon_body.h"
#endif

inline float h2f(uint16_t h) {
    __fp16 f;
    __builtin_memcpy(&f, &h, 2);
    return static_cast<float>(f);
}
inline uint16_t ld16(const uint8_t* p) { uint16_t v; __builtin_memcpy(&v, p, 2); return v; }
inline float32x4_t h2f4(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)))); }
// Four fp16 values from four places (the scales of four rows) as one float vector.
inline float32x4_t fp16x4(const uint16_t* p0, const uint16_t* p1, const uint16_t* p2, const uint16_t* p3) {
    uint16x4_t h = vdup_n_u16(0);
    h = vld1_lane_u16(p0, h, 0);
    h = vld1_lane_u16(p1, h, 1);
    h = vld1_lane_u16(p2, h, 2);
    h = vld1_lane_u16(p3, h, 3);
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

// acc + products of a and b summed in groups (only the total over lanes is meaningful for the
// baseline version: its lanes group the products differently from vdotq_s32). Products must be
// at most 16383 in magnitude in pairs, which holds since activations are clamped to +-127.
inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if HMLLM_NEON_DOTPROD
    return vdotq_s32(acc, a, b);
#else
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    p = vmlal_high_s8(p, a, b);
    return vpadalq_s16(acc, p);
#endif
}

inline int8x16_t lo_nib(uint8x16_t v) { return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))); }
inline int8x16_t hi_nib(uint8x16_t v) { return vreinterpretq_s8_u8(vshrq_n_u8(v, 4)); }

// Exactly rounded a*b + c (one fmadd), as std::fma in the scalar reference.
inline float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

// The int32 totals of four 4-lane vectors, lane r = total of v_r.
inline int32x4_t hsum4_s32(int32x4_t v0, int32x4_t v1, int32x4_t v2, int32x4_t v3) {
    return vpaddq_s32(vpaddq_s32(v0, v1), vpaddq_s32(v2, v3));
}

// F32 / F16: acc0..acc3 hold the canonical partial sums p_0..p_15 (4 per vector); then the
// 16 -> 8 -> 4 -> 2 -> 1 halvings of kernel_table.h (not vaddvq_f32, which pairs neighbours).
inline float reduce16(float32x4_t acc0, float32x4_t acc1, float32x4_t acc2, float32x4_t acc3) {
    const float32x4_t u = vaddq_f32(vaddq_f32(acc0, acc2), vaddq_f32(acc1, acc3));
    const float32x2_t v = vadd_f32(vget_low_f32(u), vget_high_f32(u));
    return vget_lane_f32(v, 0) + vget_lane_f32(v, 1);
}

float dot_f32(const uint8_t* w, const ActRow& a, int64_t n) {
    const float* x = reinterpret_cast<const float*>(w);
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0), acc2 = vdupq_n_f32(0), acc3 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = vfmaq_f32(acc0, vld1q_f32(x + i), vld1q_f32(a.f + i));
        acc1 = vfmaq_f32(acc1, vld1q_f32(x + i + 4), vld1q_f32(a.f + i + 4));
        acc2 = vfmaq_f32(acc2, vld1q_f32(x + i + 8), vld1q_f32(a.f + i + 8));
        acc3 = vfmaq_f32(acc3, vld1q_f32(x + i + 12), vld1q_f32(a.f + i + 12));
    }
    float s = reduce16(acc0, acc1, acc2, acc3);
    for (; i < n; ++i) s = fma1(x[i], a.f[i], s);
    return s;
}

float dot_f16(const uint8_t* w, const ActRow& a, int64_t n) {
    const uint16_t* x = reinterpret_cast<const uint16_t*>(w);
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0), acc2 = vdupq_n_f32(0), acc3 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const float16x8_t h0 = vreinterpretq_f16_u16(vld1q_u16(x + i));
        const float16x8_t h1 = vreinterpretq_f16_u16(vld1q_u16(x + i + 8));
        acc0 = vfmaq_f32(acc0, vcvt_f32_f16(vget_low_f16(h0)), vld1q_f32(a.f + i));
        acc1 = vfmaq_f32(acc1, vcvt_high_f32_f16(h0), vld1q_f32(a.f + i + 4));
        acc2 = vfmaq_f32(acc2, vcvt_f32_f16(vget_low_f16(h1)), vld1q_f32(a.f + i + 8));
        acc3 = vfmaq_f32(acc3, vcvt_high_f32_f16(h1), vld1q_f32(a.f + i + 12));
    }
    float s = reduce16(acc0, acc1, acc2, acc3);
    for (; i < n; ++i) s = fma1(h2f(x[i]), a.f[i], s);
    return s;
}

// BF16: the F16 kernel's order; a bf16 widens to fp32 exactly by a shift of 16.
float dot_bf16(const uint8_t* w, const ActRow& a, int64_t n) {
    const uint16_t* x = reinterpret_cast<const uint16_t*>(w);
    const auto wide = [](uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); };
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0), acc2 = vdupq_n_f32(0), acc3 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint16x8_t h0 = vld1q_u16(x + i), h1 = vld1q_u16(x + i + 8);
        acc0 = vfmaq_f32(acc0, wide(vget_low_u16(h0)), vld1q_f32(a.f + i));
        acc1 = vfmaq_f32(acc1, wide(vget_high_u16(h0)), vld1q_f32(a.f + i + 4));
        acc2 = vfmaq_f32(acc2, wide(vget_low_u16(h1)), vld1q_f32(a.f + i + 8));
        acc3 = vfmaq_f32(acc3, wide(vget_high_u16(h1)), vld1q_f32(a.f + i + 12));
    }
    float s = reduce16(acc0, acc1, acc2, acc3);
    for (; i < n; ++i) {
        const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
        float v;
        __builtin_memcpy(&v, &bits, 4);
        s = fma1(v, a.f[i], s);
    }
    return s;
}

// acc_r = fma((float)isum_r, d_wr * d_a, acc_r), four rows (lanes) at once: the canonical block step.
inline float32x4_t block_step4(float32x4_t acc, int32x4_t isum, float32x4_t dw, float da) {
    return vfmaq_f32(acc, vcvtq_f32_s32(isum), vmulq_n_f32(dw, da));
}

// The activation rows of one matmul call, looked up once. Up to 32 (the engine's default batch) on
// the stack: the call runs once per chunk of rows, so a heap allocation here would sit on the
// decode path of every matrix.
class ActRowTable {
public:
    explicit ActRowTable(const Activations& act) : n_(act.batch()) {
        if (n_ > kOnStack) heap_.resize(static_cast<size_t>(n_));
        ActRow* p = rows();
        for (int64_t b = 0; b < n_; ++b) p[b] = act.row(b);
    }
    const ActRow* at(int64_t b) const { return (n_ > kOnStack ? heap_.data() : stack_) + b; }

private:
    static constexpr int64_t kOnStack = 32;
    ActRow* rows() { return n_ > kOnStack ? heap_.data() : stack_; }
    int64_t n_;
    ActRow stack_[kOnStack];
    std::vector<ActRow> heap_;
};

// ---- 32-element blocks (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1): four weight rows (lanes) x NB activation rows at once.
// Each 4-row block is decoded to int8 once and used by all NB activation rows, so a prompt's batch
// pays for the unpacking (nibbles, Q5_0's fifth bits) once per block instead of once per token.
// Every (row, activation row) output still runs the canonical chain of kernel_table.h on its own
// lane, so NB and the tiling change no bit. Q4_0 / Q5_0 are decoded unsigned (0..15 / 0..31); the
// -8 / -16 offset enters each block's integer sum as -8 * s_a / -16 * s_a (exact).
struct Dec32 {
    int8x16_t w[4][2];  // row r: elements 0..15, 16..31
    float32x4_t d;      // the rows' scales
    float32x4_t m;      // Q4_1 / Q5_1: the rows' offsets
};

template <class B>
inline float32x4_t block_scales4(const B* const b[4]) { return fp16x4(&b[0]->d, &b[1]->d, &b[2]->d, &b[3]->d); }

struct Q8_0Rows {
    using Block = BlockQ8_0;
    static constexpr int kOffset = 0;
    static void decode(const Block* const b[4], Dec32* o) {
        for (int r = 0; r < 4; ++r) {
            o->w[r][0] = vld1q_s8(b[r]->qs);
            o->w[r][1] = vld1q_s8(b[r]->qs + 16);
        }
        o->d = block_scales4(b);
    }
};

struct Q4_0Rows {
    using Block = BlockQ4_0;
    static constexpr int kOffset = 8;
    static void decode(const Block* const b[4], Dec32* o) {
        for (int r = 0; r < 4; ++r) {
            const uint8x16_t raw = vld1q_u8(b[r]->qs);
            o->w[r][0] = lo_nib(raw);
            o->w[r][1] = hi_nib(raw);
        }
        o->d = block_scales4(b);
    }
};

// The fifth bits of four rows come in one vector (row r's 32 bits in lane r); one table lookup per
// 16 elements spreads a row's bytes over them, a per-byte shift moves bit j to bit 4, and a bit
// insert puts it above the nibble: three instructions per 16 weights.
template <class B>
inline void decode_q5(const B* const b[4], Dec32* o) {
    uint32x4_t qh = vdupq_n_u32(0);
    uint32_t w;
    __builtin_memcpy(&w, b[0]->qh, 4); qh = vsetq_lane_u32(w, qh, 0);
    __builtin_memcpy(&w, b[1]->qh, 4); qh = vsetq_lane_u32(w, qh, 1);
    __builtin_memcpy(&w, b[2]->qh, 4); qh = vsetq_lane_u32(w, qh, 2);
    __builtin_memcpy(&w, b[3]->qh, 4); qh = vsetq_lane_u32(w, qh, 3);
    const uint8x16_t bytes = vreinterpretq_u8_u32(qh);
    const int8x16_t shift = {4, 3, 2, 1, 0, -1, -2, -3, 4, 3, 2, 1, 0, -1, -2, -3};
    const uint8x16_t bit4 = vdupq_n_u8(0x10);
    const uint8x16_t pair = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int r = 0; r < 4; ++r) {
        const uint8x16_t raw = vld1q_u8(b[r]->qs);
        const uint8x16_t idx0 = vaddq_u8(pair, vdupq_n_u8(uint8_t(4 * r)));
        const uint8x16_t idx1 = vaddq_u8(pair, vdupq_n_u8(uint8_t(4 * r + 2)));
        const uint8x16_t h0 = vshlq_u8(vqtbl1q_u8(bytes, idx0), shift);
        const uint8x16_t h1 = vshlq_u8(vqtbl1q_u8(bytes, idx1), shift);
        o->w[r][0] = vreinterpretq_s8_u8(vbslq_u8(bit4, h0, vandq_u8(raw, vdupq_n_u8(0x0F))));
        o->w[r][1] = vreinterpretq_s8_u8(vbslq_u8(bit4, h1, vshrq_n_u8(raw, 4)));
    }
    o->d = block_scales4(b);
}

struct Q5_0Rows {
    using Block = BlockQ5_0;
    static constexpr int kOffset = 16;
    static void decode(const Block* const b[4], Dec32* o) { decode_q5(b, o); }
};

// Q4_1 / Q5_1: unsigned quants and no offset in the integer sum; each block's m_w times the
// activation block's fp16(d * sum) is a second fma (kMin, kernel_table.h).
template <class B>
inline float32x4_t block_mins4(const B* const b[4]) { return fp16x4(&b[0]->m, &b[1]->m, &b[2]->m, &b[3]->m); }

struct Q4_1Rows {
    using Block = BlockQ4_1;
    static constexpr int kOffset = 0;
    static constexpr bool kMin = true;
    static void decode(const Block* const b[4], Dec32* o) {
        for (int r = 0; r < 4; ++r) {
            const uint8x16_t raw = vld1q_u8(b[r]->qs);
            o->w[r][0] = lo_nib(raw);
            o->w[r][1] = hi_nib(raw);
        }
        o->d = block_scales4(b);
        o->m = block_mins4(b);
    }
};

// IQ4_NL: the nibbles index the int8 table kIq4Values (one table lookup per 16 weights), signed
// like Q8_0's quants.
struct IQ4NLRows {
    using Block = BlockIQ4_NL;
    static constexpr int kOffset = 0;
    static void decode(const Block* const b[4], Dec32* o) {
        const int8x16_t table = vld1q_s8(kIq4Values);
        for (int r = 0; r < 4; ++r) {
            const uint8x16_t raw = vld1q_u8(b[r]->qs);
            o->w[r][0] = vqtbl1q_s8(table, vandq_u8(raw, vdupq_n_u8(0x0F)));
            o->w[r][1] = vqtbl1q_s8(table, vshrq_n_u8(raw, 4));
        }
        o->d = block_scales4(b);
    }
};

struct Q5_1Rows {
    using Block = BlockQ5_1;
    static constexpr int kOffset = 0;
    static constexpr bool kMin = true;
    static void decode(const Block* const b[4], Dec32* o) {
        decode_q5(b, o);
        o->m = block_mins4(b);
    }
};

// Whether a layout's blocks have an offset m_w (Q4_1 / Q5_1).
template <class L, class = void>
struct HasMin { static constexpr bool value = false; };
template <class L>
struct HasMin<L, decltype(void(L::kMin))> { static constexpr bool value = L::kMin; };

// The canonical step of kernel_table.h for every lane, with Q4_1 / Q5_1's second fma.
template <class L>
inline float32x4_t step32(float32x4_t acc, int32x4_t isum, const Dec32& dec, const ActRow& a, int64_t i) {
    acc = block_step4(acc, isum, dec.d, a.d[i]);
    if constexpr (HasMin<L>::value) acc = vfmaq_f32(acc, dec.m, vdupq_n_f32(a.sd[i]));
    return acc;
}

// Rows rows[0..3] x activation rows a[0..NB-1]: out[k] lane r = y(row r, activation row k).
template <class L, int NB>
inline void tile32(const uint8_t* const rows[4], const ActRow* const a[NB], int64_t n, float32x4_t out[NB]) {
    using B = typename L::Block;
    const B* b[4] = {reinterpret_cast<const B*>(rows[0]), reinterpret_cast<const B*>(rows[1]),
                     reinterpret_cast<const B*>(rows[2]), reinterpret_cast<const B*>(rows[3])};
    float32x4_t acc[NB];
    for (int k = 0; k < NB; ++k) acc[k] = vdupq_n_f32(0);
    if constexpr (NB == 1) {
        // One activation row (decode): the dots run on without being zeroed per block, and a block's
        // integer sums are the running totals minus the previous ones (exact modulo 2^32, so exact).
        int32x4_t run[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
        int32x4_t prev = vdupq_n_s32(0);
        const ActRow& a0 = *a[0];
        for (int64_t i = 0; i < n / kQK; ++i) {
            Dec32 dec;
            L::decode(b, &dec);
            for (int r = 0; r < 4; ++r) ++b[r];
            const int8_t* q = a0.q + kQK * i;
            const int8x16_t ql = vld1q_s8(q), qh = vld1q_s8(q + 16);
            for (int r = 0; r < 4; ++r) run[r] = dot16(dot16(run[r], dec.w[r][0], ql), dec.w[r][1], qh);
            const int32x4_t total = hsum4_s32(run[0], run[1], run[2], run[3]);
            int32x4_t isum = vsubq_s32(total, prev);
            prev = total;
            if (L::kOffset) isum = vaddq_s32(isum, vdupq_n_s32(-L::kOffset * a0.s[i]));
            acc[0] = step32<L>(acc[0], isum, dec, a0, i);
        }
        out[0] = acc[0];
        return;
    }
    for (int64_t i = 0; i < n / kQK; ++i) {
        Dec32 dec;
        L::decode(b, &dec);
        for (int r = 0; r < 4; ++r) ++b[r];
        for (int k = 0; k < NB; ++k) {
            const int8_t* q = a[k]->q + kQK * i;
            const int8x16_t ql = vld1q_s8(q), qh = vld1q_s8(q + 16);
            const int32x4_t start = vdupq_n_s32(L::kOffset ? -L::kOffset * a[k]->s[i] : 0);
            int32x4_t s[4];
            for (int r = 0; r < 4; ++r) s[r] = dot16(dot16(vdupq_n_s32(0), dec.w[r][0], ql), dec.w[r][1], qh);
            // The offset is added after the exact integer sums, so lane r = isum_r - off * s_a.
            const int32x4_t isum = vaddq_s32(hsum4_s32(s[0], s[1], s[2], s[3]), start);
            acc[k] = step32<L>(acc[k], isum, dec, *a[k], i);
        }
    }
    for (int k = 0; k < NB; ++k) out[k] = acc[k];
}

template <class L>
void dot4_32(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
    const ActRow* ap[1] = {&a};
    float32x4_t o[1];
    tile32<L, 1>(rows, ap, n, o);
    vst1q_f32(out, o[0]);
}

[[maybe_unused]] void dot4_q8_0(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) { dot4_32<Q8_0Rows>(rows, a, n, out); }
[[maybe_unused]] void dot4_q4_0(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) { dot4_32<Q4_0Rows>(rows, a, n, out); }

template <class L, int NB>
inline void tile32_store(const uint8_t* const rows[4], const ActRow* const a[NB], int64_t n, float* y, int64_t ys,
                         int64_t r, int64_t r1, int64_t b) {
    float32x4_t o[NB];
    tile32<L, NB>(rows, a, n, o);
    for (int k = 0; k < NB; ++k) {
        float v[4];
        vst1q_f32(v, o[k]);
        for (int i = 0; i < 4 && r + i < r1; ++i) y[(b + k) * ys + r + i] = v[i];
    }
}

// Groups of four rows (a leftover row passed again: lanes are independent) against the activation
// rows in fours, then the last 1-3.
template <class L>
void matmul_32(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch(), n = w.n_cols;
    const ActRowTable rows_a(act);
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* rows[4];
        for (int i = 0; i < 4; ++i) rows[i] = w.data + (r + i < r1 ? r + i : r1 - 1) * rb;
        if (r + 8 <= r1) prefetch_bytes(rows[0] + 4 * rb, 4 * rb);
        int64_t b = 0;
        for (; b + 4 <= nb; b += 4) {
            const ActRow* ap[4] = {rows_a.at(b), rows_a.at(b + 1), rows_a.at(b + 2), rows_a.at(b + 3)};
            tile32_store<L, 4>(rows, ap, n, y, ys, r, r1, b);
        }
        for (; b < nb; ++b) {
            const ActRow* ap[1] = {rows_a.at(b)};
            tile32_store<L, 1>(rows, ap, n, y, ys, r, r1, b);
        }
    }
}

// Q6_K's q - 32: the offset times each sub-block's activation sum, taken from the super-block's
// integer sum (lanes wrap freely; their total is exact).
inline int q6k_total(int32x4_t isum, int8x16_t sc8, const int16_t* bs) {
    const int16x8_t s0 = vmovl_s8(vget_low_s8(sc8)), s1 = vmovl_high_s8(sc8);
    const int16x8_t a0 = vld1q_s16(bs), a1 = vld1q_s16(bs + 8);
    int32x4_t bias = vmull_s16(vget_low_s16(s0), vget_low_s16(a0));
    bias = vmlal_high_s16(bias, s0, a0);
    bias = vmlal_s16(bias, vget_low_s16(s1), vget_low_s16(a1));
    bias = vmlal_high_s16(bias, s1, a1);
    return vaddvq_s32(vsubq_s32(isum, vshlq_n_s32(bias, 5)));
}

// Q4_K's 12 bytes of 6-bit scales and mins: scales to bytes 0..7, mins to bytes 8..15 (the bit
// layout of q4k_scale_min, four sub-blocks per 32-bit word).
inline void q4k_scales_mins(const uint8_t packed[12], uint8_t out[16]) {
    constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    uint32_t u[4];
    __builtin_memcpy(u, packed, 12);
    u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
    const uint32_t mins_lo = u[1] & k1;
    u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
    u[2] = mins_lo;
    u[0] &= k1;
    __builtin_memcpy(out, u, 16);
}

// Q6_K, one activation row (decode): the super-block's integer sums reduced exactly, then its float
// step, straight from the weights (unpacking into Q6KUnpacked first spills registers).
float dot_q6_k(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x03);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = b[i].ql + 64 * h;
            const uint8_t* qh = b[i].qh + 32 * h;
            const int8_t* sc = b[i].scales + 8 * h;
            const int8_t* q = a.q + kQKK * i + 128 * h;
            for (int t = 0; t < 2; ++t) {  // l in 16t .. 16t+15
                const uint8x16_t l0 = vld1q_u8(ql + 16 * t), l1 = vld1q_u8(ql + 32 + 16 * t);
                const uint8x16_t hb = vld1q_u8(qh + 16 * t);
                const uint8x16_t v[4] = {
                    vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hb, m2), 4)),
                    vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4)),
                    vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4)),
                    vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)),
                };
                for (int k = 0; k < 4; ++k) {  // elements 32k + 16t .. +15: sub-block 2k + t
                    const int32x4_t s = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(v[k]), vld1q_s8(q + 32 * k + 16 * t));
                    isum = vmlaq_n_s32(isum, s, sc[2 * k + t]);
                }
            }
        }
        const int total = q6k_total(isum, vld1q_s8(b[i].scales), a.s + 16 * i);
        acc = fma1(static_cast<float>(total), h2f(b[i].d) * a.d[i], acc);
    }
    return acc;
}

// K-quants, one activation row (decode), four weight rows at once (lane r = row r): each chunk of
// activations and their sums is loaded once for the four rows, the rows' integer totals come out
// of one pairwise-add tree instead of four horizontal adds, and the float steps run as one vector.
// Every lane does its row's canonical super-block steps.
void dot4_q4_k(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
    const BlockQ4_K* b[4];
    for (int r = 0; r < 4; ++r) b[r] = reinterpret_cast<const BlockQ4_K*>(rows[r]);
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        // Mins times the activation sums of their 32 elements (two 16-sums each).
        const int16x8_t asum = vpaddq_s16(vld1q_s16(bs), vld1q_s16(bs + 8));
        uint8_t sc[4][16];
        int32x4_t isum[4], mv[4];
        for (int r = 0; r < 4; ++r) {
            q4k_scales_mins(b[r][i].scales, sc[r]);
            const int16x8_t mn = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sc[r] + 8)));
            mv[r] = vmlal_high_s16(vmull_s16(vget_low_s16(mn), vget_low_s16(asum)), mn, asum);
            isum[r] = vdupq_n_s32(0);
        }
        for (int c = 0; c < 4; ++c) {
            const int8x16x4_t x = vld1q_s8_x4(q + 64 * c);
            for (int r = 0; r < 4; ++r) {
                const uint8x16_t r0 = vld1q_u8(b[r][i].qs + 32 * c), r1 = vld1q_u8(b[r][i].qs + 32 * c + 16);
                const int32x4_t slo = dot16(dot16(vdupq_n_s32(0), lo_nib(r0), x.val[0]), lo_nib(r1), x.val[1]);
                const int32x4_t shi = dot16(dot16(vdupq_n_s32(0), hi_nib(r0), x.val[2]), hi_nib(r1), x.val[3]);
                isum[r] = vmlaq_n_s32(isum[r], slo, sc[r][2 * c]);
                isum[r] = vmlaq_n_s32(isum[r], shi, sc[r][2 * c + 1]);
            }
        }
        const int32x4_t it = hsum4_s32(isum[0], isum[1], isum[2], isum[3]);
        const int32x4_t mt = hsum4_s32(mv[0], mv[1], mv[2], mv[3]);
        const float da = a.d[i];
        const float32x4_t d = fp16x4(&b[0][i].d, &b[1][i].d, &b[2][i].d, &b[3][i].d);
        const float32x4_t dmin = fp16x4(&b[0][i].dmin, &b[1][i].dmin, &b[2][i].dmin, &b[3][i].dmin);
        acc = vfmaq_f32(acc, vcvtq_f32_s32(it), vmulq_n_f32(d, da));
        acc = vfmaq_f32(acc, vcvtq_f32_s32(mt), vnegq_f32(vmulq_n_f32(dmin, da)));
    }
    vst1q_f32(out, acc);
}

// ---- K-quants: one weight row x NB activation rows. A super-block's scales and quants are
// unpacked once and used by every activation row of the tile; each (row, activation row) output
// keeps its own float accumulator and does the super-block's canonical float steps.

// Q4_K: the 6-bit scales in bytes 0..7 and the mins in bytes 8..15 of sc (the bit layout of
// q4k_scale_min, four sub-blocks per 32-bit word), and the 256 quants as 16 vectors of nibbles,
// w[2c] / w[2c+1] holding sub-block 2c (elements 0..31 of chunk c) and w[8+..] sub-block 2c+1.
struct Q4KUnpacked {
    uint8_t sc[16];
    int8x16_t w[16];
    float d, dmin;
};

inline void unpack_q4_k(const BlockQ4_K& b, Q4KUnpacked* u) {
    q4k_scales_mins(b.scales, u->sc);
    for (int c = 0; c < 4; ++c) {
        const uint8x16_t r0 = vld1q_u8(b.qs + 32 * c), r1 = vld1q_u8(b.qs + 32 * c + 16);
        u->w[4 * c] = lo_nib(r0);
        u->w[4 * c + 1] = lo_nib(r1);
        u->w[4 * c + 2] = hi_nib(r0);
        u->w[4 * c + 3] = hi_nib(r1);
    }
    u->d = h2f(b.d);
    u->dmin = h2f(b.dmin);
}

inline float step_q4_k(const Q4KUnpacked& u, const ActRow& a, int64_t i, float acc) {
    const int8_t* q = a.q + kQKK * i;
    const int16_t* bs = a.s + 16 * i;
    // Mins times the activation sums of their 32 elements (two 16-sums each).
    const int16x8_t asum = vpaddq_s16(vld1q_s16(bs), vld1q_s16(bs + 8));
    const int16x8_t mn = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(u.sc + 8)));
    const int msum = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(mn), vget_low_s16(asum)), mn, asum));
    int32x4_t isum = vdupq_n_s32(0);
    for (int c = 0; c < 4; ++c) {
        const int8_t* qc = q + 64 * c;
        int32x4_t slo = dot16(vdupq_n_s32(0), u.w[4 * c], vld1q_s8(qc));
        slo = dot16(slo, u.w[4 * c + 1], vld1q_s8(qc + 16));
        int32x4_t shi = dot16(vdupq_n_s32(0), u.w[4 * c + 2], vld1q_s8(qc + 32));
        shi = dot16(shi, u.w[4 * c + 3], vld1q_s8(qc + 48));
        isum = vmlaq_n_s32(isum, slo, u.sc[2 * c]);
        isum = vmlaq_n_s32(isum, shi, u.sc[2 * c + 1]);
    }
    const float da = a.d[i];
    acc = fma1(static_cast<float>(vaddvq_s32(isum)), u.d * da, acc);
    return fma1(static_cast<float>(msum), -(u.dmin * da), acc);
}

// Q6_K: the 256 values as 16 vectors of 0..63, v[4(2h + t) + k] = elements 128h + 32k + 16t ..+15
// (sub-block 8h + 2k + t), and the 16 scales.
struct Q6KUnpacked {
    int8x16_t v[16];
    int8x16_t sc;
    float d;
};

inline void unpack_q6_k(const BlockQ6_K& b, Q6KUnpacked* u) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x03);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        for (int t = 0; t < 2; ++t) {
            const uint8x16_t l0 = vld1q_u8(ql + 16 * t), l1 = vld1q_u8(ql + 32 + 16 * t);
            const uint8x16_t hb = vld1q_u8(qh + 16 * t);
            int8x16_t* v = u->v + 4 * (2 * h + t);
            v[0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hb, m2), 4)));
            v[1] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4)));
            v[2] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4)));
            v[3] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)));
        }
    }
    u->sc = vld1q_s8(b.scales);
    u->d = h2f(b.d);
}

inline float step_q6_k(const Q6KUnpacked& u, const ActRow& a, int64_t i, float acc) {
    alignas(16) int8_t sc[16];
    vst1q_s8(sc, u.sc);
    int32x4_t isum = vdupq_n_s32(0);
    for (int h = 0; h < 2; ++h) {
        const int8_t* q = a.q + kQKK * i + 128 * h;
        for (int t = 0; t < 2; ++t)
            for (int k = 0; k < 4; ++k) {  // elements 32k + 16t .. +15: sub-block 2k + t
                const int32x4_t d = dot16(vdupq_n_s32(0), u.v[4 * (2 * h + t) + k], vld1q_s8(q + 32 * k + 16 * t));
                isum = vmlaq_n_s32(isum, d, sc[8 * h + 2 * k + t]);
            }
    }
    const int total = q6k_total(isum, u.sc, a.s + 16 * i);
    return fma1(static_cast<float>(total), u.d * a.d[i], acc);
}

// decode: the matmul of one activation row.
struct Q4KRow {
    static constexpr MatmulFn decode = matmul_rows4<dot4_q4_k>;
    using Block = BlockQ4_K;
    using Unpacked = Q4KUnpacked;
    static void unpack(const Block& b, Unpacked* u) { unpack_q4_k(b, u); }
    static float step(const Unpacked& u, const ActRow& a, int64_t i, float acc) { return step_q4_k(u, a, i, acc); }
};
struct Q6KRow {
    // One row at a time: Q4_K's four-row scheme counted more here (Gemma 3 270M decode on
    // cortex-a76: 9.5 -> 10.1 M instructions per token in Q6_K matmuls).
    static constexpr MatmulFn decode = matmul_rows<dot_q6_k>;
    using Block = BlockQ6_K;
    using Unpacked = Q6KUnpacked;
    static void unpack(const Block& b, Unpacked* u) { unpack_q6_k(b, u); }
    static float step(const Unpacked& u, const ActRow& a, int64_t i, float acc) { return step_q6_k(u, a, i, acc); }
};

// ---- Q5_K, Q3_K, Q2_K, IQ4_XS: a super-block unpacked into its 256 weights as int8 in element
// order (v[k] = elements 16k .. 16k+15, Q3_K already signed -4..3, IQ4_XS the table's values) and
// one integer scale and min per 16 elements; then one step per activation row, the canonical
// order of kernel_table.h: isum = sum_k sc[k] * dot(v[k], a) and msum = sum_k mn[k] * s_a[k]
// (exact integers; a 32-element sub-block's scale and min stand in both of its halves, which gives
// the same integers as sc_j * dot_j and m_j * (s_a[2j] + s_a[2j+1])), then the float steps.
struct KGen {
    int8x16_t v[16];
    int16_t sc[16];
    int16_t mn[16];  // only for the types with mins (HasMin)
    float d, dmin;
};

// Pairs: the scale is per 32 elements (Q5_K, IQ4_XS), so both halves' dots take one multiply.
template <bool HasMin, bool Pairs>
inline float step_kgen(const KGen& u, const ActRow& a, int64_t i, float acc) {
    const int8_t* q = a.q + kQKK * i;
    int32x4_t isum = vdupq_n_s32(0);
    if constexpr (Pairs) {
        for (int j = 0; j < 8; ++j) {
            const int32x4_t d = dot16(dot16(vdupq_n_s32(0), u.v[2 * j], vld1q_s8(q + 32 * j)), u.v[2 * j + 1], vld1q_s8(q + 32 * j + 16));
            isum = vmlaq_n_s32(isum, d, u.sc[2 * j]);
        }
    } else {
        for (int k = 0; k < 16; ++k) isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), u.v[k], vld1q_s8(q + 16 * k)), u.sc[k]);
    }
    const float da = a.d[i];
    acc = fma1(static_cast<float>(vaddvq_s32(isum)), u.d * da, acc);
    if constexpr (HasMin) {
        const int16_t* bs = a.s + 16 * i;
        const int16x8_t m0 = vld1q_s16(u.mn), m1 = vld1q_s16(u.mn + 8);
        const int16x8_t s0 = vld1q_s16(bs), s1 = vld1q_s16(bs + 8);
        int32x4_t m = vmull_s16(vget_low_s16(m0), vget_low_s16(s0));
        m = vmlal_high_s16(m, m0, s0);
        m = vmlal_s16(m, vget_low_s16(m1), vget_low_s16(s1));
        m = vmlal_high_s16(m, m1, s1);
        acc = fma1(static_cast<float>(vaddvq_s32(m)), -(u.dmin * da), acc);
    }
    return acc;
}

inline void unpack_q5_k(const BlockQ5_K& b, KGen* u) {
    uint8_t sm[16];
    q4k_scales_mins(b.scales, sm);
    const uint8x16_t qh[2] = {vld1q_u8(b.qh), vld1q_u8(b.qh + 16)};
    for (int c = 0; c < 4; ++c) {
        const uint8x16_t r[2] = {vld1q_u8(b.qs + 32 * c), vld1q_u8(b.qs + 32 * c + 16)};
        for (int k = 4 * c; k < 4 * c + 4; ++k) {  // elements 16k..: sub-block j = k / 2, half t = k % 2
            const int j = k / 2, t = k % 2;
            const uint8x16_t nib = j % 2 ? vshrq_n_u8(r[t], 4) : vandq_u8(r[t], vdupq_n_u8(0x0F));
            const uint8x16_t hb = vandq_u8(vtstq_u8(qh[t], vdupq_n_u8(uint8_t(1u << j))), vdupq_n_u8(0x10));
            u->v[k] = vreinterpretq_s8_u8(vorrq_u8(nib, hb));
            u->sc[k] = sm[j];
            u->mn[k] = sm[8 + j];
        }
    }
    u->d = h2f(b.d);
    u->dmin = h2f(b.dmin);
}

// Q3_K and Q2_K: elements 128h + 32j + l have their two low bits at bit 2j of byte 32h + l of qs.
inline uint8x16_t low2(const uint8_t* qs, int k) {
    const int h = k / 8, j = (k % 8) / 2, t = k % 2;
    const uint8x16_t raw = vld1q_u8(qs + 32 * h + 16 * t);
    return vandq_u8(vshlq_u8(raw, vdupq_n_s8(int8_t(-2 * j))), vdupq_n_u8(3));
}

inline void unpack_q3_k(const BlockQ3_K& b, KGen* u) {
    const uint8x16_t hm[2] = {vld1q_u8(b.hmask), vld1q_u8(b.hmask + 16)};
    int8_t sc[16];
    q3k_scales16(b.scales, sc);
    for (int k = 0; k < 16; ++k) {
        const int h = k / 8, j = (k % 8) / 2, t = k % 2;
        const uint8x16_t set = vtstq_u8(hm[t], vdupq_n_u8(uint8_t(1u << (4 * h + j))));
        // q = low - 4 where the high bit is clear.
        u->v[k] = vreinterpretq_s8_u8(vsubq_u8(low2(b.qs, k), vbicq_u8(vdupq_n_u8(4), set)));
        u->sc[k] = sc[k];
    }
    u->d = h2f(b.d);
}

inline void unpack_q2_k(const BlockQ2_K& b, KGen* u) {
    for (int k = 0; k < 16; ++k) {
        u->v[k] = vreinterpretq_s8_u8(low2(b.qs, k));
        u->sc[k] = b.scales[k] & 0xF;
        u->mn[k] = b.scales[k] >> 4;
    }
    u->d = h2f(b.d);
    u->dmin = h2f(b.dmin);
}

inline void unpack_iq4_xs(const BlockIQ4_XS& b, KGen* u) {
    const int8x16_t table = vld1q_s8(kIq4Values);
    for (int j = 0; j < 8; ++j) {
        const uint8x16_t raw = vld1q_u8(b.qs + 16 * j);
        u->v[2 * j] = vqtbl1q_s8(table, vandq_u8(raw, vdupq_n_u8(0x0F)));
        u->v[2 * j + 1] = vqtbl1q_s8(table, vshrq_n_u8(raw, 4));
        u->sc[2 * j] = u->sc[2 * j + 1] = static_cast<int16_t>(iq4xs_scale(j, b) - 32);
    }
    u->d = h2f(b.d);
}

// One activation row (decode): the quants decoded straight into the dots, with the shifts as
// immediates, instead of through KGen (the same integers, so the same bits). Q3_K is taken as
// q + 4 (0..7) and 4 * sum_k sc_k * s_a[k] subtracted (kernel_table.h).
// Bits 2J, 2J+1 of each byte.
template <int J>
inline uint8x16_t bits2(uint8x16_t v) {
    if constexpr (J == 0) return vandq_u8(v, vdupq_n_u8(3));
    else return vandq_u8(vshrq_n_u8(v, 2 * J), vdupq_n_u8(3));
}

template <int J>
inline int32x4_t q3k_quarter(int32x4_t isum, const uint8x16_t qv[2], const uint8x16_t hm[2], int h,
                             const int8_t* sc, const int8_t* q) {
    const uint8x16_t four = vdupq_n_u8(4), bit = vdupq_n_u8(uint8_t(1u << (4 * h + J)));
    for (int t = 0; t < 2; ++t) {
        const uint8x16_t u = vorrq_u8(bits2<J>(qv[t]), vandq_u8(vtstq_u8(hm[t], bit), four));
        const int32x4_t d = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u), vld1q_s8(q + 128 * h + 32 * J + 16 * t));
        isum = vmlaq_n_s32(isum, d, sc[8 * h + 2 * J + t]);
    }
    return isum;
}

float dot_q3_k_fused(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        int8_t sc[16];
        q3k_scales16(b[i].scales, sc);
        const int8_t* q = a.q + kQKK * i;
        const uint8x16_t hm[2] = {vld1q_u8(b[i].hmask), vld1q_u8(b[i].hmask + 16)};
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t qv[2] = {vld1q_u8(b[i].qs + 32 * h), vld1q_u8(b[i].qs + 32 * h + 16)};
            isum = q3k_quarter<0>(isum, qv, hm, h, sc, q);
            isum = q3k_quarter<1>(isum, qv, hm, h, sc, q);
            isum = q3k_quarter<2>(isum, qv, hm, h, sc, q);
            isum = q3k_quarter<3>(isum, qv, hm, h, sc, q);
        }
        // The offset: 4 * sum_k sc_k * s_a[k] (lanes wrap freely; the total is exact).
        const int8x16_t sc8 = vld1q_s8(sc);
        const int16x8_t s0 = vmovl_s8(vget_low_s8(sc8)), s1 = vmovl_high_s8(sc8);
        const int16_t* bs = a.s + 16 * i;
        const int16x8_t a0 = vld1q_s16(bs), a1 = vld1q_s16(bs + 8);
        int32x4_t bias = vmull_s16(vget_low_s16(s0), vget_low_s16(a0));
        bias = vmlal_high_s16(bias, s0, a0);
        bias = vmlal_s16(bias, vget_low_s16(s1), vget_low_s16(a1));
        bias = vmlal_high_s16(bias, s1, a1);
        const int total = vaddvq_s32(vsubq_s32(isum, vshlq_n_s32(bias, 2)));
        acc = fma1(static_cast<float>(total), h2f(b[i].d) * a.d[i], acc);
    }
    return acc;
}

template <int J>
inline int32x4_t q2k_quarter(int32x4_t isum, const uint8x16_t qv[2], int h, const uint8_t* scales, const int8_t* q) {
    for (int t = 0; t < 2; ++t) {
        const uint8x16_t u = bits2<J>(qv[t]);
        const int32x4_t d = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u), vld1q_s8(q + 128 * h + 32 * J + 16 * t));
        isum = vmlaq_n_s32(isum, d, scales[8 * h + 2 * J + t] & 0xF);
    }
    return isum;
}

float dot_q2_k_fused(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t qv[2] = {vld1q_u8(b[i].qs + 32 * h), vld1q_u8(b[i].qs + 32 * h + 16)};
            isum = q2k_quarter<0>(isum, qv, h, b[i].scales, q);
            isum = q2k_quarter<1>(isum, qv, h, b[i].scales, q);
            isum = q2k_quarter<2>(isum, qv, h, b[i].scales, q);
            isum = q2k_quarter<3>(isum, qv, h, b[i].scales, q);
        }
        // msum = sum_k (scales[k] >> 4) * s_a[k].
        const uint8x16_t mn = vshrq_n_u8(vld1q_u8(b[i].scales), 4);
        const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn))), m1 = vreinterpretq_s16_u16(vmovl_high_u8(mn));
        const int16_t* bs = a.s + 16 * i;
        const int16x8_t a0 = vld1q_s16(bs), a1 = vld1q_s16(bs + 8);
        int32x4_t m = vmull_s16(vget_low_s16(m0), vget_low_s16(a0));
        m = vmlal_high_s16(m, m0, a0);
        m = vmlal_s16(m, vget_low_s16(m1), vget_low_s16(a1));
        m = vmlal_high_s16(m, m1, a1);
        const float da = a.d[i];
        acc = fma1(static_cast<float>(vaddvq_s32(isum)), h2f(b[i].d) * da, acc);
        acc = fma1(static_cast<float>(vaddvq_s32(m)), -(h2f(b[i].dmin) * da), acc);
    }
    return acc;
}

float dot_q5_k_fused(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockQ5_K*>(w);
    const uint8x16_t x10 = vdupq_n_u8(0x10);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        const int16_t* bs = a.s + 16 * i;
        uint8_t sc[16];
        q4k_scales_mins(b[i].scales, sc);
        const int16x8_t asum = vpaddq_s16(vld1q_s16(bs), vld1q_s16(bs + 8));
        const int16x8_t mn = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sc + 8)));
        const int msum = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(mn), vget_low_s16(asum)), mn, asum));
        const uint8x16_t qh[2] = {vld1q_u8(b[i].qh), vld1q_u8(b[i].qh + 16)};
        int32x4_t isum = vdupq_n_s32(0);
        for (int c = 0; c < 4; ++c) {
            const uint8x16_t r[2] = {vld1q_u8(b[i].qs + 32 * c), vld1q_u8(b[i].qs + 32 * c + 16)};
            const uint8x16_t blo = vdupq_n_u8(uint8_t(1u << (2 * c))), bhi = vdupq_n_u8(uint8_t(1u << (2 * c + 1)));
            const int8_t* qc = q + 64 * c;
            int32x4_t slo = vdupq_n_s32(0), shi = vdupq_n_s32(0);
            for (int t = 0; t < 2; ++t) {
                const uint8x16_t lo = vorrq_u8(vandq_u8(r[t], vdupq_n_u8(0x0F)), vandq_u8(vtstq_u8(qh[t], blo), x10));
                const uint8x16_t hi = vorrq_u8(vshrq_n_u8(r[t], 4), vandq_u8(vtstq_u8(qh[t], bhi), x10));
                slo = dot16(slo, vreinterpretq_s8_u8(lo), vld1q_s8(qc + 16 * t));
                shi = dot16(shi, vreinterpretq_s8_u8(hi), vld1q_s8(qc + 32 + 16 * t));
            }
            isum = vmlaq_n_s32(isum, slo, sc[2 * c]);
            isum = vmlaq_n_s32(isum, shi, sc[2 * c + 1]);
        }
        const float da = a.d[i];
        acc = fma1(static_cast<float>(vaddvq_s32(isum)), h2f(b[i].d) * da, acc);
        acc = fma1(static_cast<float>(msum), -(h2f(b[i].dmin) * da), acc);
    }
    return acc;
}

float dot_iq4_xs_fused(const uint8_t* w, const ActRow& a, int64_t n) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(w);
    const int8x16_t table = vld1q_s8(kIq4Values);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const int8_t* q = a.q + kQKK * i;
        int32x4_t isum = vdupq_n_s32(0);
        for (int j = 0; j < 8; ++j) {
            const uint8x16_t raw = vld1q_u8(b[i].qs + 16 * j);
            int32x4_t d = dot16(vdupq_n_s32(0), vqtbl1q_s8(table, vandq_u8(raw, vdupq_n_u8(0x0F))), vld1q_s8(q + 32 * j));
            d = dot16(d, vqtbl1q_s8(table, vshrq_n_u8(raw, 4)), vld1q_s8(q + 32 * j + 16));
            isum = vmlaq_n_s32(isum, d, iq4xs_scale(j, b[i]) - 32);
        }
        acc = fma1(static_cast<float>(vaddvq_s32(isum)), h2f(b[i].d) * a.d[i], acc);
    }
    return acc;
}

template <class B, void (*Unpack)(const B&, KGen*), bool HasMin, bool Pairs, RowDot Dot>
struct KGenRow {
    static constexpr MatmulFn decode = matmul_rows<Dot>;  // one row at a time
    using Block = B;
    using Unpacked = KGen;
    static void unpack(const Block& b, Unpacked* u) { Unpack(b, u); }
    static float step(const Unpacked& u, const ActRow& a, int64_t i, float acc) { return step_kgen<HasMin, Pairs>(u, a, i, acc); }
};
using Q5KRow = KGenRow<BlockQ5_K, unpack_q5_k, true, true, dot_q5_k_fused>;
using Q3KRow = KGenRow<BlockQ3_K, unpack_q3_k, false, false, dot_q3_k_fused>;
using Q2KRow = KGenRow<BlockQ2_K, unpack_q2_k, true, false, dot_q2_k_fused>;
using IQ4XSRow = KGenRow<BlockIQ4_XS, unpack_iq4_xs, false, true, dot_iq4_xs_fused>;

// One row against activation rows a[0..nb-1] (nb <= 4), super-block by super-block.
template <class K>
inline void row_k(const uint8_t* w, const ActRow* a, int nb, int64_t n, float* out) {
    const auto* b = reinterpret_cast<const typename K::Block*>(w);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n / kQKK; ++i) {
        typename K::Unpacked u;
        K::unpack(b[i], &u);
        for (int k = 0; k < nb; ++k) acc[k] = K::step(u, a[k], i, acc[k]);
    }
    for (int k = 0; k < nb; ++k) out[k] = acc[k];
}

template <class K>
void matmul_k(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const int64_t nb = act.batch();
    if (nb == 1) return K::decode(w, act, y, ys, r0, r1);
    const size_t rb = row_bytes(w.type, w.n_cols);
    const ActRowTable rows_a(act);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + r * rb;
        if (r + 2 < r1) prefetch_bytes(row + 2 * rb, rb);
        for (int64_t b = 0; b < nb; b += 4) {
            const int k = static_cast<int>(nb - b < 4 ? nb - b : 4);
            float o[4];
            row_k<K>(row, rows_a.at(b), k, w.n_cols, o);
            for (int j = 0; j < k; ++j) y[(b + j) * ys + r] = o[j];
        }
    }
}

// One 32-column chunk of an HM_Q4 tile-group (64 bytes at p) against 32 activations: start + the
// int32 dot of each of the 4 rows, lane r = row r. Callers pass start = -8 * s_a in every lane,
// so the chain ends at isum - 8 * s_a (integers: exact in any order).
inline int32x4_t hm_chunk(int32x4_t start, const uint8_t* p, const int8_t* q) {
    const uint8x16_t v0 = vld1q_u8(p), v1 = vld1q_u8(p + 16), v2 = vld1q_u8(p + 32), v3 = vld1q_u8(p + 48);
    const int8x16_t alo = vld1q_s8(q), ahi = vld1q_s8(q + 16);
#if HMLLM_NEON_DOTPROD
    int32x4_t acc = vdotq_laneq_s32(start, lo_nib(v0), alo, 0);
    acc = vdotq_laneq_s32(acc, lo_nib(v1), alo, 1);
    acc = vdotq_laneq_s32(acc, lo_nib(v2), alo, 2);
    acc = vdotq_laneq_s32(acc, lo_nib(v3), alo, 3);
    acc = vdotq_laneq_s32(acc, hi_nib(v0), ahi, 0);
    acc = vdotq_laneq_s32(acc, hi_nib(v1), ahi, 1);
    acc = vdotq_laneq_s32(acc, hi_nib(v2), ahi, 2);
    acc = vdotq_laneq_s32(acc, hi_nib(v3), ahi, 3);
    return acc;
#else
    // Products of (rows 0-1) and (rows 2-3) in int16 (8 of at most 15 * 127 per lane), then
    // pairwise adds down to one lane per row.
    const int32x4_t al = vreinterpretq_s32_s8(alo), ah = vreinterpretq_s32_s8(ahi);
    const int8x16_t w[8] = {lo_nib(v0), lo_nib(v1), lo_nib(v2), lo_nib(v3),
                            hi_nib(v0), hi_nib(v1), hi_nib(v2), hi_nib(v3)};
    const int8x16_t x[8] = {
        vreinterpretq_s8_s32(vdupq_laneq_s32(al, 0)), vreinterpretq_s8_s32(vdupq_laneq_s32(al, 1)),
        vreinterpretq_s8_s32(vdupq_laneq_s32(al, 2)), vreinterpretq_s8_s32(vdupq_laneq_s32(al, 3)),
        vreinterpretq_s8_s32(vdupq_laneq_s32(ah, 0)), vreinterpretq_s8_s32(vdupq_laneq_s32(ah, 1)),
        vreinterpretq_s8_s32(vdupq_laneq_s32(ah, 2)), vreinterpretq_s8_s32(vdupq_laneq_s32(ah, 3))};
    int16x8_t p01 = vmull_s8(vget_low_s8(w[0]), vget_low_s8(x[0]));
    int16x8_t p23 = vmull_high_s8(w[0], x[0]);
    for (int k = 1; k < 8; ++k) {
        p01 = vmlal_s8(p01, vget_low_s8(w[k]), vget_low_s8(x[k]));
        p23 = vmlal_high_s8(p23, w[k], x[k]);
    }
    return vaddq_s32(start, vpaddq_s32(vpaddlq_s16(p01), vpaddlq_s16(p23)));
#endif
}

// Chunk J (0..3) of a 4-chunk step: its offset and activation scale are lane J of noff / da.
// acc_r = fma((float)(isum_r - 8 * s_a), d_wr * d_a, acc_r): the canonical step, per lane.
template <int J>
inline float32x4_t hm_step(float32x4_t acc, const uint8_t* p, const int8_t* q, int32x4_t noff,
                           float32x4_t ws, float32x4_t da) {
    const int32x4_t isum = hm_chunk(vdupq_laneq_s32(noff, J), p, q);
    return vfmaq_f32(acc, vcvtq_f32_s32(isum), vmulq_laneq_f32(ws, da, J));
}

// A 4-row tile: 4 chunks (128 columns) per step whatever G is (G32: 4 tile-groups, G64: 2, G128:
// 1), so the four sdot chains are independent and the per-chunk -8 * s_a and d_a come from one
// vector load of 4 each; the float steps stay one fma per chunk, in chunk order.
template <int G>
__attribute__((always_inline)) inline void dot4_hm(const uint8_t* tile, const ActRow& a, int64_t n, float out[4]) {
    constexpr int kC = G / 32;              // chunks per tile-group
    constexpr int64_t kTgb = hm_tile_group_bytes(G);
    constexpr int kGroups = 4 / kC;         // tile-groups per step
    static_assert(G == 32 || G == 64 || G == 128, "HM_Q4 group size");
    float32x4_t acc = vdupq_n_f32(0);
    const int64_t nblk = n / 32;
    int64_t blk = 0;
    const uint8_t* p = tile;
    for (; blk + 4 <= nblk; blk += 4, p += kGroups * kTgb) {
        const int32x4_t noff = vmulq_n_s32(vmovl_s16(vld1_s16(a.s + blk)), -8);
        const float32x4_t da = vld1q_f32(a.d + blk);
        const int8_t* q = a.q + 32 * blk;
        float32x4_t ws[kGroups];
        for (int g = 0; g < kGroups; ++g) ws[g] = h2f4(p + g * kTgb);
        acc = hm_step<0>(acc, p + 8, q, noff, ws[0], da);
        acc = hm_step<1>(acc, p + (1 / kC) * kTgb + 8 + 64 * (1 % kC), q + 32, noff, ws[1 / kC], da);
        acc = hm_step<2>(acc, p + (2 / kC) * kTgb + 8 + 64 * (2 % kC), q + 64, noff, ws[2 / kC], da);
        acc = hm_step<3>(acc, p + (3 / kC) * kTgb + 8 + 64 * (3 % kC), q + 96, noff, ws[3 / kC], da);
    }
    // G32 / G64: the last 1-3 chunks (whole tile-groups), one at a time.
    for (; blk < nblk; blk += kC, p += kTgb) {
        const float32x4_t ws = h2f4(p);
        for (int c = 0; c < kC; ++c) {
            const int32x4_t isum = hm_chunk(vdupq_n_s32(-8 * a.s[blk + c]), p + 8 + 64 * c, a.q + 32 * (blk + c));
            acc = vfmaq_f32(acc, vcvtq_f32_s32(isum), vmulq_n_f32(ws, a.d[blk + c]));  // canonical per lane
        }
    }
    vst1q_f32(out, acc);
}

#if HMLLM_NEON_DOTPROD
// A 4-row HM tile against NB activation rows: each 32-column chunk's nibbles are split once and
// used by every token (prompts); lane r of out[t] = y(row r, token t), each lane doing the
// canonical chunk step of dot4_hm.
template <int G, int NB>
inline void tile_hm(const uint8_t* tile, const ActRow* const a[NB], int64_t n, float32x4_t out[NB]) {
    constexpr int kC = G / 32;
    constexpr int64_t kTgb = hm_tile_group_bytes(G);
    float32x4_t acc[NB];
    for (int t = 0; t < NB; ++t) acc[t] = vdupq_n_f32(0);
    for (int64_t k = 0; k < n / G; ++k) {
        const uint8_t* p = tile + k * kTgb;
        const float32x4_t ws = h2f4(p);
        for (int c = 0; c < kC; ++c) {
            const int64_t blk = k * kC + c;
            const uint8_t* nb = p + 8 + 64 * c;
            const uint8x16_t v0 = vld1q_u8(nb), v1 = vld1q_u8(nb + 16), v2 = vld1q_u8(nb + 32), v3 = vld1q_u8(nb + 48);
            const int8x16_t l0 = lo_nib(v0), l1 = lo_nib(v1), l2 = lo_nib(v2), l3 = lo_nib(v3);
            const int8x16_t h0 = hi_nib(v0), h1 = hi_nib(v1), h2 = hi_nib(v2), h3 = hi_nib(v3);
            for (int t = 0; t < NB; ++t) {
                const int8_t* q = a[t]->q + 32 * blk;
                const int8x16_t alo = vld1q_s8(q), ahi = vld1q_s8(q + 16);
                int32x4_t s = vdotq_laneq_s32(vdupq_n_s32(-8 * a[t]->s[blk]), l0, alo, 0);
                s = vdotq_laneq_s32(s, l1, alo, 1);
                s = vdotq_laneq_s32(s, l2, alo, 2);
                s = vdotq_laneq_s32(s, l3, alo, 3);
                s = vdotq_laneq_s32(s, h0, ahi, 0);
                s = vdotq_laneq_s32(s, h1, ahi, 1);
                s = vdotq_laneq_s32(s, h2, ahi, 2);
                s = vdotq_laneq_s32(s, h3, ahi, 3);
                acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(s), vmulq_n_f32(ws, a[t]->d[blk]));
            }
        }
    }
    for (int t = 0; t < NB; ++t) out[t] = acc[t];
}

// One activation row against T tiles (4T rows) at once (decode): each step's 128 activations, their
// offsets and scales are loaded once for all T tiles instead of once per tile. Lane r of out[t] =
// row r of tile t, each lane doing dot4_hm's canonical chunk steps.
template <int J>
inline float32x4_t hm_step_x(float32x4_t acc, const uint8_t* nb, int8x16_t alo, int8x16_t ahi, int32x4_t noff,
                             float32x4_t ws, float32x4_t da) {
    const uint8x16x4_t v = vld1q_u8_x4(nb);
    int32x4_t s = vdotq_laneq_s32(vdupq_laneq_s32(noff, J), lo_nib(v.val[0]), alo, 0);
    s = vdotq_laneq_s32(s, lo_nib(v.val[1]), alo, 1);
    s = vdotq_laneq_s32(s, lo_nib(v.val[2]), alo, 2);
    s = vdotq_laneq_s32(s, lo_nib(v.val[3]), alo, 3);
    s = vdotq_laneq_s32(s, hi_nib(v.val[0]), ahi, 0);
    s = vdotq_laneq_s32(s, hi_nib(v.val[1]), ahi, 1);
    s = vdotq_laneq_s32(s, hi_nib(v.val[2]), ahi, 2);
    s = vdotq_laneq_s32(s, hi_nib(v.val[3]), ahi, 3);
    return vfmaq_f32(acc, vcvtq_f32_s32(s), vmulq_laneq_f32(ws, da, J));
}

template <int G, int T>
inline void tiles_hm_row(const uint8_t* tile0, size_t tb, const ActRow& a, int64_t n, float32x4_t out[T]) {
    constexpr int kC = G / 32;
    constexpr int64_t kTgb = hm_tile_group_bytes(G);
    constexpr int kGroups = 4 / kC;  // tile-groups per 4-chunk step
    const uint8_t* p[T];
    float32x4_t acc[T];
    for (int t = 0; t < T; ++t) p[t] = tile0 + t * tb, acc[t] = vdupq_n_f32(0);
    for (int64_t blk = 0; blk + 4 <= n / 32; blk += 4) {
        const int32x4_t noff = vmulq_n_s32(vmovl_s16(vld1_s16(a.s + blk)), -8);
        const float32x4_t da = vld1q_f32(a.d + blk);
        const int8x16x4_t x01 = vld1q_s8_x4(a.q + 32 * blk), x23 = vld1q_s8_x4(a.q + 32 * blk + 64);
        for (int t = 0; t < T; ++t) {
            float32x4_t ws[kGroups];
            for (int g = 0; g < kGroups; ++g) ws[g] = h2f4(p[t] + g * kTgb);
            const uint8_t* q = p[t] + 8;
            acc[t] = hm_step_x<0>(acc[t], q, x01.val[0], x01.val[1], noff, ws[0], da);
            acc[t] = hm_step_x<1>(acc[t], q + (1 / kC) * kTgb + 64 * (1 % kC), x01.val[2], x01.val[3], noff, ws[1 / kC], da);
            acc[t] = hm_step_x<2>(acc[t], q + (2 / kC) * kTgb + 64 * (2 % kC), x23.val[0], x23.val[1], noff, ws[2 / kC], da);
            acc[t] = hm_step_x<3>(acc[t], q + (3 / kC) * kTgb + 64 * (3 % kC), x23.val[2], x23.val[3], noff, ws[3 / kC], da);
            p[t] += kGroups * kTgb;
        }
    }
    for (int t = 0; t < T; ++t) out[t] = acc[t];
}

// Tiles against tokens in fours (prompts); one token, or the last 1-3, through dot4_hm.
template <int G>
void matmul_hm_tokens(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const int64_t nb = act.batch(), n = w.n_cols;
    const size_t tb = 4 * row_bytes(w.type, n);
    const ActRowTable rows_a(act);
    int64_t r = r0;
    if (nb == 1 && (n / 32) % 4 == 0) {
        // Tiles per step (4T rows share each activation load), as many as the compiler keeps in
        // registers. Counted on cortex-a76, int4-g128 decode instructions per token: GCC 12
        // 87.5 M with one (dot4_hm) and 76.7 M with 4; clang 19 (ohos-arm64) 97.5 M with 1,
        // 110.2 M with 2, 99.4 M with 4 (it spills the activations' lane broadcasts).
#if defined(__clang__)
        constexpr int kT = 1;
#else
        constexpr int kT = 4;
#endif
        const ActRow& a = *rows_a.at(0);
        for (; r + 4 * kT <= r1; r += 4 * kT) {
            const uint8_t* tile = w.data + (r / 4) * tb;
            if (r + 8 * kT <= r1) prefetch_bytes(tile + kT * tb, kT * tb);
            float32x4_t o[kT];
            tiles_hm_row<G, kT>(tile, tb, a, n, o);
            for (int t = 0; t < kT; ++t) vst1q_f32(y + r + 4 * t, o[t]);
        }
        for (; r < r1; r += 4) {
            float32x4_t o[1];
            tiles_hm_row<G, 1>(w.data + (r / 4) * tb, tb, a, n, o);
            vst1q_f32(y + r, o[0]);
        }
        return;
    }
    if (nb < 4) return matmul_tiles<dot4_hm<G>>(w, act, y, ys, r0, r1);
    for (; r < r1; r += 4) {
        const uint8_t* tile = w.data + (r / 4) * tb;
        if (r + 8 <= r1) prefetch_bytes(tile + tb, tb);
        int64_t b = 0;
        for (; b + 4 <= nb; b += 4) {
            const ActRow* ap[4] = {rows_a.at(b), rows_a.at(b + 1), rows_a.at(b + 2), rows_a.at(b + 3)};
            float32x4_t o[4];
            tile_hm<G, 4>(tile, ap, n, o);
            for (int t = 0; t < 4; ++t) {
                float v[4];
                vst1q_f32(v, o[t]);
                for (int i = 0; i < 4; ++i) y[(b + t) * ys + r + i] = v[i];
            }
        }
        for (; b < nb; ++b) {
            float o[4];
            dot4_hm<G>(tile, *rows_a.at(b), n, o);
            for (int i = 0; i < 4; ++i) y[b * ys + r + i] = o[i];
        }
    }
}
#endif

#if HMLLM_NEON_DOTPROD
// ---- Interleaved row groups (kernels.h): a 16-byte piece holds 4 bytes of each of four rows, and
// SDOT by element multiplies it by 4 activations, so a block of four rows is eight SDOTs into one
// accumulator whose lane r is row r's integer sum: no horizontal sums, and the four rows' scales
// are one load. Q5_0 starts each block's sum at -16 * s_a (exact, as the scalar isum - 16 * s_a).
struct X4Q8 {
    static constexpr int kOffset = 0, kScales = 128;
    static inline void decode(const uint8_t* g, int8x16_t w[8]) {
        // Two 4-register loads (LD1 of 64 bytes each) for the 128 bytes.
        const int8x16x4_t a = vld1q_s8_x4(reinterpret_cast<const int8_t*>(g));
        const int8x16x4_t b = vld1q_s8_x4(reinterpret_cast<const int8_t*>(g + 64));
        w[0] = a.val[0], w[1] = a.val[1], w[2] = a.val[2], w[3] = a.val[3];
        w[4] = b.val[0], w[5] = b.val[1], w[6] = b.val[2], w[7] = b.val[3];
    }
};

struct X4Q5 {
    static constexpr int kOffset = 16, kScales = 80;
    // Piece k's nibbles: low = elements 4k.., high = 16 + 4k.. (pieces k and k + 4); bit k of the
    // fifth-bit bytes moves to bit 4 (one shift) and is inserted above the nibble (one BIT).
    static inline void decode(const uint8_t* g, int8x16_t w[8]) {
        const uint8x16_t qh = vld1q_u8(g), b4 = vdupq_n_u8(0x10), m4 = vdupq_n_u8(0x0F);
        for (int k = 0; k < 4; ++k) {
            const uint8x16_t raw = vld1q_u8(g + 16 + 16 * k);
            const uint8x16_t h_lo = vshlq_u8(qh, vdupq_n_s8(int8_t(4 - k)));
            const uint8x16_t h_hi = vshlq_u8(qh, vdupq_n_s8(int8_t(-k)));
            w[k] = vreinterpretq_s8_u8(vbslq_u8(b4, h_lo, vandq_u8(raw, m4)));
            w[k + 4] = vreinterpretq_s8_u8(vbslq_u8(b4, h_hi, vshrq_n_u8(raw, 4)));
        }
    }
};

inline int32x4_t dot_x4(int32x4_t s, const int8x16_t w[8], int8x16_t ql, int8x16_t qh) {
    s = vdotq_laneq_s32(s, w[0], ql, 0);
    s = vdotq_laneq_s32(s, w[1], ql, 1);
    s = vdotq_laneq_s32(s, w[2], ql, 2);
    s = vdotq_laneq_s32(s, w[3], ql, 3);
    s = vdotq_laneq_s32(s, w[4], qh, 0);
    s = vdotq_laneq_s32(s, w[5], qh, 1);
    s = vdotq_laneq_s32(s, w[6], qh, 2);
    return vdotq_laneq_s32(s, w[7], qh, 3);
}

// Group rows (four weight rows each) x NB activation rows: out[j * NB + k] lane r = y(row r of group
// j, activation row k). Decode takes G groups at once so each activation block is loaded once for
// 4G rows; a prompt takes one group and four activation rows.
template <class X, int G, int NB>
inline void tile_x4(const uint8_t* g0, size_t gb, int64_t n_blocks, const ActRow* const a[NB], float32x4_t out[G * NB]) {
    const size_t row_gap = size_t(n_blocks) * gb;  // from one group row to the next
    const uint8_t* g[G];
    for (int j = 0; j < G; ++j) g[j] = g0 + j * row_gap;
    const int8_t* q[NB];
    const float* ad[NB];
    const int16_t* as[NB];
    for (int k = 0; k < NB; ++k) q[k] = a[k]->q, ad[k] = a[k]->d, as[k] = a[k]->s;
    float32x4_t acc[G * NB];
    for (int k = 0; k < G * NB; ++k) acc[k] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n_blocks; ++i) {
        int8x16_t ql[NB], qh[NB];
        int32x4_t start[NB];
        for (int k = 0; k < NB; ++k) {
            ql[k] = vld1q_s8(q[k] + kQK * i);
            qh[k] = vld1q_s8(q[k] + kQK * i + 16);
            start[k] = vdupq_n_s32(X::kOffset ? -X::kOffset * as[k][i] : 0);
        }
        for (int j = 0; j < G; ++j) {
            int8x16_t w[8];
            X::decode(g[j], w);
            const float32x4_t d = h2f4(g[j] + X::kScales);
            g[j] += gb;
            for (int k = 0; k < NB; ++k)
                acc[j * NB + k] = block_step4(acc[j * NB + k], dot_x4(start[k], w, ql[k], qh[k]), d, ad[k][i]);
        }
    }
    for (int k = 0; k < G * NB; ++k) out[k] = acc[k];
}

template <class X, int G, int NB>
inline void tile_x4_store(const uint8_t* g, size_t gb, int64_t n_blocks, const ActRow* const a[NB], float* y,
                          int64_t ys, int64_t r, int64_t b) {
    float32x4_t o[G * NB];
    tile_x4<X, G, NB>(g, gb, n_blocks, a, o);
    for (int j = 0; j < G; ++j)
        for (int k = 0; k < NB; ++k) vst1q_f32(y + (b + k) * ys + r + 4 * j, o[j * NB + k]);
}

template <class X>
void matmul_x4(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0, int64_t r1) {
    const size_t rb = row_bytes(w.type, w.n_cols), gb = 4 * row_bytes(w.type, kQK);
    const int64_t nb = act.batch(), n_blocks = w.n_cols / kQK;
    const ActRowTable rows_a(act);
    int64_t r = r0;
    if (nb == 1) {
        // Groups per step (4G rows share each activation load), as many as the compiler keeps in
        // registers. Counted on cortex-a76, decode instructions per token of Gemma 3 270M: GCC 12
        // (linux-arm64) 92.5 M with 2, 91.0 M with 3, 87.4 M with 4, 95.7 M with 8 (spills);
        // clang 19 (ohos-arm64) 94.6 M with 2, 103.3 M with 4 (spills).
#if defined(__clang__)
        constexpr int kG = 2;
#else
        constexpr int kG = 4;
#endif
        const ActRow* ap[1] = {rows_a.at(0)};
        for (; r + 4 * kG <= r1; r += 4 * kG) {
            const uint8_t* g = w.data + r * rb;
            if (r + 8 * kG <= r1) prefetch_bytes(g + 4 * kG * rb, 4 * kG * rb);
            tile_x4_store<X, kG, 1>(g, gb, n_blocks, ap, y, ys, r, 0);
        }
    }
    for (; r < r1; r += 4) {
        const uint8_t* g = w.data + r * rb;  // four rows' bytes, interleaved
        if (r + 8 <= r1) prefetch_bytes(g + 4 * rb, 4 * rb);
        int64_t b = 0;
        for (; b + 4 <= nb; b += 4) {
            const ActRow* ap[4] = {rows_a.at(b), rows_a.at(b + 1), rows_a.at(b + 2), rows_a.at(b + 3)};
            tile_x4_store<X, 1, 4>(g, gb, n_blocks, ap, y, ys, r, b);
        }
        for (; b < nb; ++b) {
            const ActRow* ap[1] = {rows_a.at(b)};
            tile_x4_store<X, 1, 1>(g, gb, n_blocks, ap, y, ys, r, b);
        }
    }
}
#endif

void fill_all(KernelSet* ks) {
    ks->mm[kF32] = matmul_rows<dot_f32>;
    ks->mm[kF16] = matmul_rows<dot_f16>;
    ks->mm[kQ4_0] = matmul_32<Q4_0Rows>;
    ks->mm[kQ5_0] = matmul_32<Q5_0Rows>;
    ks->mm[kQ8_0] = matmul_32<Q8_0Rows>;
    ks->mm[kQ4_1] = matmul_32<Q4_1Rows>;
    ks->mm[kQ5_1] = matmul_32<Q5_1Rows>;
    ks->mm[kQ4_K] = matmul_k<Q4KRow>;
    ks->mm[kQ6_K] = matmul_k<Q6KRow>;
    ks->mm[kQ5_K] = matmul_k<Q5KRow>;
    ks->mm[kQ3_K] = matmul_k<Q3KRow>;
    ks->mm[kQ2_K] = matmul_k<Q2KRow>;
    ks->mm[kIQ4_XS] = matmul_k<IQ4XSRow>;
    ks->mm[kIQ4_NL] = matmul_32<IQ4NLRows>;
    ks->mm[kBF16] = matmul_rows<dot_bf16>;
#if HMLLM_NEON_DOTPROD
    ks->mm[kHm32] = matmul_hm_tokens<32>;
    ks->mm[kHm64] = matmul_hm_tokens<64>;
    ks->mm[kHm128] = matmul_hm_tokens<128>;
    ks->mm_x4[kQ8_0] = matmul_x4<X4Q8>;
    ks->mm_x4[kQ5_0] = matmul_x4<X4Q5>;
    ks->x4_pays[kQ8_0] = ks->x4_pays[kQ5_0] = true;
#else
    ks->mm[kHm32] = matmul_tiles<dot4_hm<32>>;
    ks->mm[kHm64] = matmul_tiles<dot4_hm<64>>;
    ks->mm[kHm128] = matmul_tiles<dot4_hm<128>>;
#endif
}
