// libFuzzer target: the tokenizer (hmllm/tokenizer.h) on arbitrary bytes, over small SentencePiece
// and byte-level BPE vocabularies built in memory at start-up (the shapes of the ones the native
// tokenizer tests use: byte tokens, merges, control and user-defined tokens, CJK, emoji).
//
// Input: byte 0 picks the vocabulary and BOS flag; the rest is encoded as text, and also read as
// little-endian 16-bit token ids (sign-extended, so negative and out-of-range ids occur) that
// are decoded piece by piece and through the streaming decoder.
// Checked: ids in range; SPM without a space prefix and BPE spell valid UTF-8 text back exactly
// (the round trip tests/test_tokenizer.cpp asserts; for SPM, text without a literal U+2581);
// the streaming decoder emits only valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_checks.h"
#include "hmllm/gguf_reader.h"
#include "hmllm/tokenizer.h"

using namespace hmllm;

namespace {

// Writes GGUF v3 metadata-only files (no tensors) into a byte vector.
class VocabWriter {
public:
    void str(const std::string& key, const std::string& v) {
        kv(key, 8);
        put_str(v);
    }
    void u32(const std::string& key, uint32_t v) {
        kv(key, 4);
        put_u32(v);
    }
    void boolean(const std::string& key, bool v) {
        kv(key, 7);
        body_.push_back(v ? 1 : 0);
    }
    void str_array(const std::string& key, const std::vector<std::string>& v) {
        kv(key, 9);
        put_u32(8);
        put_u64(v.size());
        for (const std::string& s : v) put_str(s);
    }
    void f32_array(const std::string& key, const std::vector<float>& v) {
        kv(key, 9);
        put_u32(6);
        put_u64(v.size());
        for (float f : v) {
            uint32_t bits;
            std::memcpy(&bits, &f, 4);
            put_u32(bits);
        }
    }
    void i32_array(const std::string& key, const std::vector<int32_t>& v) {
        kv(key, 9);
        put_u32(5);
        put_u64(v.size());
        for (int32_t i : v) put_u32(static_cast<uint32_t>(i));
    }
    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
        for (int i = 0; i < 8; ++i) b.push_back(0);  // tensor count
        for (int i = 0; i < 8; ++i) b.push_back(uint8_t(uint64_t(n_kv_) >> (8 * i)));
        b.insert(b.end(), body_.begin(), body_.end());
        return b;
    }

private:
    void kv(const std::string& key, uint32_t type) {
        ++n_kv_;
        put_str(key);
        put_u32(type);
    }
    void put_u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) body_.push_back(uint8_t(v >> (8 * i)));
    }
    void put_u64(uint64_t v) {
        for (int i = 0; i < 8; ++i) body_.push_back(uint8_t(v >> (8 * i)));
    }
    void put_str(const std::string& s) {
        put_u64(s.size());
        body_.insert(body_.end(), s.begin(), s.end());
    }
    std::vector<uint8_t> body_;
    size_t n_kv_ = 0;
};

const std::string kSpmSpace = "\xE2\x96\x81";  // U+2581

std::vector<uint8_t> spm_vocab(bool add_space_prefix) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<float> scores = {0, 0, 0};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        scores.push_back(0);
        types.push_back(6);
    }
    float score = -1;
    for (const std::string& t :
         {kSpmSpace, std::string("a"), std::string("b"), std::string("ab"), std::string("abc"),
          kSpmSpace + "a", kSpmSpace + kSpmSpace, std::string("\xC3\xA9"),
          std::string("\xE4\xBD\xA0"), std::string("\xE4\xBD\xA0\xE5\xA5\xBD"),
          std::string("\xF0\x9F\x8D\x95"), std::string(" "), std::string("\n")}) {
        tokens.push_back(t);
        scores.push_back(score);
        types.push_back(1);
        score -= 0.5f;
    }
    for (const char* t : {"<start_of_turn>", "<end_of_turn>", "<ctl>"}) {
        tokens.push_back(t);
        scores.push_back(0);
        types.push_back(3);
    }
    tokens.push_back("<ud>");
    scores.push_back(0);
    types.push_back(4);
    VocabWriter w;
    w.str("tokenizer.ggml.model", "llama");
    w.str_array("tokenizer.ggml.tokens", tokens);
    w.f32_array("tokenizer.ggml.scores", scores);
    w.i32_array("tokenizer.ggml.token_type", types);
    w.u32("tokenizer.ggml.bos_token_id", 1);
    w.u32("tokenizer.ggml.eos_token_id", 2);
    w.u32("tokenizer.ggml.unknown_token_id", 0);
    w.boolean("tokenizer.ggml.add_bos_token", true);
    w.boolean("tokenizer.ggml.add_space_prefix", add_space_prefix);
    return w.bytes();
}

