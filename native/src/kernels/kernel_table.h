// Internal: the per-type matmul table each instruction-set file fills, and the loops shared by
// all of them. Not part of the public API.
//
// ---- The canonical evaluation order: every kernel set gives bitwise the same y.
// The 8-bit requantization of activations at every matmul amplifies a last-bit difference into
// different tokens, and CI tests device code on a host, so results must not depend on the
// instruction set. Integer dots are exact in any order (vectorize freely); every float step is
// fixed below. fma(a, b, c) is the exactly rounded a*b + c (std::fma, _mm*_fmadd_ps, vfmaq_f32
// all agree); every other float op is one IEEE operation, never contracted (-ffp-contract=off).
// (float)i is the round-to-nearest int32 -> float conversion. One accumulator per output
// (row, batch row), starting at +0, blocks in order from the first to the last:
//
//   Q4_0 / Q5_0 / Q8_0, block i of 32:  acc = fma((float)isum_i, fp16(d_w) * d_a, acc)
//   Q4_1 / Q5_1, block i of 32 (q unsigned, x = d_w * q + m_w; llama.cpp's d*d*isum + m*s):
//                                       acc = fma((float)isum_i, fp16(d_w) * d_a, acc)
//                                       acc = fma(fp16(m_w), sd_a, acc)
//       (sd_a = fp16(d * s_a) of the Q8_1 activations: d the block's scale before its fp16
//        rounding, s_a its int sum; one float per block, computed once by Activations)
//   HM_Q4_*, row r, 32-column chunk i:  acc_r = fma((float)(isum_ri - 8 * s_a), fp16(d_wr) * d_a, acc_r)
//   Q4_K, super-block i:                acc = fma((float)isum_i, fp16(d) * d_a, acc)
//       (isum_i = sum_j sc_j * dot_j)   acc = fma((float)msum_i, -(fp16(dmin) * d_a), acc)
//       (msum_i = sum_j m_j * (s_a[2j] + s_a[2j+1]), j = the 8 sub-blocks)
//   Q6_K, super-block i:                acc = fma((float)isum_i, fp16(d) * d_a, acc)
//       (isum_i = sum_j sc_j * sum_l (q - 32) * a, as sum_j sc_j * dot_j - 32 * sum_j sc_j * s_a[j])
//   Q5_K, super-block i: as Q4_K, with q in 0..31 (scales times dots, then mins times sums, as ggml)
//   Q2_K, super-block i:                acc = fma((float)isum_i, fp16(d) * d_a, acc)
//       (isum_i = sum_j (sc_j & 15) * dot_j)  acc = fma((float)msum_i, -(fp16(dmin) * d_a), acc)
//       (msum_i = sum_j (sc_j >> 4) * s_a[j], j = the 16 sub-blocks of 16, q in 0..3)
//   Q3_K, super-block i:                acc = fma((float)isum_i, fp16(d) * d_a, acc)
//       (isum_i = sum_j (sc_j - 32) * sum_l q * a, q in -4..3, j = the 16 sub-blocks; SIMD sets
//       may take q + 4 in 0..7 and subtract 4 * sum_j (sc_j - 32) * s_a[j], as Q6_K's 32)
//   IQ4_XS, super-block i:              acc = fma((float)isum_i, fp16(d) * d_a, acc)
//       (isum_i = sum_j (ls_j - 32) * sum_l v * a, v = kIq4Values[index], j = the 8 sub-blocks)
//   IQ4_NL, block i of 32:              acc = fma((float)isum_i, fp16(d_w) * d_a, acc)
//       (isum_i = sum_l v * a; the activations are the Q8_32 blocks, as ggml's Q8_0)
//     Q2_K, Q3_K, Q5_K and IQ4_XS take the Q8_K activations, as in ggml.
//   F32 / F16 / BF16 (weights w, floats x; fp16 / bf16 -> fp32 is exact), 16 partial sums:
//       p_k = fma(w_i, x_i, p_k) for i = k (mod 16), i < n16 = n - n % 16, i ascending
//       t_k = p_k + p_{k+8} (k < 8);  u_k = t_k + t_{k+4} (k < 4)
//       acc = (u_0 + u_2) + (u_1 + u_3);  then acc = fma(w_i, x_i, acc) for i = n16 .. n-1
//     (AVX2: two 8-lane accumulators and the usual 256 -> 128 -> 64 -> 32 halving; NEON: four
//     4-lane accumulators, then the same halvings.)
// A SIMD kernel reduces each block's integer sum horizontally and then does the float step for
// that block; lanes may hold different outputs (rows / batch rows) as long as each lane does
// exactly the operations above. This assumes the default FP environment (round to nearest,
// no flush-to-zero), which nothing in hmllm changes; activation quantization is one scalar
// function for all sets (kernels_scalar.cpp).
// Interleaved matrices (MatView::interleaved, Q8_0 and Q5_0) only move bytes: each output runs the
// same chain as above, so an interleaved matrix gives the bits of its file layout in every set.
#pragma once

#include <cstdint>

#include "hmllm/kernels.h"
#include "hmllm/quant_blocks.h"

