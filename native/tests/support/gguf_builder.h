// Building GGUF files in memory, for the native tests and the fuzz targets (native/fuzz/), which
// write their own files so that no model download is needed and each malformation is exactly
// the one under test: Metadata (key/value pairs) and FileSpec/build() (header, tensors, layout),
// and Vocabulary for the tokenizer.ggml.* keys of small tokenizer vocabularies. Header-only;
// not part of the runtime.
//
//   hmtest::Vocabulary v = hmtest::bpe_skeleton("gpt-2");
//   v.add("he", 1);
//   v.merges = {"h e"};
//   std::vector<uint8_t> file = hmtest::metadata_only_file(v.metadata());
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hmllm/gguf_reader.h"

namespace hmtest {

constexpr uint32_t vt(hmllm::GgufValueType t) { return static_cast<uint32_t>(t); }
constexpr uint32_t gt(hmllm::GgmlType t) { return static_cast<uint32_t>(t); }

class ByteWriter {
public:
    void u8(uint8_t v) { bytes.push_back(v); }
    void u16(uint16_t v) { put(v, 2); }
    void u32(uint32_t v) { put(v, 4); }
    void u64(uint64_t v) { put(v, 8); }
    void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
    void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
    void f32(float v) {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        u32(bits);
    }
    void f64(double v) {
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        u64(bits);
    }
    void str(std::string_view s) {
        u64(s.size());
        raw(s.data(), s.size());
    }
    void raw(const void* p, size_t n) {
        const uint8_t* b = static_cast<const uint8_t*>(p);
        bytes.insert(bytes.end(), b, b + n);
    }
    void append(const std::vector<uint8_t>& b) { bytes.insert(bytes.end(), b.begin(), b.end()); }

    std::vector<uint8_t> bytes;

private:
    // GGUF is little-endian regardless of the host.
    void put(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
};

// The metadata section; each call appends one key/value pair.
class Metadata {
public:
    using Type = hmllm::GgufValueType;

    Metadata& str(std::string_view key, std::string_view v) {
        head(key, Type::STRING);
        w.str(v);
        return *this;
    }
    Metadata& u8(std::string_view key, uint8_t v) {
        head(key, Type::UINT8);
        w.u8(v);
        return *this;
    }
    Metadata& u32(std::string_view key, uint32_t v) {
        head(key, Type::UINT32);
        w.u32(v);
        return *this;
    }
    Metadata& i32(std::string_view key, int32_t v) {
        head(key, Type::INT32);
        w.i32(v);
        return *this;
    }
    Metadata& u64(std::string_view key, uint64_t v) {
        head(key, Type::UINT64);
        w.u64(v);
        return *this;
    }
    Metadata& i64(std::string_view key, int64_t v) {
        head(key, Type::INT64);
        w.i64(v);
        return *this;
    }
    Metadata& f32(std::string_view key, float v) {
        head(key, Type::FLOAT32);
        w.f32(v);
        return *this;
    }
    Metadata& f64(std::string_view key, double v) {
        head(key, Type::FLOAT64);
        w.f64(v);
        return *this;
    }
    Metadata& boolean(std::string_view key, bool v) {
        head(key, Type::BOOL);
        w.u8(v ? 1 : 0);
        return *this;
    }
    Metadata& str_array(std::string_view key, const std::vector<std::string>& v) {
        array_head(key, Type::STRING, v.size());
        for (const std::string& s : v) w.str(s);
        return *this;
    }
    Metadata& f32_array(std::string_view key, const std::vector<float>& v) {
        array_head(key, Type::FLOAT32, v.size());
        for (float f : v) w.f32(f);
        return *this;
    }
    Metadata& i32_array(std::string_view key, const std::vector<int32_t>& v) {
        array_head(key, Type::INT32, v.size());
        for (int32_t i : v) w.i32(i);
        return *this;
    }
    Metadata& u8_array(std::string_view key, const std::vector<uint8_t>& v) {
        array_head(key, Type::UINT8, v.size());
        for (uint8_t i : v) w.u8(i);
        return *this;
    }
    Metadata& i64_array(std::string_view key, const std::vector<int64_t>& v) {
        array_head(key, Type::INT64, v.size());
        for (int64_t i : v) w.i64(i);
        return *this;
    }
    // For crafted entries: the key and raw type, then whatever bytes the caller supplies.
    Metadata& raw(std::string_view key, uint32_t type, const std::vector<uint8_t>& value) {
        w.str(key);
        w.u32(type);
        w.append(value);
        ++count;
        return *this;
    }

