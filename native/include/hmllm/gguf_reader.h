// GGUF model files (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), read in place
// from a read-only mapping. Model files come from the network and app sandboxes, so the parser
// treats them as hostile: every read is bounds-checked, every count is checked against the
// bytes actually left before anything is allocated, and any defect becomes a Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hmllm/ggml_types.h"  // GgmlType and type_info(), which size the tensors
#include "hmllm/mapped_file.h"
#include "hmllm/status.h"

namespace hmllm {

// Metadata value types, numbered as in the GGUF specification.
enum class GgufValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};

struct GgufTensorInfo {
    std::string name;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the innermost (contiguous) dimension; unused = 1
    uint32_t type = 0;             // a GgmlType value
    uint64_t offset = 0;           // relative to the start of the data section
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // points into the mapping; valid while the file is mapped
};

// Zero-copy view of a metadata array of strings (e.g. a tokenizer vocabulary). Elements are
// located at parse time, so indexing is O(1) with no per-lookup key search.
class GgufStringArray {
public:
    GgufStringArray() = default;
    size_t size() const { return count_; }
    // Precondition: i < size().
    std::string_view operator[](size_t i) const;

private:
    friend class GgufFile;
    const uint8_t* base_ = nullptr;
    const uint64_t* offsets_ = nullptr;
    size_t count_ = 0;
};

class GgufFile {
public:
    GgufFile() = default;
    GgufFile(GgufFile&&) = default;
    GgufFile& operator=(GgufFile&&) = default;
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    // Maps and validates the whole file structure (not the tensor contents). A malformed file
    // gives InvalidModel, a well-formed one using unsupported features UnsupportedModel; I/O
    // failures come from MappedFile::open. On failure *out is left unchanged.
    static Status open(const std::string& path, GgufFile* out);
    // The same checks over bytes already in memory, viewed in place: they must stay alive and
    // unchanged while this GgufFile is used. `name` stands for the file in messages.
    static Status open_memory(const uint8_t* data, size_t size, const std::string& name,
                              GgufFile* out);

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    size_t data_offset() const { return data_offset_; }  // absolute file offset of tensor data

    // Metadata. Getters return false when the key is missing or its value does not fit the
    // requested type; integer getters accept any integer type whose value is in range.
    bool has_key(std::string_view key) const;
    size_t metadata_count() const { return kvs_.size(); }
    std::string_view metadata_key(size_t i) const;  // in file order; "" when out of range
    bool get_value_type(std::string_view key, uint32_t* type) const;  // a GgufValueType value

    bool get_string(std::string_view key, std::string* out) const;
    bool get_string_view(std::string_view key, std::string_view* out) const;  // into the mapping
    bool get_u32(std::string_view key, uint32_t* out) const;
    bool get_i32(std::string_view key, int32_t* out) const;
    bool get_u64(std::string_view key, uint64_t* out) const;
    bool get_i64(std::string_view key, int64_t* out) const;
    bool get_f32(std::string_view key, float* out) const;  // FLOAT32, or FLOAT64 narrowed
    bool get_bool(std::string_view key, bool* out) const;

    bool get_array_info(std::string_view key, uint32_t* elem_type, uint64_t* count) const;
    bool get_string_array(std::string_view key, GgufStringArray* out) const;
    bool get_string_array_element(std::string_view key, uint64_t i, std::string_view* out) const;
    bool get_f32_array(std::string_view key, std::vector<float>* out) const;    // FLOAT32 only
    bool get_i32_array(std::string_view key, std::vector<int32_t>* out) const;  // any int type

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;

    std::string architecture() const;  // general.architecture, or "" when absent

    // Closing the mapping invalidates every tensor data pointer and metadata view.
    MappedFile& mapping() { return map_; }
    const MappedFile& mapping() const { return map_; }

private:
    friend class GgufParser;

    struct KeyValue {
        std::string_view key;  // into the mapping
        uint32_t type = 0;
        uint64_t offset = 0;  // file offset of the value; for arrays, of the first element
        uint32_t elem_type = 0;  // arrays only
        uint64_t count = 0;      // arrays only
        std::vector<uint64_t> string_offsets;  // string arrays: each element's length prefix
    };

    const KeyValue* find_kv(std::string_view key) const;
    bool get_integer(std::string_view key, int64_t min, uint64_t max, bool* negative,
                     uint64_t* magnitude) const;

    MappedFile map_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    size_t data_offset_ = 0;
    std::vector<KeyValue> kvs_;
    // Keys are views into the mapping, whose address survives moves of GgufFile.
    std::unordered_map<std::string_view, size_t> kv_index_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace hmllm
