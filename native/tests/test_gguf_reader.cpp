// Tests for MappedFile and GgufFile. Every GGUF file is written by the test itself, so the
// suite needs no model downloads and each malformation is exactly the one under test.
#include "test_main.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "hmllm/gguf_reader.h"
#include "hmllm/mapped_file.h"
#include "hmllm/status.h"
#include "support/gguf_builder.h"
#include "support/read_all_metadata.h"

namespace {

using namespace hmllm;
using hmtest::build;
using hmtest::ByteWriter;
using hmtest::FileSpec;
using hmtest::gt;
using hmtest::TensorSpec;
using hmtest::vt;

// ---------------------------------------------------------------------------------------------
// Building GGUF files in memory (support/gguf_builder.h writes them)

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
    return v;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& values) {
    ByteWriter w;
    for (float f : values) w.f32(f);
    return w.bytes;
}

const std::vector<std::string> kTokens = {"<unk>", "<s>", "</s>", "hello", "", "w\xc3\xb6rld"};
const std::vector<float> kScores = {0.0f, -1.5f, -2.25f, 3.0f, 0.125f, -0.5f};
const std::vector<int32_t> kTokenTypes = {2, 3, 3, 1, 1, 1};
const std::vector<float> kEmbd = {0.5f, 1.0f, 1.5f, 2.0f, -1.0f, -2.0f,
                                  3.25f, 4.0f, 0.0f, 8.0f, 9.5f, -0.25f};

// [[1, 2], [3]]: an array of arrays of u32.
std::vector<uint8_t> nested_u32_value() {
    ByteWriter w;
    w.u32(vt(GgufValueType::ARRAY));
    w.u64(2);
    w.u32(vt(GgufValueType::UINT32));
    w.u64(2);
    w.u32(1);
    w.u32(2);
    w.u32(vt(GgufValueType::UINT32));
    w.u64(1);
    w.u32(3);
    return w.bytes;
}

// `levels` arrays nested inside each other, the innermost holding one u32.
std::vector<uint8_t> deeply_nested_value(int levels) {
    ByteWriter w;
    for (int i = 1; i < levels; ++i) {
        w.u32(vt(GgufValueType::ARRAY));
        w.u64(1);
    }
    w.u32(vt(GgufValueType::UINT32));
    w.u64(1);
    w.u32(42);
    return w.bytes;
}

FileSpec valid_spec() {
    FileSpec spec;
    spec.metadata.str("general.architecture", "llama")
        .str("general.name", "tiny test model")
        .u32("llama.context_length", 4096)
        .f32("llama.rope.freq_base", 10000.5f)
        .boolean("tokenizer.ggml.add_bos_token", true)
        .boolean("test.false", false)
        .u8("test.u8", 200)
        .i32("test.negative", -5)
        .i64("test.big", 5000000000LL)
        .u64("test.huge", (1ULL << 63) + 1)
        .f64("test.f64", 0.25)
        .str_array("tokenizer.ggml.tokens", kTokens)
        .f32_array("tokenizer.ggml.scores", kScores)
        .i32_array("tokenizer.ggml.token_type", kTokenTypes)
        .u8_array("test.u8_array", {1, 2, 255})
        .i64_array("test.i64_array", {1, int64_t(1) << 40})
        .raw("test.nested", vt(GgufValueType::ARRAY), nested_u32_value());
    spec.tensors.push_back({"token_embd.weight", {4, 3}, gt(GgmlType::F32), f32_bytes(kEmbd), {}});
    spec.tensors.push_back({"output_norm.weight", {8}, gt(GgmlType::F16), pattern(16, 1), {}});
    // Q8_0: 64 columns = 2 blocks of 34 bytes per row, 2 rows.
    spec.tensors.push_back({"blk.0.attn_q.weight", {64, 2}, gt(GgmlType::Q8_0), pattern(136, 9), {}});
    return spec;
}

// ---------------------------------------------------------------------------------------------
// Files on disk

class TempDir {
public:
    static TempDir& get() {
        static TempDir dir;
        return dir;
    }

    std::string path(const std::string& name) {
        std::string p = dir_ + "/" + name;
        created_.insert(p);
        return p;
    }

    ~TempDir() {
        for (auto it = created_.rbegin(); it != created_.rend(); ++it) std::remove(it->c_str());
        ::rmdir(dir_.c_str());
    }

private:
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                           "/hmllm_test_XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (::mkdtemp(buf.data()) == nullptr) {
            std::perror("mkdtemp");
            std::abort();
        }
        dir_ = buf.data();
    }

    std::string dir_;
    std::set<std::string> created_;
};

std::string write_file(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::string path = TempDir::get().path(name);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    CHECK(f != nullptr);
    const bool written =
        bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    CHECK(std::fclose(f) == 0);
    CHECK(written);
    return path;
}

// Describes what is wrong with the way `bytes` was rejected; empty when it was rejected with
// `code` and a message that names the file and contains `needle`.
std::string rejection_problem(const std::vector<uint8_t>& bytes, ErrorCode code,
                              const std::string& needle) {
    const std::string path = write_file("case.gguf", bytes);
    GgufFile file;
    Status st = GgufFile::open(path, &file);
    if (st.ok()) return "the file was accepted";
    std::string problem;
    if (st.code != code) {
        problem = std::string("code ") + error_code_name(st.code) + " instead of " +
                  error_code_name(code) + "; ";
    }
    if (st.message.find(path) == std::string::npos) problem += "message does not name the file; ";
    if (st.message.find(needle) == std::string::npos) problem += "message lacks '" + needle + "'; ";
    if (!problem.empty()) problem += "message: " + st.message;
    return problem;
}

