// The type table (ggml_types.h) against what depends on it: the block layouts the kernels read,
// the tensor sizes the GGUF reader computes, and the kernels' row sizes.
#include "test_main.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "hmllm/ggml_types.h"
#include "hmllm/gguf_reader.h"
#include "hmllm/kernels.h"
#include "hmllm/quant_blocks.h"
#include "support/gguf_builder.h"

namespace {

using namespace hmllm;

uint32_t raw(GgmlType t) { return static_cast<uint32_t>(t); }

std::vector<TypeInfo> all_types() {
    int n = 0;
    const TypeInfo* t = all_type_infos(&n);
    return std::vector<TypeInfo>(t, t + n);
}

TEST_CASE(lookup_finds_each_entry_and_nothing_else) {
    std::set<uint32_t> ids;
    for (const TypeInfo& t : all_types()) {
        CHECK(ids.insert(raw(t.type)).second);
        CHECK_EQ(type_info(t.type)->type, t.type);
        CHECK(t.name != nullptr && t.block_size > 0 && t.type_size > 0 && t.tile_rows > 0);
    }
    CHECK_EQ(ids.size(), size_t(20));
    for (uint32_t unknown : {4u, 5u, 16u, 29u, 31u, 63u, 1000u, 1031u, 1033u, 1129u, 0xFFFFFFFFu})
        CHECK(type_info(unknown) == nullptr);
    CHECK_EQ(std::string(type_info(GgmlType::Q4_K)->name), std::string("q4_K"));
    CHECK_EQ(std::string(type_info(GgmlType::HM_Q4_G128)->name), std::string("hm_q4_g128"));
}

// A computable type has all of to_float, an activation kind and a kernel; the others none.
TEST_CASE(kernel_fields_come_together) {
    std::set<int> kernels;
    for (const TypeInfo& t : all_types()) {
        const bool computable = t.kernel >= 0;
        CHECK_EQ(t.to_float != nullptr, computable);
        CHECK_EQ(t.vec_dot_type != ActKind::None, computable);
        CHECK_EQ(kernel_supported(raw(t.type)), computable);
        CHECK_EQ(activation_kind(raw(t.type)), t.vec_dot_type);
        CHECK_EQ(row_granularity(raw(t.type)), int64_t(t.tile_rows));
        if (computable) CHECK(kernels.insert(t.kernel).second);
    }
    CHECK_EQ(kernels.size(), size_t(18));
}

TEST_CASE(entries_match_the_block_structs) {
    CHECK_EQ(type_info(GgmlType::Q4_0)->type_size, uint32_t(sizeof(BlockQ4_0)));
    CHECK_EQ(type_info(GgmlType::Q5_0)->type_size, uint32_t(sizeof(BlockQ5_0)));
    CHECK_EQ(type_info(GgmlType::Q4_1)->type_size, uint32_t(sizeof(BlockQ4_1)));
    CHECK_EQ(type_info(GgmlType::Q5_1)->type_size, uint32_t(sizeof(BlockQ5_1)));
    CHECK_EQ(type_info(GgmlType::Q8_0)->type_size, uint32_t(sizeof(BlockQ8_0)));
    CHECK_EQ(type_info(GgmlType::Q4_K)->type_size, uint32_t(sizeof(BlockQ4_K)));
    CHECK_EQ(type_info(GgmlType::Q6_K)->type_size, uint32_t(sizeof(BlockQ6_K)));
    CHECK_EQ(type_info(GgmlType::Q5_K)->type_size, uint32_t(sizeof(BlockQ5_K)));
    CHECK_EQ(type_info(GgmlType::Q3_K)->type_size, uint32_t(sizeof(BlockQ3_K)));
    CHECK_EQ(type_info(GgmlType::Q2_K)->type_size, uint32_t(sizeof(BlockQ2_K)));
    CHECK_EQ(type_info(GgmlType::IQ4_NL)->type_size, uint32_t(sizeof(BlockIQ4_NL)));
    CHECK_EQ(type_info(GgmlType::IQ4_XS)->type_size, uint32_t(sizeof(BlockIQ4_XS)));
    CHECK_EQ(type_info(GgmlType::BF16)->type_size, uint32_t(sizeof(uint16_t)));
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::Q4_1, GgmlType::Q5_1})
        CHECK_EQ(type_info(t)->block_size, uint32_t(kQK));
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS})
        CHECK_EQ(type_info(t)->block_size, uint32_t(kQKK));
    for (GgmlType t : {GgmlType::HM_Q4_G32, GgmlType::HM_Q4_G64, GgmlType::HM_Q4_G128}) {
        const TypeInfo* e = type_info(t);
        CHECK_EQ(e->block_size, uint32_t(hm_group(raw(t))));
        CHECK_EQ(e->tile_rows, uint32_t(kHmTileRows));
        CHECK_EQ(int64_t(e->tile_rows) * e->type_size, hm_tile_group_bytes(int(e->block_size)));
    }
}