// GPT-2's byte -> code point table, written out from its definition: printable bytes map to
// themselves, the rest to 256, 257, ... in byte order.
std::string byte_char(int b) {
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

std::vector<uint8_t> bpe_vocab(const std::string& pre) {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_char(b));
    const std::string G = byte_char(' ');
    const std::string C3 = byte_char(0xC3), A9 = byte_char(0xA9);
    for (const std::string& t : {std::string("he"), std::string("ll"), std::string("hell"),
                                 std::string("hello"), G + "w", std::string("or"), G + "wor",
                                 std::string("ld"), G + "world", std::string("12"),
                                 std::string("123"), C3 + A9, G + G, std::string("'s")}) {
        tokens.push_back(t);
    }
    std::vector<int32_t> types(tokens.size(), 1);
    for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.push_back(t);
        types.push_back(3);
    }
    VocabWriter w;
    w.str("tokenizer.ggml.model", "gpt2");
    w.str("tokenizer.ggml.pre", pre);
    w.str_array("tokenizer.ggml.tokens", tokens);
    w.i32_array("tokenizer.ggml.token_type", types);
    w.str_array("tokenizer.ggml.merges",
                {"h e", "l l", "he ll", "hell o", G + " w", "o r", G + "w or", "l d", G + "wor ld",
                 "1 2", "12 3", C3 + " " + A9, G + " " + G, "' s"});
    w.u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(tokens.size() - 3));
    w.u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tokens.size() - 3));
    w.boolean("tokenizer.ggml.add_bos_token", false);
    return w.bytes();
}

struct Vocab {
    std::vector<uint8_t> bytes;  // the GGUF image the tokenizer views; must outlive it
    GgufFile file;
    Tokenizer tok;
    bool spells_text_back;  // pieces of encode(valid UTF-8) concatenate to the text
};

std::vector<std::unique_ptr<Vocab>>& vocabs() {
    static std::vector<std::unique_ptr<Vocab>> v;
    return v;
}

void add_vocab(std::vector<uint8_t> bytes, bool spells_text_back) {
    auto v = std::make_unique<Vocab>();
    v->bytes = std::move(bytes);
    v->spells_text_back = spells_text_back;
    Status st = GgufFile::open_memory(v->bytes.data(), v->bytes.size(), "vocab.gguf", &v->file);
    if (st.ok()) st = Tokenizer::load(v->file, &v->tok);
    if (!st.ok()) {
        std::fprintf(stderr, "fuzz_tokenizer: cannot load a built-in vocabulary: %s\n",
                     st.message.c_str());
        std::abort();
    }
    vocabs().push_back(std::move(v));
}

int32_t id_from(const uint8_t* p) {
    const int16_t v = static_cast<int16_t>(p[0] | (p[1] << 8));
    if (v == INT16_MIN) return INT32_MIN;
    if (v == INT16_MAX) return INT32_MAX;
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    add_vocab(spm_vocab(false), true);
    add_vocab(spm_vocab(true), false);  // the prefix space makes the pieces differ from the text
    for (const char* pre : {"gpt-2", "llama3", "qwen2", "default"}) add_vocab(bpe_vocab(pre), true);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const Vocab& v = *vocabs()[data[0] % vocabs().size()];
    const bool add_bos = (data[0] / vocabs().size()) % 2 == 1;
    const Tokenizer& tok = v.tok;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

    const std::vector<int32_t> ids = tok.encode(text, add_bos);
    std::string pieces;
    for (int32_t id : ids) {
        FUZZ_REQUIRE(id >= 0 && id < tok.n_vocab());
        pieces += tok.piece(id);
    }
    // SPM reads a U+2581 already in the text as its own space marker, so it comes back as ' '
    // (llama.cpp does the same); only texts without one spell back exactly.
    const bool spm_marker = tok.kind() == Tokenizer::Kind::Spm &&
                            text.find(kSpmSpace) != std::string_view::npos;
    if (!add_bos && v.spells_text_back && !spm_marker && is_valid_utf8(text)) {
        FUZZ_REQUIRE(pieces == text);
    }

    TokenStreamDecoder encoded(tok);
    std::string shown;
    for (int32_t id : ids) shown += encoded.push(id);
    shown += encoded.flush();
    FUZZ_REQUIRE(is_valid_utf8(shown));

    TokenStreamDecoder decoder(tok);
    shown.clear();
    for (size_t i = 1; i + 1 < size; i += 2) {
        const int32_t id = id_from(data + i);
        const std::string piece = tok.piece(id);
        if (id < 0 || id >= tok.n_vocab()) {
            FUZZ_REQUIRE(piece.empty() && tok.token_text(id).empty());
        }
        (void)tok.is_control(id);
        (void)tok.is_end_of_generation(id);
        shown += decoder.push(id);
    }
    shown += decoder.flush();
    FUZZ_REQUIRE(is_valid_utf8(shown));
    return 0;
}