#define CHECK_REJECTED(bytes, code, needle)                                          \
    do {                                                                             \
        std::string hmtest_problem = rejection_problem((bytes), (code), (needle));   \
        if (!hmtest_problem.empty()) ::hmtest::fail(__FILE__, __LINE__, hmtest_problem); \
    } while (0)

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// Calls every accessor on everything an accepted file offers and reads every byte it points
// at, so the sanitizers see any view that escapes the mapping.
uint64_t exercise(const GgufFile& file) {
    uint64_t sum = hmtest::read_all_metadata(file, [](bool holds, const char* what) {
        if (!holds) ::hmtest::fail(__FILE__, __LINE__, what);
    });
    const uint8_t* begin = file.mapping().data();
    const uint8_t* end = begin + file.mapping().size();
    for (const GgufTensorInfo& t : file.tensors()) {
        CHECK(t.data >= begin && t.data <= end);
        CHECK(t.n_bytes <= static_cast<uint64_t>(end - t.data));
        for (uint64_t j = 0; j < t.n_bytes; ++j) sum += t.data[j];
        CHECK(file.find_tensor(t.name) == &t);
    }
    return sum;
}

// ---------------------------------------------------------------------------------------------
// Status and type table

TEST_CASE(error_code_names) {
    CHECK_EQ(std::string(error_code_name(ErrorCode::Ok)), "OK");
    CHECK_EQ(std::string(error_code_name(ErrorCode::IoError)), "IO_ERROR");
    CHECK_EQ(std::string(error_code_name(ErrorCode::InvalidModel)), "INVALID_MODEL");
    CHECK_EQ(std::string(error_code_name(ErrorCode::UnsupportedModel)), "UNSUPPORTED_MODEL");
    CHECK_EQ(std::string(error_code_name(ErrorCode::OutOfMemory)), "OUT_OF_MEMORY");
    CHECK_EQ(std::string(error_code_name(ErrorCode::InvalidArgument)), "INVALID_ARGUMENT");
    CHECK(Status{}.ok());
    Status st = Status::error(ErrorCode::IoError, "x");
    CHECK(!st.ok());
    CHECK_EQ(st.message, "x");
}

TEST_CASE(type_table) {
    const TypeInfo* q8 = type_info(GgmlType::Q8_0);
    CHECK(q8 != nullptr);
    CHECK_EQ(std::string(q8->name), "q8_0");
    CHECK_EQ(q8->block_size, 32u);
    CHECK_EQ(q8->type_size, 34u);
    CHECK_EQ(type_info(GgmlType::F32)->type_size, 4u);
    CHECK_EQ(type_info(GgmlType::F16)->type_size, 2u);
    CHECK_EQ(type_info(GgmlType::BF16)->type_size, 2u);
    CHECK_EQ(type_info(GgmlType::Q4_0)->type_size, 18u);
    CHECK_EQ(type_info(GgmlType::Q4_K)->block_size, 256u);
    CHECK_EQ(type_info(GgmlType::Q4_K)->type_size, 144u);
    CHECK_EQ(type_info(GgmlType::Q6_K)->type_size, 210u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G64)->block_size, 64u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G64)->type_size, 34u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G128)->block_size, 128u);
    CHECK_EQ(type_info(GgmlType::HM_Q4_G128)->type_size, 66u);
    CHECK(type_info(4u) == nullptr);  // ggml's removed Q4_2
    CHECK(type_info(16u) == nullptr);
    CHECK(type_info(0xffffffffu) == nullptr);
}

// ---------------------------------------------------------------------------------------------
// Valid files

