// Tensor element types, described once: ggml's type_traits (ggml/src/ggml-cpu/ggml-cpu.c) for
// this runtime. The GGUF reader sizes tensors from this table, the kernel dispatcher picks a
// matmul and the activation format from it, and dequantize_row calls its to_float; nothing else
// restates a block size or a byte count. Block layouts are in quant_blocks.h, and
// src/ggml_types.cpp checks each one's size against its entry here.
#pragma once

#include <cstdint>
#include <string>

namespace hmllm {

// Tensor element types; values are ggml's so files from llama.cpp load unchanged.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ4_NL = 20,
    IQ4_XS = 23,
    BF16 = 30,
    // This project's own INT4 (docs/int4-format.md, layout in quant_blocks.h), numbered
    // 1000 + group size, far above anything llama.cpp assigns so the two can never collide.
    HM_Q4_G32 = 1032,
    HM_Q4_G64 = 1064,
    HM_Q4_G128 = 1128,
};

// What a weight type multiplies with (ggml's vec_dot_type).
enum class ActKind : uint32_t {
    None = 0,  // unsupported weight type
    F32,       // F32 / F16 / BF16 weights: the floats themselves
    Q8_32,     // Q4_0 / Q5_0 / Q8_0 / IQ4_NL / HM_Q4_*: int8 per element, float scale + int sum per 32
    Q8_K,      // Q2_K..Q6_K / IQ4_XS: int8 per element, float scale per 256, int sum per 16
    Q8_1,      // Q4_1 / Q5_1: Q8_32 plus fp16(d * sum) per 32 (ggml's block_q8_1 s, d before rounding)
};

// Row `row` of a matrix of n_cols columns starting at `matrix`, as floats (the scalar reference).
using RowToFloat = void (*)(const uint8_t* matrix, int64_t row, int64_t n_cols, float* y);

struct TypeInfo {
    GgmlType type;
    const char* name;     // ggml's spelling, e.g. "q8_0", "q4_K"
    uint32_t block_size;  // elements per block
    uint32_t type_size;   // bytes per block (for HM types: one row's share of a 4-row tile-group)
    uint32_t tile_rows;   // rows stored interleaved (HM types: 4); row counts must be multiples
    // The rest is set only for types this runtime computes with.
    RowToFloat to_float;   // nullptr: none
    ActKind vec_dot_type;  // the activations its matmul takes; None: no kernel
    int kernel;            // index into each instruction set's kernel table (src/kernels); -1: none
};

// nullptr for a type this runtime does not know. Known but not computable types (e.g. q2_K)
// still have sizes, so the reader can load a file that holds them and say what it lacks.
const TypeInfo* type_info(uint32_t raw_type);
inline const TypeInfo* type_info(GgmlType type) { return type_info(static_cast<uint32_t>(type)); }

// Every known type, in id order (for tests and tools that go over them all).
const TypeInfo* all_type_infos(int* count);

// ggml's name of any type id (its spelling, "iq2_xxs", "q4_K"), also for ids the table has no row
// for; nullptr for an id ggml does not assign.
const char* ggml_type_name(uint32_t raw_type);

// The sentence that refuses a tensor whose type this runtime cannot compute with: "tensor NAME has
// type iq2_xxs, which this runtime cannot run; it runs files whose tensors are f32, f16, ..." (the
// list: the table's types with a kernel). `tensor` is written as given (callers quote it or not).
std::string unrunnable_tensor_message(const std::string& tensor, uint32_t raw_type);

}  // namespace hmllm