    ByteWriter w;
    uint64_t count = 0;

private:
    void head(std::string_view key, Type type) {
        w.str(key);
        w.u32(vt(type));
        ++count;
    }
    void array_head(std::string_view key, Type elem, uint64_t n) {
        head(key, Type::ARRAY);
        w.u32(vt(elem));
        w.u64(n);
    }
};

struct TensorSpec {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;  // recorded offset; by default where the data really is
};

struct FileSpec {
    char magic[4] = {'G', 'G', 'U', 'F'};
    uint32_t version = 3;
    Metadata metadata;
    std::vector<TensorSpec> tensors;
    uint64_t alignment = 32;  // layout only; add general.alignment to the metadata yourself
    std::optional<uint64_t> tensor_count;  // header overrides
    std::optional<uint64_t> kv_count;
};

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Writes header, metadata, tensor infos, padding and data. The last tensor ends exactly at the
// end of the file, so that every proper prefix of a valid file is invalid.
inline std::vector<uint8_t> build(const FileSpec& spec) {
    ByteWriter w;
    w.raw(spec.magic, 4);
    w.u32(spec.version);
    w.u64(spec.tensor_count.value_or(spec.tensors.size()));
    w.u64(spec.kv_count.value_or(spec.metadata.count));
    w.append(spec.metadata.w.bytes);

    std::vector<uint64_t> layout;
    uint64_t cursor = 0;
    for (const TensorSpec& t : spec.tensors) {
        cursor = align_up(cursor, spec.alignment);
        layout.push_back(cursor);
        cursor += t.data.size();
    }
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
        const TensorSpec& t = spec.tensors[i];
        w.str(t.name);
        w.u32(static_cast<uint32_t>(t.ne.size()));
        for (uint64_t ne : t.ne) w.u64(ne);
        w.u32(t.type);
        w.u64(t.offset.value_or(layout[i]));
    }
    if (!spec.tensors.empty()) {
        while (w.bytes.size() % spec.alignment != 0) w.u8(0);
    }
    const size_t data_start = w.bytes.size();
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
        while (w.bytes.size() - data_start < layout[i]) w.u8(0);
        w.append(spec.tensors[i].data);
    }
    return w.bytes;
}

// A GGUF v3 file holding `metadata` and no tensors: how the tokenizer tests ship a vocabulary.
inline std::vector<uint8_t> metadata_only_file(const Metadata& metadata) {
    FileSpec spec;
    spec.metadata = metadata;
    return build(spec);
}

// ---- tokenizer vocabularies ----------------------------------------------------------------

// The piece GPT-2's byte-level BPE spells byte b with (bytes_to_unicode), written out from its
// definition rather than taken from the tokenizer under test: printable bytes map to themselves,
// the rest to U+0100, U+0101, ... in byte order.
inline std::string gpt2_byte_piece(int b) {
    auto printable = [](int c) {
        return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
    };
    int cp = b;
    if (!printable(b)) {
        cp = 256;
        for (int c = 0; c < b; ++c) cp += printable(c) ? 0 : 1;
    }
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

// A vocabulary as the tokenizer.ggml.* keys llama.cpp writes; what is empty or unset is left
// out of the file. Token types are llama.cpp's: 1 normal, 2 unknown, 3 control, 4 user-defined,
// 6 byte.
struct Vocabulary {
    std::string model;  // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
    std::string pre;    // the BPE pre-tokenizer
    std::vector<std::string> tokens;  // in id order
    std::vector<float> scores;        // SentencePiece only
    std::vector<int32_t> types;
    std::vector<std::string> merges;  // BPE only
    std::optional<uint32_t> bos, eos, unk;
    std::optional<bool> add_bos, add_space_prefix;

    // A SentencePiece token.
    void add(const std::string& piece, float score, int32_t type) {
        tokens.push_back(piece);
        scores.push_back(score);
        types.push_back(type);
    }
    // A BPE token (BPE vocabularies have no scores).
    void add(const std::string& piece, int32_t type) {
        tokens.push_back(piece);
        types.push_back(type);
    }

    Metadata metadata() const {
        Metadata m;
        m.str("tokenizer.ggml.model", model);
        if (!pre.empty()) m.str("tokenizer.ggml.pre", pre);
        m.str_array("tokenizer.ggml.tokens", tokens);
        if (!scores.empty()) m.f32_array("tokenizer.ggml.scores", scores);
        if (!types.empty()) m.i32_array("tokenizer.ggml.token_type", types);
        if (!merges.empty()) m.str_array("tokenizer.ggml.merges", merges);
        if (bos) m.u32("tokenizer.ggml.bos_token_id", *bos);
        if (eos) m.u32("tokenizer.ggml.eos_token_id", *eos);
        if (unk) m.u32("tokenizer.ggml.unknown_token_id", *unk);
        if (add_bos) m.boolean("tokenizer.ggml.add_bos_token", *add_bos);
        if (add_space_prefix) m.boolean("tokenizer.ggml.add_space_prefix", *add_space_prefix);
        return m;
    }
};

// What every test SentencePiece vocabulary starts with: ids 0 <unk>, 1 <s> (BOS, added),
// 2 </s> (EOS), 3..258 the byte-fallback pieces <0x00>..<0xFF>.
inline Vocabulary spm_skeleton(bool add_space_prefix) {
    Vocabulary v;
    v.model = "llama";
    v.add("<unk>", 0, 2);
    v.add("<s>", 0, 3);
    v.add("</s>", 0, 3);
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        v.add(piece, 0, 6);
    }
    v.bos = 1;
    v.eos = 2;
    v.unk = 0;
    v.add_bos = true;
    v.add_space_prefix = add_space_prefix;
    return v;
}

// What every test byte-level BPE vocabulary starts with: ids 0..255 the byte pieces, no BOS
// added; the caller sets BOS and EOS.
inline Vocabulary bpe_skeleton(const std::string& pre) {
    Vocabulary v;
    v.model = "gpt2";
    v.pre = pre;
    for (int b = 0; b < 256; ++b) v.add(gpt2_byte_piece(b), 1);
    v.add_bos = false;
    return v;
}

}  // namespace hmtest