TEST_CASE(valid_v3_header_and_scalars) {
    const std::string path = write_file("valid.gguf", build(valid_spec()));
    GgufFile f;
    Status st = GgufFile::open(path, &f);
    CHECK_EQ(st.message, "");
    CHECK(st.ok());
    CHECK_EQ(f.version(), 3u);
    CHECK_EQ(f.alignment(), 32u);
    CHECK_EQ(f.data_offset() % 32, 0u);
    CHECK(f.data_offset() < f.mapping().size());
    CHECK_EQ(f.mapping().path(), path);
    CHECK_EQ(f.architecture(), "llama");
    CHECK_EQ(f.metadata_count(), 17u);
    CHECK_EQ(f.metadata_key(0), "general.architecture");
    CHECK_EQ(f.metadata_key(16), "test.nested");
    CHECK_EQ(f.metadata_key(17), "");

    CHECK(f.has_key("general.name"));
    CHECK(!f.has_key("general.nam"));
    CHECK(!f.has_key(""));
    uint32_t type = 99;
    CHECK(f.get_value_type("llama.context_length", &type));
    CHECK_EQ(type, vt(GgufValueType::UINT32));
    CHECK(!f.get_value_type("missing", &type));

    std::string s;
    CHECK(f.get_string("general.name", &s));
    CHECK_EQ(s, "tiny test model");
    std::string_view sv;
    CHECK(f.get_string_view("general.architecture", &sv));
    CHECK_EQ(sv, "llama");
    CHECK(sv.data() > reinterpret_cast<const char*>(f.mapping().data()));  // a view, not a copy
    CHECK(!f.get_string("llama.context_length", &s));
    CHECK(!f.get_string("missing", &s));

    uint32_t u32 = 0;
    CHECK(f.get_u32("llama.context_length", &u32));
    CHECK_EQ(u32, 4096u);
    CHECK(f.get_u32("test.u8", &u32));
    CHECK_EQ(u32, 200u);
    u32 = 7;
    CHECK(!f.get_u32("test.negative", &u32));
    CHECK(!f.get_u32("test.big", &u32));
    CHECK(!f.get_u32("general.name", &u32));
    CHECK(!f.get_u32("llama.rope.freq_base", &u32));
    CHECK(!f.get_u32("tokenizer.ggml.add_bos_token", &u32));
    CHECK(!f.get_u32("missing", &u32));
    CHECK_EQ(u32, 7u);  // untouched on failure

    int32_t i32 = 0;
    CHECK(f.get_i32("test.negative", &i32));
    CHECK_EQ(i32, -5);
    CHECK(f.get_i32("llama.context_length", &i32));
    CHECK_EQ(i32, 4096);
    CHECK(!f.get_i32("test.big", &i32));

    uint64_t u64 = 0;
    CHECK(f.get_u64("test.huge", &u64));
    CHECK_EQ(u64, (1ULL << 63) + 1);
    CHECK(f.get_u64("test.u8", &u64));
    CHECK_EQ(u64, 200u);
    CHECK(!f.get_u64("test.negative", &u64));

    int64_t i64 = 0;
    CHECK(f.get_i64("test.big", &i64));
    CHECK_EQ(i64, 5000000000LL);
    CHECK(f.get_i64("test.negative", &i64));
    CHECK_EQ(i64, -5);
    CHECK(!f.get_i64("test.huge", &i64));

    float f32 = 0;
    CHECK(f.get_f32("llama.rope.freq_base", &f32));
    CHECK_EQ(f32, 10000.5f);
    CHECK(f.get_f32("test.f64", &f32));
    CHECK_EQ(f32, 0.25f);
    CHECK(!f.get_f32("llama.context_length", &f32));

    bool b = false;
    CHECK(f.get_bool("tokenizer.ggml.add_bos_token", &b));
    CHECK(b);
    CHECK(f.get_bool("test.false", &b));
    CHECK(!b);
    CHECK(!f.get_bool("test.u8", &b));
    CHECK(!f.get_bool("missing", &b));
}

TEST_CASE(valid_v3_arrays) {
    const std::string path = write_file("valid.gguf", build(valid_spec()));
    GgufFile f;
    CHECK(GgufFile::open(path, &f).ok());

    uint32_t elem = 0;
    uint64_t count = 0;
    CHECK(f.get_array_info("tokenizer.ggml.tokens", &elem, &count));
    CHECK_EQ(elem, vt(GgufValueType::STRING));
    CHECK_EQ(count, kTokens.size());
    CHECK(!f.get_array_info("general.name", &elem, &count));
    CHECK(!f.get_array_info("missing", &elem, &count));

    std::string_view tok;
    CHECK(f.get_string_array_element("tokenizer.ggml.tokens", 1, &tok));
    CHECK_EQ(tok, "<s>");
    CHECK(f.get_string_array_element("tokenizer.ggml.tokens", 4, &tok));
    CHECK_EQ(tok, "");
    CHECK(f.get_string_array_element("tokenizer.ggml.tokens", 5, &tok));
    CHECK_EQ(tok, "w\xc3\xb6rld");
    CHECK(!f.get_string_array_element("tokenizer.ggml.tokens", 6, &tok));
    CHECK(!f.get_string_array_element("tokenizer.ggml.tokens", ~0ULL, &tok));
    CHECK(!f.get_string_array_element("tokenizer.ggml.scores", 0, &tok));

    GgufStringArray vocab;
    CHECK(f.get_string_array("tokenizer.ggml.tokens", &vocab));
    CHECK_EQ(vocab.size(), kTokens.size());
    for (size_t i = 0; i < vocab.size(); ++i) CHECK_EQ(vocab[i], kTokens[i]);
    CHECK(!f.get_string_array("tokenizer.ggml.scores", &vocab));
    CHECK(!f.get_string_array("general.name", &vocab));

    std::vector<float> scores;
    CHECK(f.get_f32_array("tokenizer.ggml.scores", &scores));
    CHECK(scores == kScores);
    CHECK(!f.get_f32_array("tokenizer.ggml.tokens", &scores));
    CHECK(!f.get_f32_array("tokenizer.ggml.token_type", &scores));

    std::vector<int32_t> types;
    CHECK(f.get_i32_array("tokenizer.ggml.token_type", &types));
    CHECK(types == kTokenTypes);
    CHECK(f.get_i32_array("test.u8_array", &types));
    CHECK(types == std::vector<int32_t>({1, 2, 255}));
    CHECK(!f.get_i32_array("test.i64_array", &types));  // 2^40 does not fit
    CHECK(types == std::vector<int32_t>({1, 2, 255}));  // untouched on failure
    CHECK(!f.get_i32_array("tokenizer.ggml.scores", &types));
    CHECK(!f.get_i32_array("tokenizer.ggml.tokens", &types));
    CHECK(!f.get_i32_array("llama.context_length", &types));

    CHECK(f.get_array_info("test.nested", &elem, &count));
    CHECK_EQ(elem, vt(GgufValueType::ARRAY));
    CHECK_EQ(count, 2u);
    CHECK(!f.get_i32_array("test.nested", &types));
}

