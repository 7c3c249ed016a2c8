// The type table (ggml_types.h). Sizes are GGUF's (the same numbers as gguf-py's
// GGML_QUANT_SIZES); the static_asserts below tie each block layout of quant_blocks.h to them.
#include "hmllm/ggml_types.h"

#include <array>

#include "hmllm/quant_blocks.h"
#include "kernels/kernel_table.h"

namespace hmllm {
namespace {

using kern::to_float_f16;
using kern::to_float_f32;
using kern::to_float_hm;
using kern::to_float_q4_0;
using kern::to_float_q4_1;
using kern::to_float_q4_k;
using kern::to_float_q5_0;
using kern::to_float_q5_1;
using kern::to_float_q6_k;
using kern::to_float_q8_0;
using kern::to_float_q2_k;
using kern::to_float_q3_k;
using kern::to_float_q5_k;
using kern::to_float_iq4_nl;
using kern::to_float_iq4_xs;
using kern::to_float_bf16;
constexpr ActKind kNone = ActKind::None;

// HM types: a 4-row tile-group of G columns is 4 * (2 + G/2) bytes, 2 + G/2 of them per row.
constexpr TypeInfo kTypes[] = {
    // type                name          block  bytes  tile  to_float           vec_dot_type    kernel
    {GgmlType::F32,        "f32",        1,     4,     1,    to_float_f32,      ActKind::F32,   kern::kF32},
    {GgmlType::F16,        "f16",        1,     2,     1,    to_float_f16,      ActKind::F32,   kern::kF16},
    {GgmlType::Q4_0,       "q4_0",       32,    18,    1,    to_float_q4_0,     ActKind::Q8_32, kern::kQ4_0},
    {GgmlType::Q4_1,       "q4_1",       32,    20,    1,    to_float_q4_1,     ActKind::Q8_1,  kern::kQ4_1},
    {GgmlType::Q5_0,       "q5_0",       32,    22,    1,    to_float_q5_0,     ActKind::Q8_32, kern::kQ5_0},
    {GgmlType::Q5_1,       "q5_1",       32,    24,    1,    to_float_q5_1,     ActKind::Q8_1,  kern::kQ5_1},
    {GgmlType::Q8_0,       "q8_0",       32,    34,    1,    to_float_q8_0,     ActKind::Q8_32, kern::kQ8_0},
    {GgmlType::Q8_1,       "q8_1",       32,    36,    1,    nullptr,           kNone,          -1},
    {GgmlType::Q2_K,       "q2_K",       256,   84,    1,    to_float_q2_k,     ActKind::Q8_K,  kern::kQ2_K},
    {GgmlType::Q3_K,       "q3_K",       256,   110,   1,    to_float_q3_k,     ActKind::Q8_K,  kern::kQ3_K},
    {GgmlType::Q4_K,       "q4_K",       256,   144,   1,    to_float_q4_k,     ActKind::Q8_K,  kern::kQ4_K},
    {GgmlType::Q5_K,       "q5_K",       256,   176,   1,    to_float_q5_k,     ActKind::Q8_K,  kern::kQ5_K},
    {GgmlType::Q6_K,       "q6_K",       256,   210,   1,    to_float_q6_k,     ActKind::Q8_K,  kern::kQ6_K},
    {GgmlType::Q8_K,       "q8_K",       256,   292,   1,    nullptr,           kNone,          -1},
    {GgmlType::IQ4_NL,     "iq4_nl",     32,    18,    1,    to_float_iq4_nl,   ActKind::Q8_32, kern::kIQ4_NL},
    {GgmlType::IQ4_XS,     "iq4_xs",     256,   136,   1,    to_float_iq4_xs,   ActKind::Q8_K,  kern::kIQ4_XS},
    {GgmlType::BF16,       "bf16",       1,     2,     1,    to_float_bf16,     ActKind::F32,   kern::kBF16},
    {GgmlType::HM_Q4_G32,  "hm_q4_g32",  32,    2 + 16, 4,   to_float_hm<32>,   ActKind::Q8_32, kern::kHm32},
    {GgmlType::HM_Q4_G64,  "hm_q4_g64",  64,    2 + 32, 4,   to_float_hm<64>,   ActKind::Q8_32, kern::kHm64},
    {GgmlType::HM_Q4_G128, "hm_q4_g128", 128,   2 + 64, 4,   to_float_hm<128>,  ActKind::Q8_32, kern::kHm128},
};
constexpr int kTypeCount = static_cast<int>(sizeof kTypes / sizeof kTypes[0]);

constexpr const TypeInfo& entry(GgmlType t) {
    int i = 0;
    while (kTypes[i].type != t) ++i;  // not found: ends the constant evaluation with an error
    return kTypes[i];
}

// The block layouts the kernels read are the ones the table sizes.
static_assert(entry(GgmlType::Q4_0).type_size == sizeof(BlockQ4_0) && entry(GgmlType::Q4_0).block_size == kQK);
static_assert(entry(GgmlType::Q4_1).type_size == sizeof(BlockQ4_1) && entry(GgmlType::Q4_1).block_size == kQK);
static_assert(entry(GgmlType::Q5_1).type_size == sizeof(BlockQ5_1) && entry(GgmlType::Q5_1).block_size == kQK);
static_assert(entry(GgmlType::Q5_0).type_size == sizeof(BlockQ5_0) && entry(GgmlType::Q5_0).block_size == kQK);
static_assert(entry(GgmlType::Q8_0).type_size == sizeof(BlockQ8_0) && entry(GgmlType::Q8_0).block_size == kQK);
static_assert(entry(GgmlType::Q4_K).type_size == sizeof(BlockQ4_K) && entry(GgmlType::Q4_K).block_size == kQKK);
static_assert(entry(GgmlType::Q6_K).type_size == sizeof(BlockQ6_K) && entry(GgmlType::Q6_K).block_size == kQKK);
static_assert(entry(GgmlType::Q5_K).type_size == sizeof(BlockQ5_K) && entry(GgmlType::Q5_K).block_size == kQKK);
static_assert(entry(GgmlType::Q3_K).type_size == sizeof(BlockQ3_K) && entry(GgmlType::Q3_K).block_size == kQKK);
static_assert(entry(GgmlType::Q2_K).type_size == sizeof(BlockQ2_K) && entry(GgmlType::Q2_K).block_size == kQKK);
static_assert(entry(GgmlType::IQ4_NL).type_size == sizeof(BlockIQ4_NL) && entry(GgmlType::IQ4_NL).block_size == kQK);
static_assert(entry(GgmlType::IQ4_XS).type_size == sizeof(BlockIQ4_XS) && entry(GgmlType::IQ4_XS).block_size == kQKK);
static_assert(entry(GgmlType::BF16).type_size == sizeof(uint16_t) && entry(GgmlType::BF16).block_size == 1);
static_assert(entry(GgmlType::F16).type_size == sizeof(uint16_t) && entry(GgmlType::F32).type_size == sizeof(float));
template <GgmlType T>
constexpr bool hm_entry_fits() {
    constexpr const TypeInfo& e = entry(T);
    return e.block_size == static_cast<uint32_t>(T) - 1000 && e.tile_rows == kHmTileRows &&
           e.tile_rows * e.type_size == hm_tile_group_bytes(static_cast<int>(e.block_size));
}
static_assert(hm_entry_fits<GgmlType::HM_Q4_G32>() && hm_entry_fits<GgmlType::HM_Q4_G64>() &&
              hm_entry_fits<GgmlType::HM_Q4_G128>());

// Raw ids below this are looked up by index; the few above it (the HM types) by a scan.
constexpr uint32_t kIndexed = static_cast<uint32_t>(GgmlType::BF16) + 1;
constexpr auto kIndex = [] {
    std::array<int8_t, kIndexed> ix{};
    for (auto& v : ix) v = -1;
    for (int i = 0; i < kTypeCount; ++i)
        if (static_cast<uint32_t>(kTypes[i].type) < kIndexed) ix[static_cast<uint32_t>(kTypes[i].type)] = static_cast<int8_t>(i);
    return ix;
}();

}  // namespace

const TypeInfo* type_info(uint32_t raw_type) {
    if (raw_type < kIndexed) return kIndex[raw_type] < 0 ? nullptr : &kTypes[kIndex[raw_type]];
    for (const TypeInfo& t : kTypes)
        if (static_cast<uint32_t>(t.type) == raw_type) return &t;
    return nullptr;
}

const TypeInfo* all_type_infos(int* count) {
    *count = kTypeCount;
    return kTypes;
}

const char* ggml_type_name(uint32_t raw_type) {
    if (const TypeInfo* t = type_info(raw_type)) return t->name;
    // ggml's ids without a row here (ggml.h's enum ggml_type; 4, 5 and 31-33 are retired), for messages.
    static const char* const kGgmlNames[] = {
        "f32", "f16", "q4_0", "q4_1", nullptr, nullptr, "q5_0", "q5_1", "q8_0", "q8_1",
        "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s",
        "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m",
        "bf16", nullptr, nullptr, nullptr, "tq1_0", "tq2_0", nullptr, nullptr, nullptr, "mxfp4"};
    constexpr uint32_t n = sizeof kGgmlNames / sizeof kGgmlNames[0];
    return raw_type < n ? kGgmlNames[raw_type] : nullptr;
}

std::string unrunnable_tensor_message(const std::string& tensor, uint32_t raw_type) {
    const char* name = ggml_type_name(raw_type);
    std::string runs;
    int n = 0;
    const TypeInfo* types = all_type_infos(&n);
    int last = -1;
    for (int i = 0; i < n; ++i)
        if (types[i].kernel >= 0) last = i;
    for (int i = 0; i < n; ++i) {
        if (types[i].kernel < 0) continue;
        if (!runs.empty()) runs += i == last ? " and " : ", ";
        runs += types[i].name;
    }
    return "tensor " + tensor + " has type " + (name ? std::string(name) : "number " + std::to_string(raw_type)) +
           ", which this runtime cannot run; it runs files whose tensors are " + runs;
}

}  // namespace hmllm