// One tensor of every known type, 3 blocks wide and one tile of rows: the reader's byte count is
// the table's, and for computable types it is also row_bytes() per row.
TEST_CASE(reader_sizes_tensors_from_the_table) {
    hmtest::FileSpec spec;
    spec.metadata.str("general.architecture", "llama");
    const std::vector<TypeInfo> types = all_types();
    for (const TypeInfo& t : types) {
        const uint64_t bytes = uint64_t(3) * t.type_size * t.tile_rows;
        spec.tensors.push_back({std::string("t.") + t.name, {uint64_t(3) * t.block_size, t.tile_rows},
                                raw(t.type), std::vector<uint8_t>(bytes, 0), {}});
    }
    const std::vector<uint8_t> file = hmtest::build(spec);
    GgufFile gguf;
    const Status st = GgufFile::open_memory(file.data(), file.size(), "types.gguf", &gguf);
    CHECK(st.ok());
    CHECK_EQ(gguf.tensors().size(), types.size());
    for (const TypeInfo& t : types) {
        const GgufTensorInfo* ti = gguf.find_tensor(std::string("t.") + t.name);
        CHECK(ti != nullptr);
        CHECK_EQ(ti->n_bytes, uint64_t(3) * t.type_size * t.tile_rows);
        const size_t rb = row_bytes(raw(t.type), int64_t(3) * t.block_size);
        if (t.kernel >= 0) CHECK_EQ(uint64_t(rb) * t.tile_rows, ti->n_bytes);
        else CHECK_EQ(rb, size_t(0));
    }
}

}  // namespace

// The type table's to_float against gguf-py's dequantize: tests/test_ggml_types.py writes a GGUF
// file holding, for each type it checks, tensor "w.<type>" and gguf-py's dequantization of it as
// the F32 tensor "ref.<type>", and runs this case with HMLLM_TO_FLOAT_FILE naming that file. Every
// value must be the same float bit for bit (NaN matching any NaN). Without the variable (ctest),
// nothing to compare: the case says so and passes.
TEST_CASE(to_float_matches_a_reference_file) {
    const char* path = std::getenv("HMLLM_TO_FLOAT_FILE");
    if (path == nullptr || *path == 0) {
        std::printf("# to_float_matches_a_reference_file: HMLLM_TO_FLOAT_FILE not set, nothing to compare\n");
        return;
    }
    GgufFile gguf;
    const Status st = GgufFile::open(path, &gguf);
    CHECK(st.ok());
    int checked = 0;
    for (const GgufTensorInfo& t : gguf.tensors()) {
        if (t.name.rfind("w.", 0) != 0) continue;
        const GgufTensorInfo* ref = gguf.find_tensor("ref." + t.name.substr(2));
        CHECK(ref != nullptr && ref->type == raw(GgmlType::F32));
        const int64_t cols = t.ne[0], rows = t.ne[1];
        CHECK(ref->ne[0] == cols && ref->ne[1] == rows);
        const TypeInfo* info = type_info(t.type);
        CHECK(info != nullptr && info->to_float != nullptr);
        std::vector<float> y(static_cast<size_t>(cols));
        int64_t mismatches = 0;
        for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(MatView{t.type, t.data, cols, rows}, r, y.data());
            const float* want = reinterpret_cast<const float*>(ref->data) + r * cols;
            for (int64_t c = 0; c < cols; ++c) {
                float w;
                std::memcpy(&w, want + c, sizeof w);
                const bool same = std::memcmp(&w, &y[size_t(c)], sizeof w) == 0 || (std::isnan(w) && std::isnan(y[size_t(c)]));
                if (!same && mismatches++ < 3)
                    std::printf("  %s row %lld col %lld: to_float %.9g, gguf-py %.9g\n", t.name.c_str(),
                                (long long)r, (long long)c, y[size_t(c)], w);
            }
        }
        CHECK_EQ(mismatches, int64_t(0));
        std::printf("# %s: %lld x %lld values equal\n", t.name.c_str(), (long long)rows, (long long)cols);
        ++checked;
    }
    CHECK(checked > 0);
}