TEST_CASE(valid_v3_tensors) {
    const FileSpec spec = valid_spec();
    const std::string path = write_file("valid.gguf", build(spec));
    GgufFile f;
    CHECK(GgufFile::open(path, &f).ok());
    CHECK_EQ(f.tensors().size(), 3u);

    const uint8_t* begin = f.mapping().data();
    const uint8_t* end = begin + f.mapping().size();
    const uint64_t expected_bytes[3] = {48, 16, 136};
    const uint64_t expected_offset[3] = {0, 64, 96};
    for (size_t i = 0; i < 3; ++i) {
        const GgufTensorInfo& t = f.tensors()[i];
        const TensorSpec& want = spec.tensors[i];
        CHECK_EQ(t.name, want.name);
        CHECK_EQ(t.n_dims, want.ne.size());
        for (size_t d = 0; d < 4; ++d) {
            CHECK_EQ(t.ne[d], d < want.ne.size() ? static_cast<int64_t>(want.ne[d]) : 1);
        }
        CHECK_EQ(t.type, want.type);
        CHECK_EQ(t.n_bytes, expected_bytes[i]);
        CHECK_EQ(t.offset, expected_offset[i]);
        CHECK_EQ(t.offset % f.alignment(), 0u);
        CHECK(t.data == begin + f.data_offset() + t.offset);
        CHECK(t.data >= begin && t.data + t.n_bytes <= end);
        CHECK(std::memcmp(t.data, want.data.data(), want.data.size()) == 0);
        CHECK(f.find_tensor(want.name) == &t);
    }
    // The last tensor ends the file; the truncation sweep relies on it.
    const GgufTensorInfo& last = f.tensors().back();
    CHECK(last.data + last.n_bytes == end);

    float first;
    std::memcpy(&first, f.find_tensor("token_embd.weight")->data, sizeof first);
    CHECK_EQ(first, 0.5f);
    CHECK(f.find_tensor("missing") == nullptr);
    CHECK(f.find_tensor("") == nullptr);
    CHECK(f.find_tensor("token_embd.weigh") == nullptr);
}

TEST_CASE(valid_v2_with_alignment_64) {
    FileSpec spec = valid_spec();
    spec.version = 2;
    spec.alignment = 64;
    spec.metadata.u32("general.alignment", 64);
    const std::string path = write_file("v2.gguf", build(spec));
    GgufFile f;
    Status st = GgufFile::open(path, &f);
    CHECK_EQ(st.message, "");
    CHECK_EQ(f.version(), 2u);
    CHECK_EQ(f.alignment(), 64u);
    CHECK_EQ(f.data_offset() % 64, 0u);
    CHECK_EQ(f.tensors().size(), 3u);
    CHECK_EQ(f.tensors()[1].offset, 64u);
    CHECK_EQ(f.tensors()[2].offset, 128u);
    for (size_t i = 0; i < 3; ++i) {
        CHECK(std::memcmp(f.tensors()[i].data, spec.tensors[i].data.data(),
                          spec.tensors[i].data.size()) == 0);
    }
    uint32_t alignment = 0;
    CHECK(f.get_u32("general.alignment", &alignment));
    CHECK_EQ(alignment, 64u);
}

TEST_CASE(metadata_only_file) {
    FileSpec spec;
    spec.metadata.str("general.architecture", "gemma3");
    const std::string path = write_file("meta.gguf", build(spec));
    GgufFile f;
    CHECK(GgufFile::open(path, &f).ok());
    CHECK(f.tensors().empty());
    CHECK_EQ(f.architecture(), "gemma3");
    CHECK(f.data_offset() <= f.mapping().size());
}

TEST_CASE(no_architecture_gives_empty_string) {
    FileSpec spec;
    spec.metadata.u32("general.architecture", 5);  // wrong type counts as absent
    const std::string path = write_file("noarch.gguf", build(spec));
    GgufFile f;
    CHECK(GgufFile::open(path, &f).ok());
    CHECK_EQ(f.architecture(), "");
}

TEST_CASE(arrays_nested_up_to_the_limit_load) {
    FileSpec spec;
    spec.metadata.raw("deep", vt(GgufValueType::ARRAY), deeply_nested_value(8));
    GgufFile f;
    CHECK(GgufFile::open(write_file("nested.gguf", build(spec)), &f).ok());
    uint32_t elem;
    uint64_t count;
    CHECK(f.get_array_info("deep", &elem, &count));
    CHECK_EQ(elem, vt(GgufValueType::ARRAY));
    CHECK_EQ(count, 1u);
}

TEST_CASE(moved_file_keeps_views_valid) {
    const FileSpec spec = valid_spec();
    GgufFile a;
    CHECK(GgufFile::open(write_file("valid.gguf", build(spec)), &a).ok());
    const uint8_t* data = a.tensors()[2].data;
    GgufFile b(std::move(a));
    CHECK(b.tensors()[2].data == data);
    CHECK(std::memcmp(b.tensors()[2].data, spec.tensors[2].data.data(), 136) == 0);
    CHECK(b.find_tensor("blk.0.attn_q.weight") == &b.tensors()[2]);
    CHECK_EQ(b.architecture(), "llama");
    GgufFile c;
    c = std::move(b);
    std::string_view tok;
    CHECK(c.get_string_array_element("tokenizer.ggml.tokens", 3, &tok));
    CHECK_EQ(tok, "hello");
    CHECK(c.find_tensor("output_norm.weight") != nullptr);
}

