// libFuzzer target: a GGUF file of arbitrary bytes, parsed in place from the fuzzer's buffer (so
// AddressSanitizer sees a read even one byte past the end, which a page-rounded mapping would
// hide). When the structure parses, everything a loader then reads from it is exercised too:
// every metadata getter on every key, the tokenizer, and the model config and weight binding.
// Invariants the forward pass relies on (every tensor and bound weight lies inside the file)
// are checked explicitly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_checks.h"
#include "hmllm/gguf_reader.h"
#include "hmllm/model.h"
#include "hmllm/tokenizer.h"
#include "support/read_all_metadata.h"

using namespace hmllm;

namespace {

struct Bounds {
    const uint8_t* begin;
    const uint8_t* end;
    bool contains(const void* p, uint64_t n) const {
        const auto* q = static_cast<const uint8_t*>(p);
        return q >= begin && q <= end && n <= static_cast<uint64_t>(end - q);
    }
};

// Bytes of n_rows rows of n_cols elements of a ggml type, or UINT64_MAX when it cannot tile.
uint64_t matrix_bytes(uint32_t type, int64_t n_cols, int64_t n_rows) {
    const TypeInfo* ti = type_info(type);
    if (ti == nullptr || n_cols <= 0 || n_rows < 0 || n_cols % ti->block_size != 0) {
        return UINT64_MAX;
    }
    return static_cast<uint64_t>(n_cols / ti->block_size) * ti->type_size *
           static_cast<uint64_t>(n_rows);
}

void check_matrix(const Bounds& file, const MatView& m) {
    if (m.data == nullptr) return;
    FUZZ_REQUIRE(file.contains(m.data, matrix_bytes(m.type, m.n_cols, m.n_rows)));
}

void check_vector(const Bounds& file, const float* v, int64_t n) {
    if (v == nullptr) return;
    FUZZ_REQUIRE(file.contains(v, static_cast<uint64_t>(n) * sizeof(float)));
}

void use_tokenizer(const GgufFile& f) {
    Tokenizer tok;
    if (!Tokenizer::load(f, &tok).ok()) return;
    const char* sample = "Hello, world! <s> 123 \xC3\xA9\xE2\x96\x81\xF0\x9F\x8D\x95 \xFF\n";
    const std::vector<int32_t> ids = tok.encode(sample, tok.add_bos());
    for (int32_t id : ids) FUZZ_REQUIRE(id >= 0 && id < tok.n_vocab());
    TokenStreamDecoder decoder(tok);
    std::string text;
    for (int32_t id = -1; id <= tok.n_vocab() && id < 4096; ++id) {
        (void)tok.piece(id);
        text += decoder.push(id);
    }
    text += decoder.flush();
    FUZZ_REQUIRE(is_valid_utf8(text));
}

void use_model(const GgufFile& f, const Bounds& file) {
    ModelConfig config;
    ModelWeights weights;
    if (!load_model(f, &config, &weights).ok()) return;
    const int64_t d = config.d_model;
    const int64_t q_dim = int64_t(config.n_heads) * config.head_dim;
    const int64_t kv_dim = int64_t(config.n_kv_heads) * config.head_dim;
    check_matrix(file, weights.tok_embd);
    check_matrix(file, weights.output);
    check_vector(file, weights.output_norm, d);
    FUZZ_REQUIRE(weights.layers.size() == static_cast<size_t>(config.n_layers));
    for (const LayerWeights& l : weights.layers) {
        for (const MatView* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
            check_matrix(file, *m);
        }
        check_vector(file, l.attn_norm, d);
        check_vector(file, l.ffn_norm, d);
        check_vector(file, l.post_attn_norm, d);
        check_vector(file, l.post_ffn_norm, d);
        check_vector(file, l.q_norm, config.head_dim);
        check_vector(file, l.k_norm, config.head_dim);
        check_vector(file, l.bq, q_dim);
        check_vector(file, l.bk, kv_dim);
        check_vector(file, l.bv, kv_dim);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    GgufFile f;
    const Status st = GgufFile::open_memory(data, size, "fuzz.gguf", &f);
    if (!st.ok()) {
        FUZZ_REQUIRE(!st.message.empty());
        return 0;
    }
    const Bounds file{data, data + size};
    FUZZ_REQUIRE(f.data_offset() <= size);
    for (const GgufTensorInfo& t : f.tensors()) {
        FUZZ_REQUIRE(file.contains(t.data, t.n_bytes));
        FUZZ_REQUIRE(f.find_tensor(t.name) != nullptr);
    }
    hmtest::read_all_metadata(f, [](bool holds, const char* what) {
        if (!holds) fuzz_fail(what);
    });
    use_tokenizer(f);
    use_model(f, file);
    return 0;
}
