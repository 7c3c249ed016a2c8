// libFuzzer target: the tokenizer (hmllm/tokenizer.h) on arbitrary bytes, over small SentencePiece
// and byte-level BPE vocabularies built in memory at start-up with tests/support/gguf_builder.h
// (the shapes of the ones the native tokenizer tests use: byte tokens, merges, control and
// user-defined tokens, CJK, emoji).
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
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_checks.h"
#include "hmllm/gguf_reader.h"
#include "hmllm/tokenizer.h"
#include "support/gguf_builder.h"

using namespace hmllm;
using hmtest::gpt2_byte_piece;
using hmtest::metadata_only_file;
using hmtest::Vocabulary;

namespace {

const std::string kSpmSpace = "\xE2\x96\x81";  // U+2581

std::vector<uint8_t> spm_vocab(bool add_space_prefix) {
    Vocabulary v = hmtest::spm_skeleton(add_space_prefix);
    float score = -1;
    for (const std::string& t :
         {kSpmSpace, std::string("a"), std::string("b"), std::string("ab"), std::string("abc"),
          kSpmSpace + "a", kSpmSpace + kSpmSpace, std::string("\xC3\xA9"),
          std::string("\xE4\xBD\xA0"), std::string("\xE4\xBD\xA0\xE5\xA5\xBD"),
          std::string("\xF0\x9F\x8D\x95"), std::string(" "), std::string("\n")}) {
        v.add(t, score, 1);
        score -= 0.5f;
    }
    for (const char* t : {"<start_of_turn>", "<end_of_turn>", "<ctl>"}) v.add(t, 0, 3);
    v.add("<ud>", 0, 4);
    return metadata_only_file(v.metadata());
}

std::vector<uint8_t> bpe_vocab(const std::string& pre) {
    Vocabulary v = hmtest::bpe_skeleton(pre);
    const std::string G = gpt2_byte_piece(' ');
    const std::string C3 = gpt2_byte_piece(0xC3), A9 = gpt2_byte_piece(0xA9);
    for (const std::string& t : {std::string("he"), std::string("ll"), std::string("hell"),
                                 std::string("hello"), G + "w", std::string("or"), G + "wor",
                                 std::string("ld"), G + "world", std::string("12"),
                                 std::string("123"), C3 + A9, G + G, std::string("'s")}) {
        v.add(t, 1);
    }
    for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) v.add(t, 3);
    v.merges = {"h e", "l l", "he ll", "hell o", G + " w", "o r", G + "w or", "l d", G + "wor ld",
                "1 2", "12 3", C3 + " " + A9, G + " " + G, "' s"};
    v.bos = v.eos = static_cast<uint32_t>(v.tokens.size() - 3);  // <|endoftext|>
    return metadata_only_file(v.metadata());
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

// The streaming decoder emits only valid UTF-8, whatever ids it is given.
void require_stream_decodes_to_utf8(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    TokenStreamDecoder decoder(tok);
    std::string shown;
    for (int32_t id : ids) shown += decoder.push(id);
    shown += decoder.flush();
    FUZZ_REQUIRE(is_valid_utf8(shown));
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

    require_stream_decodes_to_utf8(tok, ids);

    std::vector<int32_t> any_ids;
    for (size_t i = 1; i + 1 < size; i += 2) {
        const int32_t id = id_from(data + i);
        const std::string piece = tok.piece(id);
        if (id < 0 || id >= tok.n_vocab()) {
            FUZZ_REQUIRE(piece.empty() && tok.token_text(id).empty());
        }
        (void)tok.is_control(id);
        (void)tok.is_end_of_generation(id);
        any_ids.push_back(id);
    }
    require_stream_decodes_to_utf8(tok, any_ids);
    return 0;
}