TEST_CASE(failed_open_leaves_output_unchanged) {
    GgufFile f;
    CHECK(GgufFile::open(write_file("valid.gguf", build(valid_spec())), &f).ok());
    Status st = GgufFile::open(TempDir::get().path("does_not_exist.gguf"), &f);
    CHECK(!st.ok());
    CHECK_EQ(f.tensors().size(), 3u);
    CHECK_EQ(f.architecture(), "llama");
    CHECK(f.tensors()[0].data == f.mapping().data() + f.data_offset());
}

TEST_CASE(large_vocabulary_is_indexed_once) {
    // Gemma-sized: the tokenizer needs random access to all 262144 entries.
    constexpr size_t kVocab = 262144;
    std::vector<std::string> tokens(kVocab);
    for (size_t i = 0; i < kVocab; ++i) tokens[i] = "tok" + std::to_string(i);
    FileSpec spec;
    spec.metadata.str_array("tokenizer.ggml.tokens", tokens);
    GgufFile f;
    CHECK(GgufFile::open(write_file("vocab.gguf", build(spec)), &f).ok());
    GgufStringArray vocab;
    CHECK(f.get_string_array("tokenizer.ggml.tokens", &vocab));
    CHECK_EQ(vocab.size(), kVocab);
    size_t total = 0;
    for (size_t i = 0; i < vocab.size(); ++i) total += vocab[i].size();
    size_t expected = 0;
    for (const std::string& t : tokens) expected += t.size();
    CHECK_EQ(total, expected);
    CHECK_EQ(vocab[0], "tok0");
    CHECK_EQ(vocab[kVocab - 1], "tok262143");
    std::string_view last;
    CHECK(f.get_string_array_element("tokenizer.ggml.tokens", kVocab - 1, &last));
    CHECK_EQ(last, "tok262143");
}

// ---------------------------------------------------------------------------------------------
// MappedFile

TEST_CASE(missing_file_is_io_error) {
    const std::string path = TempDir::get().path("missing.gguf");
    MappedFile m;
    Status st = MappedFile::open(path, &m);
    CHECK_EQ(st.code, ErrorCode::IoError);
    CHECK_EQ(st.message, "cannot open " + path + ": No such file or directory");
    GgufFile f;
    st = GgufFile::open(path, &f);
    CHECK_EQ(st.code, ErrorCode::IoError);
    CHECK(contains(st.message, path));
}

TEST_CASE(directory_is_io_error) {
    const std::string path = TempDir::get().path("a_directory");
    CHECK(::mkdir(path.c_str(), 0700) == 0);
    MappedFile m;
    Status st = MappedFile::open(path, &m);
    CHECK_EQ(st.code, ErrorCode::IoError);
    CHECK(contains(st.message, path));
    GgufFile f;
    CHECK_EQ(GgufFile::open(path, &f).code, ErrorCode::IoError);
}

TEST_CASE(empty_file_is_invalid_model) {
    const std::string path = write_file("empty.gguf", {});
    MappedFile m;
    Status st = MappedFile::open(path, &m);
    CHECK_EQ(st.code, ErrorCode::InvalidModel);
    CHECK(contains(st.message, path));
    CHECK(contains(st.message, "empty"));
    CHECK_REJECTED(std::vector<uint8_t>{}, ErrorCode::InvalidModel, "empty");
}

TEST_CASE(prefault_and_close) {
    const std::vector<uint8_t> bytes = pattern(3 * 4096 + 5, 3);
    const std::string path = write_file("blob.bin", bytes);
    MappedFile m;
    CHECK(MappedFile::open(path, &m).ok());
    CHECK(m.is_open());
    CHECK_EQ(m.size(), bytes.size());
    CHECK(std::memcmp(m.data(), bytes.data(), bytes.size()) == 0);
    m.advise_sequential();
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t pages = m.prefault();
    CHECK(pages > 0);
    CHECK_EQ(pages, (bytes.size() + page - 1) / page);
    m.close();
    CHECK(!m.is_open());
    CHECK(m.data() == nullptr);
    CHECK_EQ(m.size(), 0u);
    m.close();
    CHECK_EQ(m.prefault(), 0u);
    m.advise_sequential();
}

TEST_CASE(mapped_file_moves) {
    const std::string path = write_file("blob.bin", pattern(100, 1));
    MappedFile a;
    CHECK(MappedFile::open(path, &a).ok());
    const uint8_t* data = a.data();
    MappedFile b(std::move(a));
    CHECK(a.data() == nullptr);
    CHECK(b.data() == data);
    CHECK_EQ(b.size(), 100u);
    MappedFile c;
    CHECK(MappedFile::open(path, &c).ok());
    c = std::move(b);  // c's own mapping is released, b's is taken over
    CHECK(c.data() == data);
    CHECK_EQ(c.data()[1], static_cast<uint8_t>(8));
    CHECK(!b.is_open());
}

