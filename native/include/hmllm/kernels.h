// Matrix-vector / matrix-matrix kernels over weights used in place from the mapped model file.
// Every type has a scalar reference (kernels_scalar.cpp); SIMD sets (NEON, NEON+dotprod,
// NEON+i8mm, AVX2) override what they accelerate and are chosen at run time from the CPU's
// features, so one aarch64 binary runs on a Cortex-A53 and on a dotprod/i8mm core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hmllm/ggml_types.h"

namespace hmllm {

// A 2-D weight matrix viewed in place (from the mmap'd file): n_rows rows of n_cols elements.
struct MatView {
    uint32_t type;  // a GgmlType value
    const uint8_t* data;
    int64_t n_cols;
    int64_t n_rows;
    // Stored as W·R, R the block-diagonal rotation of hadamard_rows: the engine rotates each
    // input row the same way before the product, so (W·R)(R·x) = W·x. Named in the model file by
    // hmllm.rotated_inputs; hmbuild quantize rotates the matrices it writes in 4 bits this way.
    bool rotated = false;
    // Rows stored in groups of four, interleaved block by block (interleave_rows): the layout the
    // dot-product kernels read with one SDOT per 4 bytes of four rows. Set at load when the active
    // kernel set prefers it (interleave_pays); n_rows is then a multiple of 4.
    bool interleaved = false;
};

// Width of the blocks hadamard_rows rotates (a rotated matrix's n_cols is a multiple of it).
constexpr int64_t kRotationBlock = 128;

// Multiplies each of `batch` rows of n_cols floats (row stride n_cols; n_cols a multiple of
// kRotationBlock) in place by R = blockdiag(H/sqrt(128)), H the 128x128 Sylvester-Hadamard matrix
// (H[i][j] = (-1)^popcount(i & j)). R is orthonormal and symmetric, so it is its own inverse.
// Rotating a matrix's inputs spreads each group's outliers over the whole group before 4-bit
// rounding. Always this scalar code (7 butterfly stages, a few hundred adds per 128 inputs beside
// the matmul's n_rows x 128 multiply-adds), so every kernel set sees the same rotated input.
void hadamard_rows(float* x, int64_t n_cols, int64_t batch);

// What a weight type multiplies with (its type_info's vec_dot_type; None for unsupported types).
ActKind activation_kind(uint32_t weight_type);

// One prepared activation row, as the kernels read it.
struct ActRow {
    const float* f;     // F32: n_cols floats
    const int8_t* q;    // Q8_*: n_cols quants
    const float* d;     // Q8_32: scale per 32; Q8_K: scale per 256
    const int16_t* s;   // Q8_32 / Q8_1: sum of quants per 32; Q8_K: per 16
    const float* sd;    // Q8_1: fp16(d * sum of quants) per 32, as a float (the offset term's factor)
};

// Activations quantized once per matmul (8-bit per block for the integer paths), shared
// read-only by all threads.
class Activations {
public:
    // Prepares `batch` rows of `n_cols` floats (row stride n_cols) for multiplying with weights
    // of `weight_type`. n_cols must be a multiple of the weight type's block size.
    void quantize(uint32_t weight_type, const float* x, int64_t n_cols, int64_t batch);

    ActKind kind() const { return kind_; }
    int64_t n_cols() const { return n_cols_; }
    int64_t batch() const { return batch_; }
    ActRow row(int64_t b) const;

private:
    ActKind kind_ = ActKind::None;
    int64_t n_cols_ = 0;
    int64_t batch_ = 0;
    std::vector<float> f_;
    std::vector<int8_t> q_;
    std::vector<float> d_;
    std::vector<int16_t> s_;
    std::vector<float> sd_;
};

// y[b * y_stride + r] = dot(row r of w, activation row b), for rows r in [r0, r1), all batch
// rows b. Thread-safe for disjoint row ranges. r0/r1 must be multiples of row_granularity(w.type).
// act must have been prepared for w.type with n_cols == w.n_cols (checked; a mismatch aborts,
// as it is a programming error).
void matmul(const MatView& w, const Activations& act, float* y, int64_t y_stride, int64_t r0,
            int64_t r1);
int64_t row_granularity(uint32_t type);  // 1 for ggml types; 4 for the interleaved HM INT4 types
int64_t row_granularity(const MatView& w);  // the type's, or 4 for an interleaved matrix

// ---- Interleaved row groups (Q8_0, Q5_0): four consecutive rows' blocks i side by side, the
// quants in 4-byte pieces of the four rows in turn, then the four fp16 scales:
//   Q8_0:  qs[128], d[4]:  qs[16g + 4r + j] = row r's qs[4g + j]           (g = 0..7)
//   Q5_0:  qh[16], qs[64], d[4]:  qs[16k + 4r + j] = row r's qs[4k + j]   (k = 0..3; low nibble
//          element 4k + j, high nibble 16 + 4k + j); bit g of qh[4r + j] = fifth bit of row r's
//          element 4g + j
// The same bytes as the four rows, so a matrix keeps its size. Each 16-byte piece is one
// register that multiplies four rows by 4 activations at once (SDOT by element), the pieces sit
// at multiples of 16 (pairs load in one instruction), and the scales of four rows load as one
// vector.
// Whether the active kernel set reads `type` faster interleaved (dotprod / i8mm: Q8_0, Q5_0).
bool interleave_pays(uint32_t type);
// Rows [r0, r1) of a matrix of n_cols columns at src (the file layout) into dst, which holds the
// interleaved layout of the same rows (r0, r1 multiples of 4; dst starts at row r0's group).
void interleave_rows(uint32_t type, const uint8_t* src, int64_t n_cols, int64_t r0, int64_t r1, uint8_t* dst);

// Dequantizes row `row` of w into dst[n_cols] (used for the token embedding lookup, and
// references), interleaved or not. Always the scalar code.
void dequantize_row(const MatView& w, int64_t row, float* dst);

// Bytes of one row (for HM types: a quarter of a 4-row tile); 0 for unsupported types or an
// n_cols that is not a multiple of the block size.
size_t row_bytes(uint32_t type, int64_t n_cols);

bool kernel_supported(uint32_t type);  // the type table's rows with a kernel: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
                                        // Q2_K..Q6_K, IQ4_NL, IQ4_XS, HM_Q4_G32/G64/G128
const char* active_kernels();  // "scalar" | "neon" | "neon-dotprod" | "neon-i8mm" | "avx2"
// Forces a kernel set (tests, benchmarks): returns false if the CPU lacks it (or the name is
// unknown). "auto" restores detection. Call it while no matmul is running. The environment
// variable HMLLM_KERNELS (same names) is honoured at first use.
bool select_kernels(const char* name);
// The kernel sets this CPU can run, scalar first.
std::vector<const char*> available_kernels();

}  // namespace hmllm
