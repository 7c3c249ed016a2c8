// NEON kernels with the int8 matrix-multiply extension (vmmlaq_s32: a 2x8 by 8x2 int8 product
// per instruction; Cortex-A510/A710/X2 and newer). They pay off when several activation rows
// share each weight load, i.e. prompt prefill: 2 weight rows x 2 batch rows for Q8_0/Q4_0,
// a whole 4-row HM_Q4 tile x 2 batch rows. Batch 1 (decode) and the other types use the
// dotprod kernels, compiled into this file too. Compiled with -march=armv8.2-a+dotprod+i8mm
// and only called when HWCAP2_I8MM is reported.
#include <arm_neon.h>

#include "kernel_table.h"

namespace hmllm {
namespace kern {
namespace {
#define HMLLM_NEON_DOTPROD 1
#include "kernels_neon_body.h"

// Block i of a 32-element type as int8 elements 0..15, 16..31 and its scale.
struct LoadQ8_0 {
    using Rows = Q8_0Rows;
    static void load(const uint8_t* row, int64_t i, int8x16_t* v0, int8x16_t* v1, float* d) {
        const auto& b = reinterpret_cast<const BlockQ8_0*>(row)[i];
        *v0 = vld1q_s8(b.qs);
        *v1 = vld1q_s8(b.qs + 16);
        *d = h2f(b.d);
    }
    static void dot4(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
        dot4_q8_0(rows, a, n, out);
    }
};

struct LoadQ4_0 {
    using Rows = Q4_0Rows;
    static void load(const uint8_t* row, int64_t i, int8x16_t* v0, int8x16_t* v1, float* d) {
        const auto& b = reinterpret_cast<const BlockQ4_0*>(row)[i];
        const uint8x16_t raw = vld1q_u8(b.qs);
        *v0 = vsubq_s8(lo_nib(raw), vdupq_n_s8(8));
        *v1 = vsubq_s8(hi_nib(raw), vdupq_n_s8(8));
        *d = h2f(b.d);
    }
    static void dot4(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]) {
        dot4_q4_0(rows, a, n, out);
    }
};

inline int8x16_t zip1_64(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
inline int8x16_t zip2_64(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
inline int8x16_t zip1_32(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s32(vzip1q_s32(vreinterpretq_s32_s8(a), vreinterpretq_s32_s8(b)));
}
inline int8x16_t zip2_32(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s32(vzip2q_s32(vreinterpretq_s32_s8(a), vreinterpretq_s32_s8(b)));
}

// Rows r, r+1 against batch rows b, b+1: y lanes [r.b, r.b+1, r+1.b, r+1.b+1].
template <class L>
float32x4_t block32_2x2(const uint8_t* w0, const uint8_t* w1, const ActRow& a0, const ActRow& a1,
                        int64_t n) {
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / kQK; ++i) {
        int8x16_t x0l, x0h, x1l, x1h;
        float d0, d1;
        L::load(w0, i, &x0l, &x0h, &d0);
        L::load(w1, i, &x1l, &x1h, &d1);
        const int8x16_t q0l = vld1q_s8(a0.q + kQK * i), q0h = vld1q_s8(a0.q + kQK * i + 16);
        const int8x16_t q1l = vld1q_s8(a1.q + kQK * i), q1h = vld1q_s8(a1.q + kQK * i + 16);
        int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), zip1_64(x0l, x1l), zip1_64(q0l, q1l));
        s = vmmlaq_s32(s, zip2_64(x0l, x1l), zip2_64(q0l, q1l));
        s = vmmlaq_s32(s, zip1_64(x0h, x1h), zip1_64(q0h, q1h));
        s = vmmlaq_s32(s, zip2_64(x0h, x1h), zip2_64(q0h, q1h));
        // Lane (row, batch row): fma((float)isum, d_w * d_a, acc), the canonical block step.
        const float32x4_t dw = {d0, d0, d1, d1};
        const float32x4_t da = {a0.d[i], a1.d[i], a0.d[i], a1.d[i]};
        acc = vfmaq_f32(acc, vcvtq_f32_s32(s), vmulq_f32(dw, da));
    }
    return acc;
}

// Pairs of rows x pairs of batch rows with vmmlaq_s32; a leftover row or batch row goes through
// the 4-row dotprod kernel. Each output lane does the canonical per-block step either way, so
// the results do not depend on which path computed them.
template <class L>
void matmul_block32(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
                    int64_t r1) {
    const int64_t nb = act.batch(), n = w.n_cols;
    if (nb < 2) return matmul_32<typename L::Rows>(w, act, y, ys, r0, r1);
    const int64_t nb2 = nb - nb % 2, r2 = r0 + (r1 - r0) / 2 * 2;
    const size_t rb = row_bytes(w.type, n);
    for (int64_t r = r0; r < r2; r += 2) {
        const uint8_t* w0 = w.data + r * rb;
        const uint8_t* w1 = w0 + rb;
        for (int64_t b = 0; b < nb2; b += 2) {
            const float32x4_t o = block32_2x2<L>(w0, w1, act.row(b), act.row(b + 1), n);
            y[b * ys + r] = vgetq_lane_f32(o, 0);
            y[(b + 1) * ys + r] = vgetq_lane_f32(o, 1);
            y[b * ys + r + 1] = vgetq_lane_f32(o, 2);
            y[(b + 1) * ys + r + 1] = vgetq_lane_f32(o, 3);
        }
    }
    if (r2 < r1) rows4_range<L::dot4>(w, act, y, ys, r2, r1, 0, nb2);
    if (nb2 < nb) rows4_range<L::dot4>(w, act, y, ys, r0, r1, nb2, nb);
}

// A whole HM_Q4 tile (4 rows) against batch rows b, b+1. The tile's 4x4 nibble blocks are
// zipped into 2x8 operands: zip1_32 of columns 0-3 and 4-7 gives rows 0-1 x columns 0-7.
template <int G>
void hm_tile_4x2(const uint8_t* tile, const ActRow& a0, const ActRow& a1, int64_t n,
                 float32x4_t* out01, float32x4_t* out23) {
    float32x4_t acc01 = vdupq_n_f32(0), acc23 = vdupq_n_f32(0);
    for (int64_t k = 0; k < n / G; ++k) {
        const uint8_t* p = tile + k * hm_tile_group_bytes(G);
        const float32x4_t ws = h2f4(p);
        const float32x4_t ws01 = vzip1q_f32(ws, ws), ws23 = vzip2q_f32(ws, ws);
        for (int c = 0; c < G / 32; ++c) {
            const int64_t blk = k * (G / 32) + c;
            const uint8_t* nb = p + 8 + 64 * c;
            const uint8x16_t v0 = vld1q_u8(nb), v1 = vld1q_u8(nb + 16), v2 = vld1q_u8(nb + 32),
                             v3 = vld1q_u8(nb + 48);
            const int8x16_t l0 = lo_nib(v0), l1 = lo_nib(v1), l2 = lo_nib(v2), l3 = lo_nib(v3);
            const int8x16_t h0 = hi_nib(v0), h1 = hi_nib(v1), h2 = hi_nib(v2), h3 = hi_nib(v3);
            const int8_t* q0 = a0.q + 32 * blk;
            const int8_t* q1 = a1.q + 32 * blk;
            const int8x16_t q0l = vld1q_s8(q0), q0h = vld1q_s8(q0 + 16);
            const int8x16_t q1l = vld1q_s8(q1), q1h = vld1q_s8(q1 + 16);
            const int8x16_t c0 = zip1_64(q0l, q1l), c8 = zip2_64(q0l, q1l);
            const int8x16_t c16 = zip1_64(q0h, q1h), c24 = zip2_64(q0h, q1h);
            int32x4_t s01 = vmmlaq_s32(vdupq_n_s32(0), zip1_32(l0, l1), c0);
            int32x4_t s23 = vmmlaq_s32(vdupq_n_s32(0), zip2_32(l0, l1), c0);
            s01 = vmmlaq_s32(s01, zip1_32(l2, l3), c8);
            s23 = vmmlaq_s32(s23, zip2_32(l2, l3), c8);
            s01 = vmmlaq_s32(s01, zip1_32(h0, h1), c16);
            s23 = vmmlaq_s32(s23, zip2_32(h0, h1), c16);
            s01 = vmmlaq_s32(s01, zip1_32(h2, h3), c24);
            s23 = vmmlaq_s32(s23, zip2_32(h2, h3), c24);
            const int32x4_t off = {8 * a0.s[blk], 8 * a1.s[blk], 8 * a0.s[blk], 8 * a1.s[blk]};
            const float32x4_t da = {a0.d[blk], a1.d[blk], a0.d[blk], a1.d[blk]};
            acc01 = vfmaq_f32(acc01, vcvtq_f32_s32(vsubq_s32(s01, off)), vmulq_f32(ws01, da));
            acc23 = vfmaq_f32(acc23, vcvtq_f32_s32(vsubq_s32(s23, off)), vmulq_f32(ws23, da));
        }
    }
    *out01 = acc01;  // [r0.b0, r0.b1, r1.b0, r1.b1]
    *out23 = acc23;  // [r2.b0, r2.b1, r3.b0, r3.b1]
}

template <int G>
void matmul_hm(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
               int64_t r1) {
    const int64_t nb = act.batch(), n = w.n_cols;
    // One token (decode) or four and more (prompts): the dotprod paths, which count fewer
    // instructions there (int4-g128 Gemma 3 270M on `max`, per token: decode 86.8 M with this
    // kernel's one-row path against 76.7 M, prefill 36.6 M against 28.6 M; bench --count).
    if (nb == 1 || nb >= 4) return matmul_hm_tokens<G>(w, act, y, ys, r0, r1);
    const size_t tb = 4 * row_bytes(w.type, n);
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* tile = w.data + (r / 4) * tb;
        int64_t b = 0;
        for (; b + 1 < nb; b += 2) {
            float32x4_t o01, o23;
            hm_tile_4x2<G>(tile, act.row(b), act.row(b + 1), n, &o01, &o23);
            float o[8];
            vst1q_f32(o, o01);
            vst1q_f32(o + 4, o23);
            for (int i = 0; i < 4; ++i) {
                y[b * ys + r + i] = o[2 * i];
                y[(b + 1) * ys + r + i] = o[2 * i + 1];
            }
        }
        for (; b < nb; ++b) {
            float o[4];
            dot4_hm<G>(tile, act.row(b), n, o);
            for (int i = 0; i < 4; ++i) y[b * ys + r + i] = o[i];
        }
    }
}

}  // namespace

void fill_neon_i8mm(KernelSet* ks) {
    fill_all(ks);
    ks->mm[kQ8_0] = matmul_block32<LoadQ8_0>;
    ks->mm[kQ4_0] = matmul_block32<LoadQ4_0>;
    // Q5_0 keeps the dotprod 4-row x 4-token tile: its unpacking, done once per block for four
    // tokens there, costs more than SMMLA saves over two (Gemma 3 270M prefill on `max`: 41.9 M
    // instructions per token in Q5_0 matmuls with SMMLA 2x2, 22.5 M with the tile; bench --count).
    ks->mm[kHm32] = matmul_hm<32>;
    ks->mm[kHm64] = matmul_hm<64>;
    ks->mm[kHm128] = matmul_hm<128>;
}

}  // namespace kern
}  // namespace hmllm