namespace hmllm {
namespace kern {

// A type's matmul in each set: mm[TypeInfo::kernel] (the type table names the slot of each type).
enum Slot : int {
    kF32, kF16, kQ4_0, kQ5_0, kQ8_0, kQ4_K, kQ6_K, kHm32, kHm64, kHm128,
    kQ5_K, kQ3_K, kQ2_K, kIQ4_XS, kIQ4_NL, kBF16, kQ4_1, kQ5_1,
    kSlotCount
};

using MatmulFn = void (*)(const MatView& w, const Activations& act, float* y, int64_t y_stride,
                          int64_t r0, int64_t r1);

struct KernelSet {
    const char* name;
    MatmulFn mm[kSlotCount];
    // The same products over interleaved row groups (kernels.h); every set has them (the scalar
    // reference de-interleaves), and x4_pays marks the types a set reads faster that way, which
    // the loader then interleaves.
    MatmulFn mm_x4[kSlotCount];
    bool x4_pays[kSlotCount];
};

// Each file overrides the slots it accelerates; a set is scalar, then each layer in order.
void fill_scalar(KernelSet* ks);
void fill_avx2(KernelSet* ks);
void fill_neon(KernelSet* ks);
void fill_neon_dotprod(KernelSet* ks);
void fill_neon_i8mm(KernelSet* ks);

// The type table's to_float: row `row` of a matrix of n columns at m, the scalar reference.
void to_float_f32(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_f16(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q4_0(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q5_0(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q4_1(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q5_1(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q8_0(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q4_k(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q6_k(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q5_k(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q3_k(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_q2_k(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_iq4_xs(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_iq4_nl(const uint8_t* m, int64_t row, int64_t n, float* y);
void to_float_bf16(const uint8_t* m, int64_t row, int64_t n, float* y);
template <int G>  // defined for G = 32, 64, 128
void to_float_hm(const uint8_t* m, int64_t row, int64_t n, float* y);

// Row r (0..3) of one interleaved group of four blocks as its file-layout block: the scalar
// reference reads interleaved matrices through this.
void deinterleave_block(uint32_t type, const uint8_t* group, int r, uint8_t* block);
// Four file-layout blocks (one per row) as one interleaved group.
void interleave_group(uint32_t type, const uint8_t* const blocks[4], uint8_t* group);
// Rows [r0, r1) (multiples of 4) of the file layout at src into the interleaved layout at dst.
void interleave_matrix(uint32_t type, const uint8_t* src, int64_t n_cols, int64_t r0, int64_t r1, uint8_t* dst);

// Scalar reference dots (the canonical order written out plainly).
float dot_q8_0_ref(const uint8_t* w, const ActRow& a, int64_t n);
void dot4_hm_ref(const uint8_t* tile, const ActRow& a, int64_t n, int group, float out[4]);

// Software prefetch of the weights read next. A chunk's rows are contiguous in the file, but the
// kernels read four rows side by side (four streams of a few hundred bytes each), which the
// hardware prefetchers pick up too late to keep memory busy. Asking for the next group of rows
// while this one is computed keeps the reads streaming: the output projection of Gemma 3 270M
// (Q8_0, 262144 x 640) with 2 threads on the x86_64 CI VM went from 15.0 to 9.1 ms; one group
// ahead measured better than two or four.
// Four lines per loop step: a loop step per line cost a fifth of the Q8_0 kernel's instructions on
// aarch64 (counted under qemu, `hmbuild bench --count`).
inline void prefetch_bytes(const uint8_t* p, size_t bytes) {
    size_t off = 0;
    for (; off + 256 <= bytes; off += 256) {
        __builtin_prefetch(p + off);
        __builtin_prefetch(p + off + 64);
        __builtin_prefetch(p + off + 128);
        __builtin_prefetch(p + off + 192);
    }
    for (; off < bytes; off += 64) __builtin_prefetch(p + off);
}

// One-row kernel: y = dot(row, activation row).
using RowDot = float (*)(const uint8_t* w, const ActRow& a, int64_t n);

template <RowDot Dot>
void matmul_rows(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
                 int64_t r1) {
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch();
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + r * rb;
        if (r + 2 < r1) prefetch_bytes(row + 2 * rb, rb);
        for (int64_t b = 0; b < nb; ++b) y[b * ys + r] = Dot(row, act.row(b), w.n_cols);
    }
}

// Four independent rows at once (lane r = row r), so the one-accumulator-per-output float chain
// of four outputs runs side by side. A leftover row is passed four times: lanes are independent,
// so its result is the same as in any other position.
using Row4Dot = void (*)(const uint8_t* const rows[4], const ActRow& a, int64_t n, float out[4]);

template <Row4Dot Dot>
void rows4_range(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
                 int64_t r1, int64_t b0, int64_t b1) {
    const size_t rb = row_bytes(w.type, w.n_cols);
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* rows[4];
        for (int i = 0; i < 4; ++i) rows[i] = w.data + (r + i < r1 ? r + i : r1 - 1) * rb;
        if (r + 8 <= r1) prefetch_bytes(rows[0] + 4 * rb, 4 * rb);
        for (int64_t b = b0; b < b1; ++b) {
            float o[4];
            Dot(rows, act.row(b), w.n_cols, o);
            for (int i = 0; i < 4 && r + i < r1; ++i) y[b * ys + r + i] = o[i];
        }
    }
}

template <Row4Dot Dot>
void matmul_rows4(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
                  int64_t r1) {
    rows4_range<Dot>(w, act, y, ys, r0, r1, 0, act.batch());
}

// Four-row kernel over one HM tile.
using TileDot = void (*)(const uint8_t* tile, const ActRow& a, int64_t n, float out[4]);

template <TileDot Dot>
void matmul_tiles(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
                  int64_t r1) {
    const size_t tb = 4 * row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch();
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* tile = w.data + (r / 4) * tb;
        if (r + 8 <= r1) prefetch_bytes(tile + tb, tb);
        for (int64_t b = 0; b < nb; ++b) {
            float o[4];
            Dot(tile, act.row(b), w.n_cols, o);
            for (int i = 0; i < 4; ++i) y[b * ys + r + i] = o[i];
        }
    }
}

}  // namespace kern
}  // namespace hmllm
