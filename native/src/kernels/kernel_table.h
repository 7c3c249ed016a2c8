// Internal: the per-type matmul table each instruction-set file fills, and the loops shared by
// all of them. Not part of the public API.
#pragma once

#include <cstdint>

#include "hmllm/kernels.h"
#include "hmllm/quant_blocks.h"

namespace hmllm {
namespace kern {

enum Slot : int { kF32, kF16, kQ4_0, kQ5_0, kQ8_0, kQ4_K, kQ6_K, kHm64, kHm128, kSlotCount };
int slot_of(uint32_t type);  // -1 for unsupported types

using MatmulFn = void (*)(const MatView& w, const Activations& act, float* y, int64_t y_stride,
                          int64_t r0, int64_t r1);

struct KernelSet {
    const char* name;
    MatmulFn mm[kSlotCount];
};

// Each file overrides the slots it accelerates; a set is scalar, then each layer in order.
void fill_scalar(KernelSet* ks);
void fill_avx2(KernelSet* ks);
void fill_neon(KernelSet* ks);
void fill_neon_dotprod(KernelSet* ks);
void fill_neon_i8mm(KernelSet* ks);

void dequantize_row_scalar(const MatView& w, int64_t row, float* y);

// Scalar reference dots, also used by SIMD files for leftovers.
float dot_q8_0_ref(const uint8_t* w, const ActRow& a, int64_t n);
void dot4_hm_ref(const uint8_t* tile, const ActRow& a, int64_t n, int group, float out[4]);

// One-row kernel: y = dot(row, activation row).
using RowDot = float (*)(const uint8_t* w, const ActRow& a, int64_t n);

template <RowDot Dot>
void matmul_rows(const MatView& w, const Activations& act, float* y, int64_t ys, int64_t r0,
                 int64_t r1) {
    const size_t rb = row_bytes(w.type, w.n_cols);
    const int64_t nb = act.batch();
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + r * rb;
        for (int64_t b = 0; b < nb; ++b) y[b * ys + r] = Dot(row, act.row(b), w.n_cols);
    }
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
        for (int64_t b = 0; b < nb; ++b) {
            float o[4];
            Dot(tile, act.row(b), w.n_cols, o);
            for (int i = 0; i < 4; ++i) y[b * ys + r + i] = o[i];
        }
    }
}

}  // namespace kern
}  // namespace hmllm