TEST_CASE(gguf_mapping_close_twice) {
    GgufFile f;
    CHECK(GgufFile::open(write_file("valid.gguf", build(valid_spec())), &f).ok());
    CHECK(f.mapping().prefault() > 0);
    f.mapping().close();
    f.mapping().close();
    CHECK(!f.mapping().is_open());
}

// ---------------------------------------------------------------------------------------------
// Malformed files: one case per defect

TEST_CASE(rejects_bad_magic) {
    FileSpec spec = valid_spec();
    std::memcpy(spec.magic, "GGML", 4);
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "is not a GGUF file (bad magic)");
    const std::string text = "this is a text file, not a model at all\n";
    CHECK_REJECTED(std::vector<uint8_t>(text.begin(), text.end()), ErrorCode::InvalidModel,
                   "bad magic");
    CHECK_REJECTED(std::vector<uint8_t>({'G', 'X'}), ErrorCode::InvalidModel, "bad magic");
}

TEST_CASE(rejects_version_1) {
    FileSpec spec = valid_spec();
    spec.version = 1;
    CHECK_REJECTED(build(spec), ErrorCode::UnsupportedModel, "GGUF version 1 is not supported");
}

TEST_CASE(rejects_big_endian) {
    FileSpec spec = valid_spec();
    spec.version = 0x03000000;
    CHECK_REJECTED(build(spec), ErrorCode::UnsupportedModel, "big-endian");
}

TEST_CASE(rejects_unknown_version) {
    FileSpec spec = valid_spec();
    spec.version = 4;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "unknown GGUF version 4");
    spec.version = 0;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "unknown GGUF version 0");
}

TEST_CASE(rejects_truncated_header) {
    std::vector<uint8_t> bytes = build(valid_spec());
    bytes.resize(12);
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel, "ends inside the header");
    bytes.resize(6);
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel, "ends inside the header");
}

TEST_CASE(rejects_truncation_inside_a_kv) {
    // A single entry, so the header's counts stay plausible for the short prefixes and the
    // failure is reported where the data really ends.
    FileSpec spec;
    spec.metadata.str("general.architecture", "llama");
    const std::vector<uint8_t> full = build(spec);
    // Header, then key length, 20 key bytes, type, string length and the value.
    const size_t value_start = 24 + 8 + 20 + 4 + 8;
    std::vector<uint8_t> bytes(full.begin(), full.begin() + value_start + 2);
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel,
                   "a string in metadata entry 0 ('general.architecture') claims 5 bytes but "
                   "only 2 remain");
    bytes.assign(full.begin(), full.begin() + 24 + 8 + 20 + 2);
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel,
                   "the file ends inside metadata entry 0 ('general.architecture')");
    bytes.assign(full.begin(), full.begin() + 24 + 8 + 8);
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel,
                   "the key in metadata entry 0 claims 20 bytes but only 8 remain");
    // In a full-size file the header's entry count already gives the truncation away.
    const std::vector<uint8_t> big = build(valid_spec());
    bytes.assign(big.begin(), big.begin() + 40);
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel, "claims 17 metadata entries");
}

TEST_CASE(rejects_string_length_past_end) {
    ByteWriter value;
    value.u64(1000);
    value.raw("short", 5);
    FileSpec spec;
    spec.metadata.raw("general.name", vt(GgufValueType::STRING), value.bytes);
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "claims 1000 bytes but only 5 remain");

    ByteWriter huge;
    huge.u64(~0ULL);  // pos + length would wrap around
    huge.raw("x", 1);
    FileSpec spec2;
    spec2.metadata.raw("general.name", vt(GgufValueType::STRING), huge.bytes);
    CHECK_REJECTED(build(spec2), ErrorCode::InvalidModel, "claims 18446744073709551615 bytes");

    // A key whose length runs past the end.
    ByteWriter w;
    w.raw("GGUF", 4);
    w.u32(3);
    w.u64(0);
    w.u64(1);
    w.u64(500);
    w.raw("general.name", 12);
    CHECK_REJECTED(w.bytes, ErrorCode::InvalidModel, "the key in metadata entry 0 claims 500");
}

TEST_CASE(rejects_huge_array_counts_without_allocating) {
    // Under ASan an attempt to reserve 2^60 elements aborts the process, so passing this test
    // also proves that nothing was allocated from the bogus count.
    const uint32_t elem_types[] = {vt(GgufValueType::UINT32), vt(GgufValueType::STRING),
                                   vt(GgufValueType::ARRAY), vt(GgufValueType::UINT8)};
    for (uint32_t elem : elem_types) {
        ByteWriter value;
        value.u32(elem);
        value.u64(1ULL << 60);
        value.u64(0);
        FileSpec spec = valid_spec();
        spec.metadata.raw("tokenizer.ggml.merges", vt(GgufValueType::ARRAY), value.bytes);
        CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "claims 1152921504606846976 array");
    }
    // The same inside a nested array.
    ByteWriter nested;
    nested.u32(vt(GgufValueType::ARRAY));
    nested.u64(1);
    nested.u32(vt(GgufValueType::STRING));
    nested.u64(1ULL << 60);
    FileSpec spec;
    spec.metadata.raw("nested", vt(GgufValueType::ARRAY), nested.bytes);
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "array elements");
}

