// Text <-> token ids for GGUF models, producing the same ids as llama.cpp (llama_tokenize with
// parse_special = true), so prompts built here run the model exactly as llama.cpp would.
//
// Two vocabulary kinds, named by tokenizer.ggml.model:
//   "llama": SentencePiece-style (Gemma, Llama 2): score-driven pair merging over UTF-8
//            characters, spaces written as U+2581, unknown bytes spelled by <0xXX> tokens;
//   "gpt2":  byte-level BPE (Qwen2, Llama 3): text split by a pre-tokenizer pattern
//            (tokenizer.ggml.pre), bytes mapped to printable code points, ranked merges.
//
// The tokenizer points into the model file's mapping instead of copying the vocabulary (262144
// strings for Gemma 3, loaded on every app start): the GgufFile it was loaded from must stay
// open, and mapped, for as long as the Tokenizer is used. encode() and piece() keep no state,
// so one Tokenizer may serve several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hmllm/gguf_reader.h"
#include "hmllm/status.h"

namespace hmllm {

class Tokenizer {
public:
    enum class Kind { Spm, Bpe };
    // How byte-level BPE splits text into words before merging (llama.cpp's pre-tokenizers).
    enum class PreTokenizer { None, Default, Gpt2, Llama3, Qwen2, Smollm };

    // Builds from the tokenizer.ggml.* metadata. A missing or inconsistent vocabulary is
    // InvalidModel; a tokenizer model or pre-tokenizer not implemented here is UnsupportedModel,
    // naming it. On failure *out is left unchanged.
    static Status load(const GgufFile& gguf, Tokenizer* out);

    // Token ids for text. BOS comes first when add_bos is true and the vocabulary has one: pass
    // add_bos() for the model's own choice (what llama.cpp's add_special does); EOS is never
    // appended. Control and user-defined tokens written in the text (e.g. "<start_of_turn>")
    // become their ids, as llama.cpp does with parse_special = true. Any bytes are accepted:
    // invalid UTF-8 falls back to byte tokens (SPM) or U+FFFD (BPE, as llama.cpp); nothing here
    // throws or aborts.
    std::vector<int32_t> encode(std::string_view text, bool add_bos) const;

    // The raw bytes one token stands for: a byte token gives its byte, SPM's U+2581 becomes a
    // space, byte-level BPE code points map back to bytes, control tokens give their text
    // (like llama.cpp's token_to_piece with special = true). "" for an id out of range.
    std::string piece(int32_t id) const;

    int32_t bos_id() const { return bos_id_; }  // -1 when the vocabulary has none
    int32_t eos_id() const { return eos_id_; }
    bool add_bos() const { return add_bos_; }   // tokenizer.ggml.add_bos_token
    // EOS and end-of-turn style tokens (Gemma's <end_of_turn>, <|im_end|>, <|eot_id|>, ...).
    bool is_end_of_generation(int32_t id) const;
    // Control and unknown tokens: not text, so a decoder for display skips them.
    bool is_control(int32_t id) const;
    int32_t n_vocab() const { return static_cast<int32_t>(texts_.size()); }
    Kind kind() const { return kind_; }
    PreTokenizer pre_tokenizer() const { return pre_; }

    // The id whose vocabulary text is exactly text (SPM spells spaces U+2581), or -1.
    int32_t token_id(std::string_view text) const;
    std::string_view token_text(int32_t id) const;  // "" for an id out of range

private:
    struct Fragment {
        int32_t token;  // -1: raw text still to be tokenized
        size_t offset;
        size_t length;
    };

    void partition_special(std::string_view text, std::vector<Fragment>* fragments) const;
    void encode_spm(std::string_view escaped, std::vector<int32_t>* out) const;
    void encode_bpe_word(std::string_view word, std::vector<int32_t>* out) const;
    void split_words(std::string_view text, std::vector<std::string>* words) const;
    int32_t merge_rank(int32_t left, int32_t right) const;
    void build_index();
    void build_special_trie();
    uint8_t attr(int32_t id) const { return attrs_[static_cast<size_t>(id)]; }

    struct TextRef {
        uint32_t offset;  // from base_
        uint32_t length;
    };
    std::string_view text_of(size_t i) const {
        return {base_ + texts_[i].offset, texts_[i].length};
    }

    Kind kind_ = Kind::Spm;
    PreTokenizer pre_ = PreTokenizer::None;
    const char* base_ = nullptr;   // the model file's mapping
    std::vector<TextRef> texts_;   // each token's text, in the mapping
    std::vector<float> scores_;    // SPM merge priorities
    std::vector<uint8_t> attrs_;   // llama.cpp token attribute bits (kAttr* in tokenizer.cpp)
    // Open-addressing text -> id table: slot holds id + 1, 0 is empty. Built once per load.
    std::vector<int32_t> slots_;
    // Control, user-defined and unknown tokens, longest text first: matched in raw text first.
    std::vector<int32_t> specials_;
    // A byte trie over the special tokens' texts, so one scan of the text tells which of them
    // occur (Gemma has 6414). Children are sibling lists; rank indexes specials_, -1 if none.
    struct TrieNode {
        int32_t first_child = -1;
        int32_t next_sibling = -1;
        int32_t rank = -1;
        uint8_t byte = 0;
    };
    std::vector<TrieNode> trie_;
    int32_t byte_ids_[256] = {};   // SPM byte fallback: the <0xXX> token of each byte, or -1
    // Byte-level BPE merges keyed by (left id, right id): open addressing, key 0 is empty.
    std::vector<uint64_t> merge_keys_;
    std::vector<int32_t> merge_ranks_;
    std::vector<int32_t> eog_ids_;
    int32_t bos_id_ = -1;
    int32_t eos_id_ = -1;
    int32_t unk_id_ = -1;
    bool add_bos_ = false;
    bool add_space_prefix_ = false;  // SPM: prepend a space to text that follows BOS/specials
    bool ignore_merges_ = false;     // BPE (llama3): a whole word found in the vocabulary wins
};

// Turns generated ids into display text without ever splitting a UTF-8 character: a byte
// token that starts a multi-byte character is held back until the character is complete.
// Control tokens produce no text.
class TokenStreamDecoder {
public:
    explicit TokenStreamDecoder(const Tokenizer& tokenizer) : tok_(&tokenizer) {}
    // Complete, valid UTF-8 characters available after this token (possibly "").
    std::string push(int32_t id);
    // What is left at the end of the stream; invalid or truncated bytes become U+FFFD.
    std::string flush();

private:
    const Tokenizer* tok_;
    std::string pending_;  // bytes not yet returned: an incomplete character at most
};

}  // namespace hmllm