TEST_CASE(rejects_huge_tensor_and_kv_counts) {
    FileSpec spec = valid_spec();
    spec.tensor_count = 1ULL << 60;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "claims 1152921504606846976 tensors");
    spec.tensor_count = ~0ULL;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "tensors");
    // Plausible in the header alone, but not once the metadata has used up the bytes.
    spec.tensor_count = build(valid_spec()).size() / 40;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "tensors");

    FileSpec kv = valid_spec();
    kv.kv_count = 1ULL << 60;
    CHECK_REJECTED(build(kv), ErrorCode::InvalidModel, "claims 1152921504606846976 metadata");
    kv.kv_count = kv.metadata.count + 1;  // one more than present: runs into the tensor infos
    const std::string problem = rejection_problem(build(kv), ErrorCode::InvalidModel, "");
    CHECK_EQ(problem, "");
}

TEST_CASE(rejects_bad_dimension_counts) {
    FileSpec spec = valid_spec();
    spec.tensors[0].ne = {};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                   "tensor 'token_embd.weight' has 0 dimensions (must be 1 to 4)");
    spec.tensors[0].ne = {4, 3, 1, 1, 1};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "has 5 dimensions");
    spec.tensors[0].ne = {4, 3, 1, 1};  // 4 is fine
    CHECK_EQ(rejection_problem(build(spec), ErrorCode::InvalidModel, ""), "the file was accepted");
}

TEST_CASE(rejects_zero_and_negative_extents) {
    FileSpec spec = valid_spec();
    spec.tensors[0].ne = {4, 0};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "has dimension 1 of 0");
    spec.tensors[0].ne = {~0ULL, 1};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "has dimension 0 of -1");
    spec.tensors[0].ne = {4, 1ULL << 63};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "has dimension 1 of -9223372036854775808");
}

TEST_CASE(rejects_size_overflow) {
    FileSpec spec = valid_spec();
    spec.tensors[0].ne = {1ULL << 32, 1ULL << 32};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "more elements than fit");
    spec.tensors[0].ne = {1ULL << 20, 1ULL << 20, 1ULL << 20, 1ULL << 20};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "more elements than fit");
    // 2^62 f32 elements are countable but take 2^64 bytes.
    spec.tensors[0].ne = {1ULL << 31, 1ULL << 31};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "too large to address");
    // Fits in 64 bits but not in the file.
    spec.tensors[0].ne = {1ULL << 20, 1ULL << 20};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "past the end of the file");
}

TEST_CASE(rejects_unknown_tensor_type) {
    FileSpec spec = valid_spec();
    spec.tensors[1].type = 999;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                   "tensor 'output_norm.weight' has unknown type 999");
    spec.tensors[1].type = 16;  // a ggml type (IQ2_XXS) this runtime does not implement
    CHECK_REJECTED(build(spec), ErrorCode::UnsupportedModel,
                   "tensor 'output_norm.weight' has type iq2_xxs, which this runtime cannot run; it runs files "
                   "whose tensors are f32, f16, q4_0");
    spec.tensors[1].type = 40;  // in ggml's range, not (yet) assigned
    CHECK_REJECTED(build(spec), ErrorCode::UnsupportedModel, "has type number 40, which this runtime cannot run");
}

TEST_CASE(rejects_row_not_multiple_of_block) {
    FileSpec spec = valid_spec();
    spec.tensors[2].ne = {48, 2};
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "not a multiple of the block size 32");
}

TEST_CASE(rejects_misaligned_offset) {
    FileSpec spec = valid_spec();
    spec.tensors[1].offset = 48;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                   "tensor 'output_norm.weight' has data offset 48, which is not a multiple of "
                   "the alignment 32");
}

TEST_CASE(rejects_data_past_end) {
    FileSpec spec = valid_spec();
    spec.tensors[2].offset = 1ULL << 20;
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "past the end of the file");
    spec.tensors[2].offset = ~0ULL - 31;  // aligned, and offset + n_bytes wraps around
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "past the end of the file");
    std::vector<uint8_t> bytes = build(valid_spec());
    bytes.pop_back();
    CHECK_REJECTED(bytes, ErrorCode::InvalidModel, "tensor 'blk.0.attn_q.weight' needs 136 bytes");
}

TEST_CASE(rejects_bad_alignment) {
    const uint32_t bad[] = {3, 0, 48, 0xffffffffu};
    for (uint32_t a : bad) {
        FileSpec spec = valid_spec();
        spec.metadata.u32("general.alignment", a);
        CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                       "general.alignment is " + std::to_string(a) + ", which is not a power of two");
    }
    FileSpec spec = valid_spec();
    spec.metadata.str("general.alignment", "32");
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "general.alignment must be");
    FileSpec neg = valid_spec();
    neg.metadata.i32("general.alignment", -32);
    CHECK_REJECTED(build(neg), ErrorCode::InvalidModel, "general.alignment must be");
}

TEST_CASE(rejects_duplicate_tensor_name) {
    FileSpec spec = valid_spec();
    spec.tensors[2].name = "token_embd.weight";
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                   "tensor 'token_embd.weight' appears more than once");
}

TEST_CASE(rejects_duplicate_key) {
    FileSpec spec = valid_spec();
    spec.metadata.str("general.name", "again");
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                   "metadata key 'general.name' appears more than once");
}

TEST_CASE(rejects_unknown_value_types) {
    FileSpec spec = valid_spec();
    spec.metadata.raw("test.weird", 13, {0, 0, 0, 0});
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel,
                   "metadata entry 17 ('test.weird') has unknown value type 13");
    ByteWriter value;
    value.u32(0x80000000u);
    value.u64(1);
    value.u32(0);
    FileSpec arr = valid_spec();
    arr.metadata.raw("test.weird", vt(GgufValueType::ARRAY), value.bytes);
    CHECK_REJECTED(build(arr), ErrorCode::InvalidModel, "array of unknown value type 2147483648");
}

TEST_CASE(rejects_arrays_nested_too_deep) {
    const int depths[] = {9, 100, 100000};
    for (int depth : depths) {
        FileSpec spec;
        spec.metadata.raw("deep", vt(GgufValueType::ARRAY), deeply_nested_value(depth));
        CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "nests arrays more than 8 levels");
    }
}

TEST_CASE(rejects_empty_key_and_name) {
    FileSpec spec = valid_spec();
    spec.metadata.u32("", 1);
    CHECK_REJECTED(build(spec), ErrorCode::InvalidModel, "metadata entry 17 has an empty key");
    FileSpec t = valid_spec();
    t.tensors[0].name = "";
    CHECK_REJECTED(build(t), ErrorCode::InvalidModel, "tensor info 0 has an empty name");
}

TEST_CASE(error_messages_keep_hostile_names_printable) {
    FileSpec spec = valid_spec();
    spec.tensors[1].name = std::string("bad\n\x01name") + std::string(500, 'x');
    spec.tensors[1].type = 999;
    const std::string path = write_file("hostile.gguf", build(spec));
    GgufFile f;
    Status st = GgufFile::open(path, &f);
    CHECK_EQ(st.code, ErrorCode::InvalidModel);
    CHECK(contains(st.message, "tensor 'bad??name"));
    CHECK(!contains(st.message, "\n"));
    CHECK(st.message.size() < 400);
}

// ---------------------------------------------------------------------------------------------
// Sweeps: hostile input must never crash, over-read or over-allocate

TEST_CASE(every_truncation_is_rejected) {
    const std::vector<uint8_t> full = build(valid_spec());
    for (size_t len = 0; len < full.size(); ++len) {
        const std::vector<uint8_t> prefix(full.begin(), full.begin() + len);
        const std::string path = write_file("truncated.gguf", prefix);
        GgufFile f;
        Status st = GgufFile::open(path, &f);
        if (st.ok() || st.code != ErrorCode::InvalidModel || !contains(st.message, path)) {
            ::hmtest::fail(__FILE__, __LINE__,
                           "prefix of " + std::to_string(len) + " bytes: " +
                               error_code_name(st.code) + " '" + st.message + "'");
        }
    }
}

// Bytes [0, data_offset) of the valid file: the header, metadata and tensor infos.
size_t structure_size(const std::vector<uint8_t>& bytes) {
    GgufFile f;
    Status st = GgufFile::open(write_file("valid.gguf", bytes), &f);
    CHECK(st.ok());
    return f.data_offset();
}

void open_mutated(const std::vector<uint8_t>& bytes, size_t* accepted) {
    const std::string path = write_file("mutated.gguf", bytes);
    GgufFile f;
    Status st = GgufFile::open(path, &f);
    if (st.ok()) {
        ++*accepted;
        exercise(f);
        return;
    }
    CHECK(st.code == ErrorCode::InvalidModel || st.code == ErrorCode::UnsupportedModel);
    CHECK(contains(st.message, path));
}

TEST_CASE(bit_flips_never_crash) {
    const std::vector<uint8_t> valid = build(valid_spec());
    const size_t region = structure_size(valid);
    size_t accepted = 0;
    std::vector<uint8_t> bytes = valid;
    for (size_t i = 0; i < region; ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            bytes[i] = static_cast<uint8_t>(valid[i] ^ (1u << bit));
            open_mutated(bytes, &accepted);
        }
        bytes[i] = valid[i];
    }
    // Flips inside string values and padding keep the file valid; most others must not.
    CHECK(accepted > 0);
    CHECK(accepted < region * 8);
}

TEST_CASE(random_field_smashing_never_crashes) {
    const std::vector<uint8_t> valid = build(valid_spec());
    const size_t region = structure_size(valid);
    // Values chosen to hit the boundaries of the checks: counts and lengths near the file
    // size, sign bits, and wrap-around.
    const uint64_t interesting[] = {0,          1,          2,           3,
                                    4,          8,          9,           12,
                                    31,         32,         33,          0x7f,
                                    0xff,       0x100,      0x7fffffff,  0x80000000,
                                    0xffffffff, 1ULL << 32, 1ULL << 60,  1ULL << 62,
                                    1ULL << 63, ~0ULL,      ~0ULL - 31,  valid.size(),
                                    region};
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    auto next = [&rng]() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    size_t accepted = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        std::vector<uint8_t> bytes = valid;
        const int edits = 1 + static_cast<int>(next() % 3);
        for (int e = 0; e < edits; ++e) {
            const size_t width = size_t(1) << (next() % 4);  // 1, 2, 4 or 8 bytes
            const size_t pos = static_cast<size_t>(next() % (region - width + 1));
            const uint64_t value = next() % 2 == 0
                                       ? interesting[next() % (sizeof interesting / sizeof(uint64_t))]
                                       : next();
            for (size_t b = 0; b < width; ++b) bytes[pos + b] = static_cast<uint8_t>(value >> (8 * b));
        }
        open_mutated(bytes, &accepted);
    }
}

}  // namespace
