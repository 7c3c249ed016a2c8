// Tokenization as llama.cpp does it (src/llama-vocab.cpp, src/unicode.cpp at the version named in
// tests/fixtures/llama_cpp/), re-implemented without its std::string churn: matching it id for id
// matters more than elegance, so where llama.cpp has a quirk it is kept and marked "as llama.cpp".
#include "hmllm/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <queue>

namespace hmllm {

namespace {

// Token attributes, llama.cpp's llama_token_attr bits.
enum : uint8_t {
    kAttrUndefined = 0,
    kAttrUnknown = 1 << 0,
    kAttrUnused = 1 << 1,
    kAttrNormal = 1 << 2,
    kAttrControl = 1 << 3,
    kAttrUserDefined = 1 << 4,
    kAttrByte = 1 << 5,
};

// GGUF tokenizer.ggml.token_type values.
uint8_t attr_from_token_type(int32_t type) {
    switch (type) {
        case 1: return kAttrNormal;
        case 2: return kAttrUnknown;
        case 3: return kAttrControl;
        case 4: return kAttrUserDefined;
        case 5: return kAttrUnused;
        case 6: return kAttrByte;
        default: return kAttrUndefined;
    }
}

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a: short keys, no alignment assumptions
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h ^ (h >> 29);
}

uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

size_t table_size_for(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;  // load factor <= 1/2 keeps linear probes short
    return cap;
}

// Length of a UTF-8 sequence judged by its first byte alone, as llama.cpp's unicode_len_utf8:
// continuation and invalid lead bytes count as one-byte characters.
size_t utf8_len_by_lead(unsigned char c) {
    static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

// ---- Unicode classes used by the BPE pre-tokenizers -------------------------------------------

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kPunct = 3 };

extern const uint32_t kClassRanges[];  // at the end of this file
extern const size_t kClassRangeCount;

CharClass char_class(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return kLetter;
        if (cp >= '0' && cp <= '9') return kNumber;
    }
    if (cp >= 0x110000) return kOther;
    // Ranges are (start << 2 | class), sorted: find the last start <= cp.
    const uint32_t* begin = kClassRanges;
    const uint32_t* end = kClassRanges + kClassRangeCount;
    const uint32_t* it = std::upper_bound(begin, end, (cp << 2) | 3u);
    return static_cast<CharClass>(it[-1] & 3u);
}

bool is_whitespace(uint32_t cp) {
    // llama.cpp's unicode_set_whitespace (Unicode White_Space).
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
        case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
        case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

// Decodes as llama.cpp's unicode_cpts_from_utf8: each byte that does not start a well-formed
// sequence (by its loose rules: continuation bits only) becomes U+FFFD.
std::vector<uint32_t> decode_codepoints(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    size_t n = s.size();
    size_t i = 0;
    auto cont = [&](size_t k) { return i + k < n && (p[i + k] & 0xC0) == 0x80; };
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            out.push_back(c);
            i += 1;
        } else if ((c & 0xE0) == 0xC0 && (c & 0x40) && cont(1)) {
            out.push_back(((c & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu));
            i += 2;
        } else if ((c & 0xF0) == 0xE0 && cont(1) && cont(2)) {
            out.push_back(((c & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu));
            i += 3;
        } else if ((c & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
            out.push_back(((c & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) |
                          ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu));
            i += 4;
        } else {
            out.push_back(0xFFFD);
            i += 1;
        }
    }
    return out;
}

void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
        out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        // Code points above U+10FFFF (from F5..F7 lead bytes) are kept in 4 bytes rather than
        // rejected: this runs on untrusted text and must not fail.
        out->push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
        out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// GPT-2's byte <-> code point table: printable bytes stand for themselves, the other 68 are
// moved to U+0100.. so that every byte has a visible, non-space character.
struct ByteUnicode {
    uint32_t to_cp[256];
    int16_t to_byte[324];  // indexed by code point, -1 when not a byte's code point
    ByteUnicode() {
        std::fill(std::begin(to_byte), std::end(to_byte), int16_t{-1});
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
            to_byte[to_cp[b]] = static_cast<int16_t>(b);
        }
    }
};

const ByteUnicode& byte_unicode() {
    static const ByteUnicode table;
    return table;
}

// ---- BPE pre-tokenizers: split code points into words ------------------------------------------
// Each pass refines a list of word lengths (in code points), as llama.cpp's unicode_regex_split
// applies its regexes one after another; the regex names are in each pass's comment.

using Lengths = std::vector<size_t>;

// A cursor over one chunk: out-of-chunk positions read as "no character".
struct Chunk {
    const std::vector<uint32_t>& cps;
    size_t begin, end;
    static constexpr uint32_t kNone = 0xFFFFFFFF;
    uint32_t cp(size_t pos) const { return pos >= begin && pos < end ? cps[pos] : kNone; }
    bool in(size_t pos) const { return pos >= begin && pos < end; }
    bool letter(size_t pos) const { return in(pos) && char_class(cps[pos]) == kLetter; }
    bool number(size_t pos) const { return in(pos) && char_class(cps[pos]) == kNumber; }
    bool space(size_t pos) const { return in(pos) && is_whitespace(cps[pos]); }
    // [^\s\p{L}\p{N}]: any character that is not whitespace, letter or number
    bool other(size_t pos) const {
        return in(pos) && !is_whitespace(cps[pos]) && char_class(cps[pos]) != kLetter &&
               char_class(cps[pos]) != kNumber;
    }
};

uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d (case-insensitive when fold): length of the match at pos, or 0.
size_t contraction_len(const Chunk& ch, size_t pos, bool fold) {
    if (ch.cp(pos) != '\'' || pos + 1 >= ch.end) return 0;
    auto low = [&](size_t p) { return fold ? ascii_lower(ch.cp(p)) : ch.cp(p); };
    uint32_t a = low(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 < ch.end) {
        uint32_t b = low(pos + 2);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
Lengths split_gpt2(const std::vector<uint32_t>& cps, const Lengths& in) {
    Lengths out;
    size_t start = 0;
    for (size_t len : in) {
        Chunk ch{cps, start, start + len};
        start += len;
        size_t prev = ch.begin;
        auto emit = [&](size_t end) {
            if (end > prev) out.push_back(end - prev);
            prev = end;
        };
        for (size_t pos = ch.begin; pos < ch.end;) {
            if (size_t n = contraction_len(ch, pos, false)) {
                pos += n;
                emit(pos);
                continue;
            }
            size_t p = pos + (ch.cp(pos) == ' ' ? 1 : 0);  // the optional leading space
            if (ch.letter(p) || ch.number(p) || ch.other(p)) {
                auto same = ch.letter(p) ? &Chunk::letter : ch.number(p) ? &Chunk::number
                                                                          : &Chunk::other;
                while ((ch.*same)(p)) ++p;
                pos = p;
                emit(pos);
                continue;
            }
            size_t n_space = 0;
            while (ch.space(pos + n_space)) ++n_space;
            if (n_space > 1 && ch.in(pos + n_space)) {
                pos += n_space - 1;  // \s+(?!\S): leave the last space to the next word
            } else if (n_space > 0) {
                pos += n_space;
            } else {
                ++pos;
            }
            emit(pos);
        }
    }
    return out;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+        (llama3: 3 digits, qwen2: 1)
Lengths split_llama3(const std::vector<uint32_t>& cps, const Lengths& in, size_t max_digits) {
    Lengths out;
    size_t start = 0;
    for (size_t len : in) {
        Chunk ch{cps, start, start + len};
        start += len;
        size_t prev = ch.begin;
        auto emit = [&](size_t end) {
            if (end > prev) out.push_back(end - prev);
            prev = end;
        };
        for (size_t pos = ch.begin; pos < ch.end;) {
            const uint32_t cp = ch.cp(pos);
            if (size_t n = contraction_len(ch, pos, true)) {
                pos += n;
                emit(pos);
                continue;
            }
            if (!(cp == '\r' || cp == '\n' || ch.number(pos)) &&
                (ch.letter(pos) || ch.letter(pos + 1))) {
                ++pos;
                while (ch.letter(pos)) ++pos;
                emit(pos);
                continue;
            }
            if (ch.number(pos)) {
                size_t run = pos;
                while (ch.number(pos)) {
                    if (++pos - run >= max_digits) {
                        emit(pos);
                        run = pos;
                    }
                }
                emit(pos);
                continue;
            }
            size_t p = pos + (cp == ' ' ? 1 : 0);
            if (ch.other(p)) {
                while (ch.other(p)) ++p;
                while (ch.cp(p) == '\r' || ch.cp(p) == '\n') ++p;
                pos = p;
                emit(pos);
                continue;
            }
            size_t n_space = 0;
            size_t last_newline_end = 0;
            while (ch.space(pos + n_space)) {
                uint32_t c = ch.cp(pos + n_space);
                if (c == '\r' || c == '\n') last_newline_end = pos + n_space + 1;
                ++n_space;
            }
            if (last_newline_end > 0) {
                pos = last_newline_end;  // \s*[\r\n]+
            } else if (n_space > 1 && ch.in(pos + n_space)) {
                pos += n_space - 1;
            } else if (n_space > 0) {
                pos += n_space;
            } else {
                ++pos;
            }
            emit(pos);
        }
    }
    return out;
}

// A pass that isolates maximal runs of characters for which pred holds ("[class]+").
template <typename Pred>
Lengths split_runs(const std::vector<uint32_t>& cps, const Lengths& in, Pred pred) {
    Lengths out;
    size_t start = 0;
    for (size_t len : in) {
        size_t end = start + len;
        size_t pos = start;
        while (pos < end) {
            bool inside = pred(cps[pos]);
            size_t run = pos;
            while (pos < end && pred(cps[pos]) == inside) ++pos;
            out.push_back(pos - run);
        }
        start = end;
    }
    return out;
}

// Every character for which pred holds is a word of its own; the runs between them stay words
// (smollm's first regex, \p{N}: each digit alone, the text around it left to the next pass).
template <class Pred>
Lengths split_each(const std::vector<uint32_t>& cps, const Lengths& in, Pred pred) {
    Lengths out;
    size_t start = 0;
    for (size_t len : in) {
        const size_t end = start + len;
        size_t run = start;
        for (size_t pos = start; pos < end; ++pos) {
            if (!pred(cps[pos])) continue;
            if (pos > run) out.push_back(pos - run);
            out.push_back(1);
            run = pos + 1;
        }
        if (end > run) out.push_back(end - run);
        start = end;
    }
    return out;
}

// "[0-9][0-9][0-9]": every three ASCII digits in a row, left to right, become a word.
Lengths split_digit_triples(const std::vector<uint32_t>& cps, const Lengths& in) {
    Lengths out;
    auto digit = [&](size_t i) { return cps[i] >= '0' && cps[i] <= '9'; };
    size_t start = 0;
    for (size_t len : in) {
        size_t end = start + len;
        size_t gap = start;
        size_t pos = start;
        while (pos + 3 <= end) {
            if (digit(pos) && digit(pos + 1) && digit(pos + 2)) {
                if (pos > gap) out.push_back(pos - gap);
                out.push_back(3);
                pos += 3;
                gap = pos;
            } else {
                ++pos;
            }
        }
        if (end > gap) out.push_back(end - gap);
        start = end;
    }
    return out;
}

}  // namespace

// ---- loading ---------------------------------------------------------------------------------

namespace {

template <typename List>
bool contains(const List& list, std::string_view s) {
    return std::find(std::begin(list), std::end(list), s) != std::end(list);
}
bool contains(std::initializer_list<std::string_view> list, std::string_view s) {
    return std::find(list.begin(), list.end(), s) != list.end();
}

// Texts llama.cpp recognises as end-of-generation tokens whatever the metadata says
// (llama-vocab.cpp, "maintain a list of tokens that cause end-of-generation").
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[",
};
// Fill-in-the-middle tokens: llama.cpp marks them control (so they are parsed in text), and
// the pad/repo/file-separator ones end generation.
constexpr std::string_view kFimTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "<|fim_suffix|>", "<fim-suffix>",
    "<fim_suffix>", "<SUF>", "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>",
};
constexpr std::string_view kFimEogTexts[] = {
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>", "<|repo_name|>",
    "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
};

}  // namespace

Status Tokenizer::load(const GgufFile& gguf, Tokenizer* out) {
    auto invalid = [](const std::string& what) {
        return Status::error(ErrorCode::InvalidModel, "the model's tokenizer is invalid: " + what);
    };
    std::string model;
    if (!gguf.get_string("tokenizer.ggml.model", &model)) {
        return Status::error(ErrorCode::UnsupportedModel,
                             "the model has no tokenizer (tokenizer.ggml.model is missing)");
    }
    Tokenizer t;
    if (model == "llama") {
        t.kind_ = Kind::Spm;
        t.add_space_prefix_ = true;  // llama.cpp's SPM defaults, overridden by metadata below
        t.add_bos_ = true;
        t.bos_id_ = 1;
        t.eos_id_ = 2;
        t.unk_id_ = 0;
    } else if (model == "gpt2") {
        t.kind_ = Kind::Bpe;
        t.bos_id_ = 11;  // GPT-2's <|endoftext|>, llama.cpp's default when metadata is silent
        t.eos_id_ = 11;
        std::string pre;
        gguf.get_string("tokenizer.ggml.pre", &pre);
        if (pre.empty() || pre == "default") {
            t.pre_ = PreTokenizer::Default;
        } else if (contains({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                             "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo",
                             "jais", "exaone4"},
                            pre)) {
            t.pre_ = PreTokenizer::Gpt2;
        } else if (contains({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                             "midm-2.0", "lfm2"},
                            pre)) {
            t.pre_ = PreTokenizer::Llama3;
            t.ignore_merges_ = true;
            t.add_bos_ = true;
        } else if (contains({"dbrx", "smaug-bpe"}, pre)) {
            t.pre_ = PreTokenizer::Llama3;
        } else if (contains({"qwen2", "deepseek-r1-qwen", "megrez"}, pre)) {
            t.pre_ = PreTokenizer::Qwen2;
        } else if (pre == "smollm") {
            t.pre_ = PreTokenizer::Smollm;
        } else {
            return Status::error(ErrorCode::UnsupportedModel,
                                 "the model's BPE pre-tokenizer '" + pre + "' is not supported");
        }
    } else {
        return Status::error(ErrorCode::UnsupportedModel,
                             "the model's tokenizer type '" + model + "' is not supported");
    }

    GgufStringArray tokens;
    if (!gguf.get_string_array("tokenizer.ggml.tokens", &tokens) || tokens.size() == 0) {
        return invalid("tokenizer.ggml.tokens is missing or not an array of strings");
    }
    const size_t n = tokens.size();
    if (n > static_cast<size_t>(INT32_MAX) - 1) return invalid("the vocabulary is too large");
    // One sequential pass turns the array into packed (offset, length) pairs, which every
    // later lookup reads inline: half the size of pointer + length views.
    t.base_ = reinterpret_cast<const char*>(gguf.mapping().data());
    t.texts_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        std::string_view s = tokens[i];
        const uint64_t offset = static_cast<uint64_t>(s.data() - t.base_);
        if (offset + s.size() > UINT32_MAX) {
            return Status::error(ErrorCode::UnsupportedModel,
                                 "the model's vocabulary lies more than 4 GiB into the file");
        }
        t.texts_[i] = TextRef{static_cast<uint32_t>(offset), static_cast<uint32_t>(s.size())};
    }

    uint32_t elem_type = 0;
    uint64_t count = 0;
    if (gguf.get_array_info("tokenizer.ggml.scores", &elem_type, &count)) {
        bool ok = false;
        if (elem_type == static_cast<uint32_t>(GgufValueType::FLOAT32)) {
            ok = gguf.get_f32_array("tokenizer.ggml.scores", &t.scores_);
        } else {
            std::vector<int32_t> iscores;  // llama.cpp also accepts integer scores
            ok = gguf.get_i32_array("tokenizer.ggml.scores", &iscores);
            t.scores_.assign(iscores.begin(), iscores.end());
        }
        if (!ok || t.scores_.size() < n) return invalid("tokenizer.ggml.scores is too short");
    } else {
        t.scores_.assign(n, 0.0f);
    }

    t.attrs_.assign(n, kAttrNormal);
    if (gguf.has_key("tokenizer.ggml.token_type")) {
        std::vector<int32_t> types;
        if (!gguf.get_i32_array("tokenizer.ggml.token_type", &types) || types.size() < n) {
            return invalid("tokenizer.ggml.token_type is too short");
        }
        for (size_t i = 0; i < n; ++i) t.attrs_[i] = attr_from_token_type(types[i]);
    }

    auto read_id = [&](const char* key, int32_t* id) {
        uint32_t v = 0;
        if (gguf.get_u32(key, &v) && v < n) *id = static_cast<int32_t>(v);
        if (*id >= static_cast<int32_t>(n)) *id = -1;  // a default that this vocab lacks
    };
    read_id("tokenizer.ggml.bos_token_id", &t.bos_id_);
    read_id("tokenizer.ggml.eos_token_id", &t.eos_id_);
    read_id("tokenizer.ggml.unknown_token_id", &t.unk_id_);
    int32_t eot = -1;
    int32_t eom = -1;
    read_id("tokenizer.ggml.eot_token_id", &eot);
    read_id("tokenizer.ggml.eom_token_id", &eom);
    bool flag = false;
    if (gguf.get_bool("tokenizer.ggml.add_bos_token", &flag)) t.add_bos_ = flag;
    if (gguf.get_bool("tokenizer.ggml.add_space_prefix", &flag)) t.add_space_prefix_ = flag;

    t.build_index();

    // Tokens recognised by their text, as llama.cpp does: they become control tokens (and so
    // are parsed out of prompt text) and some of them end generation.
    for (size_t i = 0; i < n; ++i) {
        std::string_view text = t.text_of(i);
        const int32_t id = static_cast<int32_t>(i);
        if (text.empty() || (text[0] != '<' && text[0] != '[' && text[0] != '_')) continue;
        bool eog = contains(kEogTexts, text) || contains(kFimEogTexts, text);
        if (eog || contains(kFimTexts, text)) t.attrs_[i] |= kAttrControl;
        if (eog) t.eog_ids_.push_back(id);
        if (eot < 0 && contains({"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                 "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                 "<end_of_utterance>"},
                                text)) {
            eot = id;
            t.attrs_[i] |= kAttrControl;
        }
        if (eom < 0 && text == "<|eom_id|>") eom = id;
    }
    for (int32_t id : {t.eos_id_, eot, eom}) {
        if (id >= 0) t.eog_ids_.push_back(id);
    }
    std::sort(t.eog_ids_.begin(), t.eog_ids_.end());
    t.eog_ids_.erase(std::unique(t.eog_ids_.begin(), t.eog_ids_.end()), t.eog_ids_.end());

    for (size_t i = 0; i < n; ++i) {
        if ((t.attrs_[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) &&
            !t.text_of(i).empty()) {
            t.specials_.push_back(static_cast<int32_t>(i));
        }
    }
    // The same call llama.cpp makes, so tokens of equal length keep llama.cpp's order wherever
    // both are built against the same standard library. (That order only matters when two
    // equal-length specials can overlap in text; none do in Gemma 3, Qwen2 or Llama 3.)
    std::sort(t.specials_.begin(), t.specials_.end(), [&](int32_t a, int32_t b) {
        return t.text_of(static_cast<size_t>(a)).size() > t.text_of(static_cast<size_t>(b)).size();
    });

    t.build_special_trie();

    if (t.kind_ == Kind::Spm) {
        static const char* hex = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const char spelled[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            int32_t id = t.token_id(std::string_view(spelled, 6));
            if (id < 0) {
                const char raw = static_cast<char>(b);
                id = t.token_id(std::string_view(&raw, 1));
            }
            t.byte_ids_[b] = id;
        }
    } else {
        GgufStringArray merges;
        if (!gguf.get_string_array("tokenizer.ggml.merges", &merges)) {
            return invalid("tokenizer.ggml.merges is missing (a gpt2 tokenizer needs its merges)");
        }
        t.merge_keys_.assign(table_size_for(merges.size()), 0);
        t.merge_ranks_.assign(t.merge_keys_.size(), 0);
        const size_t mask = t.merge_keys_.size() - 1;
        for (size_t r = 0; r < merges.size(); ++r) {
            std::string_view m = merges[r];
            size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;  // as llama.cpp
            if (sp == std::string_view::npos) continue;
            int32_t left = t.token_id(m.substr(0, sp));
            int32_t right = t.token_id(m.substr(sp + 1));
            // A merge whose halves are not tokens can never apply to token symbols: skip it.
            if (left < 0 || right < 0) continue;
            const uint64_t key = (uint64_t(uint32_t(left) + 1) << 32) | uint32_t(right);
            size_t slot = hash_u64(key) & mask;
            while (t.merge_keys_[slot] != 0 && t.merge_keys_[slot] != key) slot = (slot + 1) & mask;
            if (t.merge_keys_[slot] == 0) {  // the first (best) rank of a repeated merge wins
                t.merge_keys_[slot] = key;
                t.merge_ranks_[slot] = static_cast<int32_t>(r);
            }
        }
    }

    *out = std::move(t);
    return Status{};
}

void Tokenizer::build_index() {
    const size_t n = texts_.size();
    slots_.assign(table_size_for(n), 0);
    const size_t mask = slots_.size() - 1;
    // Inserts land at random slots of a table larger than the cache: hash a little ahead and
    // prefetch, which roughly halves the time for Gemma's 262144 tokens.
    constexpr size_t kAhead = 16;
    std::vector<uint64_t> hashes(std::min(n, kAhead));
    for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = hash_bytes(text_of(i));
    for (size_t i = 0; i < n; ++i) {
        const uint64_t h = hashes[i % kAhead];
        if (i + kAhead < n) {
            const uint64_t ahead = hash_bytes(text_of(i + kAhead));
            hashes[i % kAhead] = ahead;
            __builtin_prefetch(&slots_[ahead & mask]);
        }
        std::string_view text = text_of(i);
        if (text.empty()) continue;  // nothing can match an empty token
        size_t slot = h & mask;
        while (slots_[slot] != 0 && text_of(static_cast<size_t>(slots_[slot] - 1)) != text) {
            slot = (slot + 1) & mask;
        }
        slots_[slot] = static_cast<int32_t>(i) + 1;  // a repeated text maps to its last id
    }
}

void Tokenizer::build_special_trie() {
    trie_.assign(1, TrieNode{});  // the root
    for (size_t rank = 0; rank < specials_.size(); ++rank) {
        int32_t node = 0;
        for (char c : text_of(static_cast<size_t>(specials_[rank]))) {
            const uint8_t b = static_cast<uint8_t>(c);
            int32_t child = trie_[static_cast<size_t>(node)].first_child;
            while (child >= 0 && trie_[static_cast<size_t>(child)].byte != b) {
                child = trie_[static_cast<size_t>(child)].next_sibling;
            }
            if (child < 0) {
                TrieNode fresh;
                fresh.byte = b;
                fresh.next_sibling = trie_[static_cast<size_t>(node)].first_child;
                child = static_cast<int32_t>(trie_.size());
                trie_.push_back(fresh);
                trie_[static_cast<size_t>(node)].first_child = child;
            }
            node = child;
        }
        // Two specials with one text: the first in order takes every match, as in llama.cpp.
        if (trie_[static_cast<size_t>(node)].rank < 0) {
            trie_[static_cast<size_t>(node)].rank = static_cast<int32_t>(rank);
        }
    }
}

int32_t Tokenizer::token_id(std::string_view text) const {
    if (slots_.empty() || text.empty()) return -1;
    const size_t mask = slots_.size() - 1;
    for (size_t slot = hash_bytes(text) & mask;; slot = (slot + 1) & mask) {
        const int32_t v = slots_[slot];
        if (v == 0) return -1;
        if (text_of(static_cast<size_t>(v - 1)) == text) return v - 1;
    }
}

std::string_view Tokenizer::token_text(int32_t id) const {
    if (id < 0 || id >= n_vocab()) return {};
    return text_of(static_cast<size_t>(id));
}

int32_t Tokenizer::merge_rank(int32_t left, int32_t right) const {
    if (left < 0 || right < 0 || merge_keys_.empty()) return -1;
    const uint64_t key = (uint64_t(uint32_t(left) + 1) << 32) | uint32_t(right);
    const size_t mask = merge_keys_.size() - 1;
    for (size_t slot = hash_u64(key) & mask;; slot = (slot + 1) & mask) {
        if (merge_keys_[slot] == 0) return -1;
        if (merge_keys_[slot] == key) return merge_ranks_[slot];
    }
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
    return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

bool Tokenizer::is_control(int32_t id) const {
    return id >= 0 && id < n_vocab() && (attr(id) & (kAttrControl | kAttrUnknown)) != 0;
}

// ---- encoding --------------------------------------------------------------------------------

// Splits the text around control, user-defined and unknown tokens, exactly as llama.cpp's
// tokenizer_st_partition: longest token first, each one cut out of every remaining raw stretch
// at its leftmost occurrences. The order matters (Gemma has tokens for runs of 2..31 spaces).
void Tokenizer::partition_special(std::string_view text, std::vector<Fragment>* fragments) const {
    fragments->assign(1, Fragment{-1, 0, text.size()});
    if (trie_.empty()) return;
    // Which special tokens occur at all: one walk down the trie from every position. Only
    // those are then cut out, in llama.cpp's order.
    std::vector<uint8_t> present(specials_.size(), 0);
    bool any = false;
    for (size_t i = 0; i < text.size(); ++i) {
        int32_t node = 0;
        for (size_t k = i; k < text.size(); ++k) {
            const uint8_t b = static_cast<uint8_t>(text[k]);
            int32_t child = trie_[static_cast<size_t>(node)].first_child;
            while (child >= 0 && trie_[static_cast<size_t>(child)].byte != b) {
                child = trie_[static_cast<size_t>(child)].next_sibling;
            }
            if (child < 0) break;
            node = child;
            if (trie_[static_cast<size_t>(node)].rank >= 0) {
                present[static_cast<size_t>(trie_[static_cast<size_t>(node)].rank)] = 1;
                any = true;
            }
        }
    }
    if (!any) return;

    std::vector<Fragment> next;
    for (size_t rank = 0; rank < specials_.size(); ++rank) {
        if (!present[rank]) continue;
        const int32_t id = specials_[rank];
        std::string_view tok = text_of(static_cast<size_t>(id));
        // Find the first raw fragment holding the token before copying anything.
        size_t f = 0;
        size_t match = std::string_view::npos;
        for (; f < fragments->size(); ++f) {
            const Fragment& frag = (*fragments)[f];
            if (frag.token >= 0 || frag.length < tok.size()) continue;
            match = text.substr(frag.offset, frag.length).find(tok);
            if (match != std::string_view::npos) break;
        }
        if (match == std::string_view::npos) continue;
        // Rebuild the list in one pass: splitting in place would be quadratic in the number of
        // fragments (text with thousands of newlines, each a Gemma special token).
        next.assign(fragments->begin(), fragments->begin() + static_cast<std::ptrdiff_t>(f));
        for (; f < fragments->size(); ++f) {
            const Fragment frag = (*fragments)[f];
            std::string_view raw = text.substr(frag.offset, frag.length);
            if (frag.token < 0 && match == std::string_view::npos) match = raw.find(tok);
            if (frag.token >= 0 || match == std::string_view::npos) {
                next.push_back(frag);
                continue;
            }
            size_t pos = 0;
            while (match != std::string_view::npos) {
                if (match > pos) next.push_back(Fragment{-1, frag.offset + pos, match - pos});
                next.push_back(Fragment{id, frag.offset + match, tok.size()});
                pos = match + tok.size();
                match = raw.find(tok, pos);
            }
            if (pos < raw.size()) next.push_back(Fragment{-1, frag.offset + pos, raw.size() - pos});
        }
        fragments->swap(next);
    }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
    std::vector<int32_t> out;
    if (slots_.empty()) return out;  // a default-constructed tokenizer
    out.reserve(text.size() / 3 + 2);
    if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
    if (text.empty()) return out;

    std::vector<Fragment> fragments;
    partition_special(text, &fragments);

    if (kind_ == Kind::Spm) {
        bool prev_special = true;  // as llama.cpp: the start of the text counts as "after BOS"
        std::string escaped;
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                out.push_back(f.token);
                prev_special = true;
                continue;
            }
            escaped.clear();
            if (add_space_prefix_ && prev_special) escaped += kSpmSpace;
            for (char c : text.substr(f.offset, f.length)) {
                if (c == ' ') {
                    escaped += kSpmSpace;
                } else {
                    escaped += c;
                }
            }
            encode_spm(escaped, &out);
            prev_special = false;
        }
        return out;
    }

    std::vector<std::string> words;
    for (const Fragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
            continue;
        }
        split_words(text.substr(f.offset, f.length), &words);
        for (const std::string& w : words) encode_bpe_word(w, &out);
    }
    return out;
}

namespace {

struct Symbol {
    int prev;
    int next;
    size_t start;  // byte offset in the text being merged
    size_t n;      // 0 once merged into its left neighbour
};

}  // namespace

// SentencePiece BPE as llama.cpp's llm_tokenizer_spm_session: start from UTF-8 characters and
// repeatedly merge the adjacent pair whose concatenation is the best-scored token (ties: the
// leftmost). Pieces that never formed a token are spelled with byte tokens.
void Tokenizer::encode_spm(std::string_view text, std::vector<int32_t>* out) const {
    std::vector<Symbol> sym;
    sym.reserve(text.size());
    for (size_t offs = 0; offs < text.size();) {
        const size_t len = std::min(utf8_len_by_lead(static_cast<unsigned char>(text[offs])),
                                    text.size() - offs);
        const int index = static_cast<int>(sym.size());
        offs += len;
        sym.push_back(Symbol{index - 1, offs == text.size() ? -1 : index + 1, offs - len, len});
    }

    struct Bigram {
        float score;
        int left;
        int right;
        size_t size;
    };
    // llama.cpp's comparator: highest score first, then the smaller left index.
    auto worse = [](const Bigram& l, const Bigram& r) {
        return l.score < r.score || (l.score == r.score && l.left > r.left);
    };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t size = sym[left].n + sym[right].n;
        const int32_t id = token_id(text.substr(sym[left].start, size));
        if (id < 0) return;
        queue.push(Bigram{scores_[static_cast<size_t>(id)], left, right, size});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = sym[b.left];
        Symbol& r = sym[b.right];
        if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale: a side has changed
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = b.left;
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }

    for (int i = sym.empty() ? -1 : 0; i != -1; i = sym[i].next) {
        std::string_view piece = text.substr(sym[i].start, sym[i].n);
        const int32_t id = token_id(piece);
        if (id >= 0) {
            out->push_back(id);
            continue;
        }
        // Every merge result is a token, so this is a single character missing from the
        // vocabulary: byte fallback (<unk> where even the byte token is missing).
        for (char c : piece) {
            const int32_t byte_id = byte_ids_[static_cast<unsigned char>(c)];
            if (byte_id >= 0) {
                out->push_back(byte_id);
            } else if (unk_id_ >= 0) {
                out->push_back(unk_id_);
            }
        }
    }
}

// Splits raw text into pre-tokenizer words, each re-spelled in GPT-2's byte alphabet.
void Tokenizer::split_words(std::string_view text, std::vector<std::string>* words) const {
    words->clear();
    const std::vector<uint32_t> cps = decode_codepoints(text);
    Lengths lengths{cps.size()};
    switch (pre_) {
        case PreTokenizer::Default:
            lengths = split_runs(cps, lengths, [](uint32_t c) {  // [\p{P}\$\+<=>\^~\|]+
                if (c < 0x80) {  // ASCII punctuation and symbols except '`' (no locale)
                    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
                           (c >= 0x5B && c <= 0x5F) || (c >= 0x7B && c <= 0x7E);
                }
                return !is_whitespace(c) && char_class(c) == kPunct;
            });
            lengths = split_gpt2(cps, lengths);
            lengths = split_runs(cps, lengths, [](uint32_t c) {  // \p{N}+
                return !is_whitespace(c) && char_class(c) == kNumber;
            });
            lengths = split_digit_triples(cps, lengths);
            break;
        case PreTokenizer::Gpt2: lengths = split_gpt2(cps, lengths); break;
        case PreTokenizer::Llama3: lengths = split_llama3(cps, lengths, 3); break;
        case PreTokenizer::Qwen2: lengths = split_llama3(cps, lengths, 1); break;
        case PreTokenizer::Smollm:  // \p{N}, then GPT-2's regex on what lies between the digits
            lengths = split_each(cps, lengths, [](uint32_t c) {
                return !is_whitespace(c) && char_class(c) == kNumber;
            });
            lengths = split_gpt2(cps, lengths);
            break;
        case PreTokenizer::None: break;
    }
    const ByteUnicode& bu = byte_unicode();
    std::string utf8;
    size_t start = 0;
    for (size_t len : lengths) {
        // As llama.cpp: words are rebuilt from code points (invalid bytes are U+FFFD by now).
        utf8.clear();
        for (size_t i = start; i < start + len; ++i) append_utf8(cps[i], &utf8);
        start += len;
        std::string word;
        for (unsigned char c : utf8) append_utf8(bu.to_cp[c], &word);
        words->push_back(std::move(word));
    }
}

// Byte-level BPE as llama.cpp's llm_tokenizer_bpe_session: merge the adjacent pair with the
// lowest merge rank (ties: the leftmost) until no ranked pair is left.
void Tokenizer::encode_bpe_word(std::string_view word, std::vector<int32_t>* out) const {
    if (word.empty()) return;
    if (ignore_merges_) {
        const int32_t id = token_id(word);
        if (id >= 0) {
            out->push_back(id);
            return;
        }
    }
    std::vector<Symbol> sym;
    std::vector<int32_t> ids;  // token id of each live symbol, -1 if its text is not a token
    for (size_t offs = 0; offs < word.size();) {
        const size_t len = std::min(utf8_len_by_lead(static_cast<unsigned char>(word[offs])),
                                    word.size() - offs);
        const int index = static_cast<int>(sym.size());
        offs += len;
        sym.push_back(Symbol{index - 1, offs == word.size() ? -1 : index + 1, offs - len, len});
        ids.push_back(token_id(word.substr(offs - len, len)));
    }
    struct Bigram {
        int32_t rank;
        int left;
        int right;
        size_t left_n;
        size_t right_n;
    };
    auto worse = [](const Bigram& l, const Bigram& r) {
        return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
    };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const int32_t rank = merge_rank(ids[left], ids[right]);
        if (rank >= 0) queue.push(Bigram{rank, left, right, sym[left].n, sym[right].n});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = sym[b.left];
        Symbol& r = sym[b.right];
        // Stale when either side has grown or gone since the pair was queued.
        if (l.n == 0 || r.n == 0 || l.n != b.left_n || r.n != b.right_n) continue;
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = b.left;
        ids[b.left] = token_id(word.substr(l.start, l.n));
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }
    for (int i = 0; i != -1; i = sym[i].next) {
        if (sym[i].n == 0) continue;
        if (ids[i] >= 0) {
            out->push_back(ids[i]);
            continue;
        }
        // As llama.cpp: a piece outside the vocabulary falls back to single-byte tokens.
        for (char c : word.substr(sym[i].start, sym[i].n)) {
            const int32_t id = token_id(std::string_view(&c, 1));
            if (id >= 0) out->push_back(id);
        }
    }
}

// ---- decoding --------------------------------------------------------------------------------

std::string Tokenizer::piece(int32_t id) const {
    if (id < 0 || id >= n_vocab()) return {};
    const uint8_t a = attr(id);
    std::string_view text = text_of(static_cast<size_t>(id));
    if (a & (kAttrControl | kAttrUnknown | kAttrUserDefined)) return std::string(text);
    if (a & kAttrByte) {
        // "<0xAB>": the two hex digits at [3, 5).
        auto hexval = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            return -1;
        };
        if (text.size() < 5 || hexval(text[3]) < 0 || hexval(text[4]) < 0) return {};
        return std::string(1, static_cast<char>(hexval(text[3]) * 16 + hexval(text[4])));
    }
    if (!(a & kAttrNormal)) return {};  // unused / undefined tokens stand for nothing
    std::string out;
    if (kind_ == Kind::Spm) {
        out.reserve(text.size());
        for (size_t i = 0; i < text.size();) {
            if (text.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
                out += ' ';
                i += kSpmSpace.size();
            } else {
                out += text[i++];
            }
        }
        return out;
    }
    const ByteUnicode& bu = byte_unicode();
    for (uint32_t cp : decode_codepoints(text)) {
        if (cp < 324 && bu.to_byte[cp] >= 0) {
            out += static_cast<char>(bu.to_byte[cp]);
        } else {
            append_utf8(cp, &out);  // not from the byte alphabet: keep the character itself
        }
    }
    return out;
}

namespace {

enum class Utf8 { Complete, Incomplete, Invalid };

// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF): what the bytes at p
// are, and for Complete the sequence length.
Utf8 check_utf8(const unsigned char* p, size_t n, size_t* len) {
    const unsigned char c = p[0];
    if (c < 0x80) {
        *len = 1;
        return Utf8::Complete;
    }
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return Utf8::Invalid;
    }
    for (size_t k = 1; k < need; ++k) {
        if (k >= n) return Utf8::Incomplete;
        const unsigned char b = p[k];
        if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return Utf8::Invalid;
    }
    *len = need;
    return Utf8::Complete;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::string TokenStreamDecoder::push(int32_t id) {
    if (tok_->is_control(id)) return {};
    pending_ += tok_->piece(id);
    std::string out;
    const auto* p = reinterpret_cast<const unsigned char*>(pending_.data());
    const size_t n = pending_.size();
    size_t i = 0;
    while (i < n) {
        size_t len = 0;
        const Utf8 state = check_utf8(p + i, n - i, &len);
        if (state == Utf8::Incomplete) break;  // wait for the next token's bytes
        if (state == Utf8::Invalid) {
            out += kReplacement;  // can never become valid: do not hold it back
            ++i;
            continue;
        }
        out.append(pending_, i, len);
        i += len;
    }
    pending_.erase(0, i);
    return out;
}

std::string TokenStreamDecoder::flush() {
    std::string out = pending_.empty() ? std::string() : std::string(kReplacement);
    pending_.clear();  // at most one truncated character can be pending
    return out;
}

// ---- Unicode class table ---------------------------------------------------------------------

namespace {

// (first code point << 2 | CharClass) for each run of code points of one class, from llama.cpp's
// unicode-data.cpp (MIT licence) so that letters, numbers and punctuation are what llama.cpp
// takes them to be: \p{L} wins over \p{N} over \p{P}; everything else is kOther.
const uint32_t kClassRanges[] = {
    0x0, 0x87, 0x90, 0x97, 0xac, 0xb3, 0xc2, 0xeb, 0xf0, 0xff, 0x105, 0x16f, 0x178, 0x17f, 0x180,
    0x185, 0x1ef, 0x1f0, 0x1f7, 0x1f8, 0x287, 0x288, 0x29f, 0x2a0, 0x2a9, 0x2af, 0x2b0, 0x2ca,
    0x2d0, 0x2d5, 0x2db, 0x2e0, 0x2e6, 0x2e9, 0x2ef, 0x2f2, 0x2ff, 0x301, 0x35c, 0x361, 0x3dc,
    0x3e1, 0xb08, 0xb19, 0xb48, 0xb81, 0xb94, 0xbb1, 0xbb4, 0xbb9, 0xbbc, 0xdc1, 0xdd4, 0xdd9,
    0xde0, 0xde9, 0xdfb, 0xdfd, 0xe00, 0xe19, 0xe1f, 0xe21, 0xe2c, 0xe31, 0xe34, 0xe39, 0xe88,
    0xe8d, 0xfd8, 0xfdd, 0x1208, 0x1229, 0x14c0, 0x14c5, 0x155c, 0x1565, 0x156b, 0x1581, 0x1627,
    0x162c, 0x16fb, 0x16fc, 0x1703, 0x1704, 0x170f, 0x1710, 0x171b, 0x171c, 0x1741, 0x17ac, 0x17bd,
    0x17cf, 0x17d4, 0x1827, 0x182c, 0x1833, 0x1838, 0x186f, 0x1870, 0x1877, 0x1881, 0x192c, 0x1982,
    0x19ab, 0x19b9, 0x19c0, 0x19c5, 0x1b53, 0x1b55, 0x1b58, 0x1b95, 0x1b9c, 0x1bb9, 0x1bc2, 0x1be9,
    0x1bf4, 0x1bfd, 0x1c03, 0x1c38, 0x1c41, 0x1c44, 0x1c49, 0x1cc0, 0x1d35, 0x1e98, 0x1ec5, 0x1ec8,
    0x1f02, 0x1f29, 0x1fac, 0x1fd1, 0x1fd8, 0x1fdf, 0x1fe9, 0x1fec, 0x2001, 0x2058, 0x2069, 0x206c,
    0x2091, 0x2094, 0x20a1, 0x20a4, 0x20c3, 0x20fc, 0x2101, 0x2164, 0x217b, 0x217c, 0x2181, 0x21ac,
    0x21c1, 0x2220, 0x2225, 0x223c, 0x2281, 0x2328, 0x2411, 0x24e8, 0x24f5, 0x24f8, 0x2541, 0x2544,
    0x2561, 0x2588, 0x2593, 0x259a, 0x25c3, 0x25c5, 0x2604, 0x2615, 0x2634, 0x263d, 0x2644, 0x264d,
    0x26a4, 0x26a9, 0x26c4, 0x26c9, 0x26cc, 0x26d9, 0x26e8, 0x26f5, 0x26f8, 0x2739, 0x273c, 0x2771,
    0x2778, 0x277d, 0x2788, 0x279a, 0x27c1, 0x27c8, 0x27d2, 0x27e8, 0x27f1, 0x27f7, 0x27f8, 0x2815,
    0x282c, 0x283d, 0x2844, 0x284d, 0x28a4, 0x28a9, 0x28c4, 0x28c9, 0x28d0, 0x28d5, 0x28dc, 0x28e1,
    0x28e8, 0x2965, 0x2974, 0x2979, 0x297c, 0x299a, 0x29c0, 0x29c9, 0x29d4, 0x29db, 0x29dc, 0x2a15,
    0x2a38, 0x2a3d, 0x2a48, 0x2a4d, 0x2aa4, 0x2aa9, 0x2ac4, 0x2ac9, 0x2ad0, 0x2ad5, 0x2ae8, 0x2af5,
    0x2af8, 0x2b41, 0x2b44, 0x2b81, 0x2b88, 0x2b9a, 0x2bc3, 0x2bc4, 0x2be5, 0x2be8, 0x2c15, 0x2c34,
    0x2c3d, 0x2c44, 0x2c4d, 0x2ca4, 0x2ca9, 0x2cc4, 0x2cc9, 0x2cd0, 0x2cd5, 0x2ce8, 0x2cf5, 0x2cf8,
    0x2d71, 0x2d78, 0x2d7d, 0x2d88, 0x2d9a, 0x2dc0, 0x2dc5, 0x2dca, 0x2de0, 0x2e0d, 0x2e10, 0x2e15,
    0x2e2c, 0x2e39, 0x2e44, 0x2e49, 0x2e58, 0x2e65, 0x2e6c, 0x2e71, 0x2e74, 0x2e79, 0x2e80, 0x2e8d,
    0x2e94, 0x2ea1, 0x2eac, 0x2eb9, 0x2ee8, 0x2f41, 0x2f44, 0x2f9a, 0x2fcc, 0x3015, 0x3034, 0x3039,
    0x3044, 0x3049, 0x30a4, 0x30a9, 0x30e8, 0x30f5, 0x30f8, 0x3161, 0x316c, 0x3175, 0x3178, 0x3181,
    0x3188, 0x319a, 0x31c0, 0x31df, 0x31e2, 0x31fc, 0x3201, 0x3204, 0x3213, 0x3215, 0x3234, 0x3239,
    0x3244, 0x3249, 0x32a4, 0x32a9, 0x32d0, 0x32d5, 0x32e8, 0x32f5, 0x32f8, 0x3375, 0x337c, 0x3381,
    0x3388, 0x339a, 0x33c0, 0x33c5, 0x33cc, 0x3411, 0x3434, 0x3439, 0x3444, 0x3449, 0x34ec, 0x34f5,
    0x34f8, 0x3539, 0x353c, 0x3551, 0x355c, 0x3562, 0x357d, 0x3588, 0x359a, 0x35e4, 0x35e9, 0x3600,
    0x3615, 0x365c, 0x3669, 0x36c8, 0x36cd, 0x36f0, 0x36f5, 0x36f8, 0x3701, 0x371c, 0x379a, 0x37c0,
    0x37d3, 0x37d4, 0x3805, 0x38c4, 0x38c9, 0x38d0, 0x3901, 0x391c, 0x393f, 0x3942, 0x396b, 0x3970,
    0x3a05, 0x3a0c, 0x3a11, 0x3a14, 0x3a19, 0x3a2c, 0x3a31, 0x3a90, 0x3a95, 0x3a98, 0x3a9d, 0x3ac4,
    0x3ac9, 0x3ad0, 0x3af5, 0x3af8, 0x3b01, 0x3b14, 0x3b19, 0x3b1c, 0x3b42, 0x3b68, 0x3b71, 0x3b80,
    0x3c01, 0x3c04, 0x3c13, 0x3c4c, 0x3c53, 0x3c54, 0x3c82, 0x3cd0, 0x3ceb, 0x3cf8, 0x3d01, 0x3d20,
    0x3d25, 0x3db4, 0x3e17, 0x3e18, 0x3e21, 0x3e34, 0x3f43, 0x3f54, 0x3f67, 0x3f6c, 0x4001, 0x40ac,
    0x40fd, 0x4102, 0x412b, 0x4141, 0x4158, 0x4169, 0x4178, 0x4185, 0x4188, 0x4195, 0x419c, 0x41b9,
    0x41c4, 0x41d5, 0x4208, 0x4239, 0x423c, 0x4242, 0x4268, 0x4281, 0x4318, 0x431d, 0x4320, 0x4335,
    0x4338, 0x4341, 0x43ef, 0x43f1, 0x4924, 0x4929, 0x4938, 0x4941, 0x495c, 0x4961, 0x4964, 0x4969,
    0x4978, 0x4981, 0x4a24, 0x4a29, 0x4a38, 0x4a41, 0x4ac4, 0x4ac9, 0x4ad8, 0x4ae1, 0x4afc, 0x4b01,
    0x4b04, 0x4b09, 0x4b18, 0x4b21, 0x4b5c, 0x4b61, 0x4c44, 0x4c49, 0x4c58, 0x4c61, 0x4d6c, 0x4d83,
    0x4da6, 0x4df4, 0x4e01, 0x4e40, 0x4e81, 0x4fd8, 0x4fe1, 0x4ff8, 0x5003, 0x5005, 0x59b4, 0x59bb,
    0x59bd, 0x5a00, 0x5a05, 0x5a6f, 0x5a74, 0x5a81, 0x5baf, 0x5bba, 0x5bc5, 0x5be4, 0x5c01, 0x5c48,
    0x5c7d, 0x5cc8, 0x5cd7, 0x5cdc, 0x5d01, 0x5d48, 0x5d81, 0x5db4, 0x5db9, 0x5dc4, 0x5e01, 0x5ed0,
    0x5f53, 0x5f5d, 0x5f63, 0x5f6c, 0x5f71, 0x5f74, 0x5f82, 0x5fa8, 0x5fc2, 0x5fe8, 0x6003, 0x602c,
    0x6042, 0x6068, 0x6081, 0x61e4, 0x6201, 0x6214, 0x621d, 0x62a4, 0x62a9, 0x62ac, 0x62c1, 0x63d8,
    0x6401, 0x647c, 0x6513, 0x651a, 0x6541, 0x65b8, 0x65c1, 0x65d4, 0x6601, 0x66b0, 0x66c1, 0x6728,
    0x6742, 0x676c, 0x6801, 0x685c, 0x687b, 0x6881, 0x6954, 0x6a02, 0x6a28, 0x6a42, 0x6a68, 0x6a83,
    0x6a9d, 0x6aa3, 0x6ab8, 0x6c15, 0x6cd0, 0x6d15, 0x6d34, 0x6d42, 0x6d6b, 0x6d84, 0x6df7, 0x6dfc,
    0x6e0d, 0x6e84, 0x6eb9, 0x6ec2, 0x6ee9, 0x6f98, 0x6ff3, 0x7001, 0x7090, 0x70ef, 0x7102, 0x7128,
    0x7135, 0x7142, 0x7169, 0x71fb, 0x7201, 0x7224, 0x7241, 0x72ec, 0x72f5, 0x7303, 0x7320, 0x734f,
    0x7350, 0x73a5, 0x73b4, 0x73b9, 0x73d0, 0x73d5, 0x73dc, 0x73e9, 0x73ec, 0x7401, 0x7700, 0x7801,
    0x7c58, 0x7c61, 0x7c78, 0x7c81, 0x7d18, 0x7d21, 0x7d38, 0x7d41, 0x7d60, 0x7d65, 0x7d68, 0x7d6d,
    0x7d70, 0x7d75, 0x7d78, 0x7d7d, 0x7df8, 0x7e01, 0x7ed4, 0x7ed9, 0x7ef4, 0x7ef9, 0x7efc, 0x7f09,
    0x7f14, 0x7f19, 0x7f34, 0x7f41, 0x7f50, 0x7f59, 0x7f70, 0x7f81, 0x7fb4, 0x7fc9, 0x7fd4, 0x7fd9,
    0x7ff4, 0x8043, 0x80a0, 0x80c3, 0x8110, 0x8117, 0x8148, 0x814f, 0x817c, 0x81c2, 0x81c5, 0x81c8,
    0x81d2, 0x81e8, 0x81f7, 0x81fd, 0x8202, 0x8228, 0x8237, 0x823c, 0x8241, 0x8274, 0x8409, 0x840c,
    0x841d, 0x8420, 0x8429, 0x8450, 0x8455, 0x8458, 0x8465, 0x8478, 0x8491, 0x8494, 0x8499, 0x849c,
    0x84a1, 0x84a4, 0x84a9, 0x84b8, 0x84bd, 0x84e8, 0x84f1, 0x8500, 0x8515, 0x8528, 0x8539, 0x853c,
    0x8542, 0x860d, 0x8616, 0x8628, 0x8c23, 0x8c30, 0x8ca7, 0x8cac, 0x9182, 0x9270, 0x93aa, 0x9400,
    0x9da3, 0x9dda, 0x9e50, 0x9f17, 0x9f1c, 0x9f9b, 0x9fc0, 0xa60f, 0xa664, 0xa763, 0xa770, 0xa7f3,
    0xa7f8, 0xb001, 0xb394, 0xb3ad, 0xb3bc, 0xb3c9, 0xb3d0, 0xb3e7, 0xb3f6, 0xb3fb, 0xb401, 0xb498,
    0xb49d, 0xb4a0, 0xb4b5, 0xb4b8, 0xb4c1, 0xb5a0, 0xb5bd, 0xb5c3, 0xb5c4, 0xb601, 0xb65c, 0xb681,
    0xb69c, 0xb6a1, 0xb6bc, 0xb6c1, 0xb6dc, 0xb6e1, 0xb6fc, 0xb701, 0xb71c, 0xb721, 0xb73c, 0xb741,
    0xb75c, 0xb761, 0xb77c, 0xb803, 0xb8bd, 0xb8c3, 0xb940, 0xb94b, 0xb978, 0xc007, 0xc010, 0xc015,
    0xc01e, 0xc023, 0xc048, 0xc053, 0xc080, 0xc086, 0xc0a8, 0xc0c3, 0xc0c5, 0xc0d8, 0xc0e2, 0xc0ed,
    0xc0f7, 0xc0f8, 0xc105, 0xc25c, 0xc275, 0xc283, 0xc285, 0xc3ef, 0xc3f1, 0xc400, 0xc415, 0xc4c0,
    0xc4c5, 0xc63c, 0xc64a, 0xc658, 0xc681, 0xc700, 0xc7c1, 0xc800, 0xc882, 0xc8a8, 0xc922, 0xc940,
    0xc946, 0xc980, 0xca02, 0xca28, 0xcac6, 0xcb00, 0xd001, 0x13700, 0x13801, 0x29234, 0x29341,
    0x293fb, 0x29401, 0x29837, 0x29841, 0x29882, 0x298a9, 0x298b0, 0x29901, 0x299bc, 0x299cf,
    0x299d0, 0x299fb, 0x299fd, 0x29a78, 0x29a81, 0x29b9a, 0x29bc0, 0x29bcb, 0x29be0, 0x29c5d,
    0x29c80, 0x29c89, 0x29e24, 0x29e2d, 0x29f2c, 0x29f41, 0x29f48, 0x29f4d, 0x29f50, 0x29f55,
    0x29f68, 0x29fc9, 0x2a008, 0x2a00d, 0x2a018, 0x2a01d, 0x2a02c, 0x2a031, 0x2a08c, 0x2a0c2,
    0x2a0d8, 0x2a101, 0x2a1d3, 0x2a1e0, 0x2a209, 0x2a2d0, 0x2a33b, 0x2a342, 0x2a368, 0x2a3c9,
    0x2a3e3, 0x2a3ed, 0x2a3f3, 0x2a3f5, 0x2a3fc, 0x2a402, 0x2a429, 0x2a498, 0x2a4bb, 0x2a4c1,
    0x2a51c, 0x2a57f, 0x2a581, 0x2a5f4, 0x2a611, 0x2a6cc, 0x2a707, 0x2a738, 0x2a73d, 0x2a742,
    0x2a768, 0x2a77b, 0x2a781, 0x2a794, 0x2a799, 0x2a7c2, 0x2a7e9, 0x2a7fc, 0x2a801, 0x2a8a4,
    0x2a901, 0x2a90c, 0x2a911, 0x2a930, 0x2a942, 0x2a968, 0x2a973, 0x2a981, 0x2a9dc, 0x2a9e9,
    0x2a9ec, 0x2a9f9, 0x2aac0, 0x2aac5, 0x2aac8, 0x2aad5, 0x2aadc, 0x2aae5, 0x2aaf8, 0x2ab01,
    0x2ab04, 0x2ab09, 0x2ab0c, 0x2ab6d, 0x2ab7b, 0x2ab81, 0x2abac, 0x2abc3, 0x2abc9, 0x2abd4,
    0x2ac05, 0x2ac1c, 0x2ac25, 0x2ac3c, 0x2ac45, 0x2ac5c, 0x2ac81, 0x2ac9c, 0x2aca1, 0x2acbc,
    0x2acc1, 0x2ad6c, 0x2ad71, 0x2ada8, 0x2adc1, 0x2af8c, 0x2afaf, 0x2afb0, 0x2afc2, 0x2afe8,
    0x2b001, 0x35e90, 0x35ec1, 0x35f1c, 0x35f2d, 0x35ff0, 0x3e401, 0x3e9b8, 0x3e9c1, 0x3eb68,
    0x3ec01, 0x3ec1c, 0x3ec4d, 0x3ec60, 0x3ec75, 0x3ec78, 0x3ec7d, 0x3eca4, 0x3eca9, 0x3ecdc,
    0x3ece1, 0x3ecf4, 0x3ecf9, 0x3ecfc, 0x3ed01, 0x3ed08, 0x3ed0d, 0x3ed14, 0x3ed19, 0x3eec8,
    0x3ef4d, 0x3f4fb, 0x3f500, 0x3f541, 0x3f640, 0x3f649, 0x3f720, 0x3f7c1, 0x3f7f0, 0x3f843,
    0x3f868, 0x3f8c3, 0x3f94c, 0x3f953, 0x3f988, 0x3f98f, 0x3f990, 0x3f9a3, 0x3f9a4, 0x3f9ab,
    0x3f9b0, 0x3f9c1, 0x3f9d4, 0x3f9d9, 0x3fbf4, 0x3fc07, 0x3fc10, 0x3fc17, 0x3fc2c, 0x3fc33,
    0x3fc42, 0x3fc6b, 0x3fc70, 0x3fc7f, 0x3fc85, 0x3fcef, 0x3fcf8, 0x3fcff, 0x3fd00, 0x3fd05,
    0x3fd6f, 0x3fd70, 0x3fd77, 0x3fd78, 0x3fd7f, 0x3fd99, 0x3fefc, 0x3ff09, 0x3ff20, 0x3ff29,
    0x3ff40, 0x3ff49, 0x3ff60, 0x3ff69, 0x3ff74, 0x40001, 0x40030, 0x40035, 0x4009c, 0x400a1,
    0x400ec, 0x400f1, 0x400f8, 0x400fd, 0x40138, 0x40141, 0x40178, 0x40201, 0x403ec, 0x40403,
    0x4040c, 0x4041e, 0x404d0, 0x40502, 0x405e4, 0x4062a, 0x40630, 0x40a01, 0x40a74, 0x40a81,
    0x40b44, 0x40b86, 0x40bf0, 0x40c01, 0x40c82, 0x40c90, 0x40cb5, 0x40d06, 0x40d09, 0x40d2a,
    0x40d2c, 0x40d41, 0x40dd8, 0x40e01, 0x40e78, 0x40e7f, 0x40e81, 0x40f10, 0x40f21, 0x40f43,
    0x40f46, 0x40f58, 0x41001, 0x41278, 0x41282, 0x412a8, 0x412c1, 0x41350, 0x41361, 0x413f0,
    0x41401, 0x414a0, 0x414c1, 0x41590, 0x415bf, 0x415c1, 0x415ec, 0x415f1, 0x4162c, 0x41631,
    0x4164c, 0x41651, 0x41658, 0x4165d, 0x41688, 0x4168d, 0x416c8, 0x416cd, 0x416e8, 0x416ed,
    0x416f4, 0x41801, 0x41cdc, 0x41d01, 0x41d58, 0x41d81, 0x41da0, 0x41e01, 0x41e18, 0x41e1d,
    0x41ec4, 0x41ec9, 0x41eec, 0x42001, 0x42018, 0x42021, 0x42024, 0x42029, 0x420d8, 0x420dd,
    0x420e4, 0x420f1, 0x420f4, 0x420fd, 0x42158, 0x4215f, 0x42162, 0x42181, 0x421dc, 0x421e6,
    0x42201, 0x4227c, 0x4229e, 0x422c0, 0x42381, 0x423cc, 0x423d1, 0x423d8, 0x423ee, 0x42401,
    0x4245a, 0x42470, 0x4247f, 0x42481, 0x424e8, 0x424ff, 0x42500, 0x42601, 0x426e0, 0x426f2,
    0x426f9, 0x42702, 0x42740, 0x4274a, 0x42801, 0x42804, 0x42841, 0x42850, 0x42855, 0x42860,
    0x42865, 0x428d8, 0x42902, 0x42924, 0x42943, 0x42964, 0x42981, 0x429f6, 0x429ff, 0x42a01,
    0x42a76, 0x42a80, 0x42b01, 0x42b20, 0x42b25, 0x42b94, 0x42bae, 0x42bc3, 0x42bdc, 0x42c01,
    0x42cd8, 0x42ce7, 0x42d01, 0x42d58, 0x42d62, 0x42d81, 0x42dcc, 0x42de2, 0x42e01, 0x42e48,
    0x42e67, 0x42e74, 0x42ea6, 0x42ec0, 0x43001, 0x43124, 0x43201, 0x432cc, 0x43301, 0x433cc,
    0x433ea, 0x43401, 0x43490, 0x434c2, 0x434e8, 0x43982, 0x439fc, 0x43a01, 0x43aa8, 0x43ab7,
    0x43ab8, 0x43ac1, 0x43ac8, 0x43c01, 0x43c76, 0x43c9d, 0x43ca0, 0x43cc1, 0x43d18, 0x43d46,
    0x43d57, 0x43d68, 0x43dc1, 0x43e08, 0x43e1b, 0x43e28, 0x43ec1, 0x43f16, 0x43f30, 0x43f81,
    0x43fdc, 0x4400d, 0x440e0, 0x4411f, 0x44138, 0x4414a, 0x441c0, 0x441c5, 0x441cc, 0x441d5,
    0x441d8, 0x4420d, 0x442c0, 0x442ef, 0x442f4, 0x442fb, 0x44308, 0x44341, 0x443a4, 0x443c2,
    0x443e8, 0x4440d, 0x4449c, 0x444da, 0x44503, 0x44511, 0x44514, 0x4451d, 0x44520, 0x44541,
    0x445cc, 0x445d3, 0x445d9, 0x445dc, 0x4460d, 0x446cc, 0x44705, 0x44717, 0x44724, 0x44737,
    0x44738, 0x44742, 0x44769, 0x4476f, 0x44771, 0x44777, 0x44780, 0x44786, 0x447d4, 0x44801,
    0x44848, 0x4484d, 0x448b0, 0x448e3, 0x448f8, 0x448fd, 0x44904, 0x44a01, 0x44a1c, 0x44a21,
    0x44a24, 0x44a29, 0x44a38, 0x44a3d, 0x44a78, 0x44a7d, 0x44aa7, 0x44aa8, 0x44ac1, 0x44b7c,
    0x44bc2, 0x44be8, 0x44c15, 0x44c34, 0x44c3d, 0x44c44, 0x44c4d, 0x44ca4, 0x44ca9, 0x44cc4,
    0x44cc9, 0x44cd0, 0x44cd5, 0x44ce8, 0x44cf5, 0x44cf8, 0x44d41, 0x44d44, 0x44d75, 0x44d88,
    0x45001, 0x450d4, 0x4511d, 0x4512f, 0x45142, 0x4516b, 0x45170, 0x45177, 0x45178, 0x4517d,
    0x45188, 0x45201, 0x452c0, 0x45311, 0x4531b, 0x4531d, 0x45320, 0x45342, 0x45368, 0x45601,
    0x456bc, 0x45707, 0x45761, 0x45770, 0x45801, 0x458c0, 0x45907, 0x45911, 0x45914, 0x45942,
    0x45968, 0x45983, 0x459b4, 0x45a01, 0x45aac, 0x45ae1, 0x45ae7, 0x45ae8, 0x45b02, 0x45b28,
    0x45c01, 0x45c6c, 0x45cc2, 0x45cf3, 0x45cfc, 0x45d01, 0x45d1c, 0x46001, 0x460b0, 0x460ef,
    0x460f0, 0x46281, 0x46382, 0x463cc, 0x463fd, 0x4641c, 0x46425, 0x46428, 0x46431, 0x46450,
    0x46455, 0x4645c, 0x46461, 0x464c0, 0x464fd, 0x46500, 0x46505, 0x46508, 0x46513, 0x4651c,
    0x46542, 0x46568, 0x46681, 0x466a0, 0x466a9, 0x46744, 0x46785, 0x4678b, 0x4678d, 0x46790,
    0x46801, 0x46804, 0x4682d, 0x468cc, 0x468e9, 0x468ec, 0x468ff, 0x4691c, 0x46941, 0x46944,
    0x46971, 0x46a28, 0x46a6b, 0x46a75, 0x46a7b, 0x46a8c, 0x46ac1, 0x46be4, 0x46c03, 0x46c28,
    0x47001, 0x47024, 0x47029, 0x470bc, 0x47101, 0x47107, 0x47118, 0x47142, 0x471b4, 0x471c3,
    0x471c9, 0x47240, 0x47401, 0x4741c, 0x47421, 0x47428, 0x4742d, 0x474c4, 0x47519, 0x4751c,
    0x47542, 0x47568, 0x47581, 0x47598, 0x4759d, 0x475a4, 0x475a9, 0x47628, 0x47661, 0x47664,
    0x47682, 0x476a8, 0x47b81, 0x47bcc, 0x47bdf, 0x47be4, 0x47c09, 0x47c0c, 0x47c11, 0x47c44,
    0x47c49, 0x47cd0, 0x47d0f, 0x47d42, 0x47d68, 0x47ec1, 0x47ec4, 0x47f02, 0x47f54, 0x47fff,
    0x48001, 0x48e68, 0x49002, 0x491bc, 0x491c3, 0x491d4, 0x49201, 0x49510, 0x4be41, 0x4bfc7,
    0x4bfcc, 0x4c001, 0x4d0c0, 0x4d105, 0x4d11c, 0x51001, 0x5191c, 0x5a001, 0x5a8e4, 0x5a901,
    0x5a97c, 0x5a982, 0x5a9a8, 0x5a9bb, 0x5a9c1, 0x5aafc, 0x5ab02, 0x5ab28, 0x5ab41, 0x5abb8,
    0x5abd7, 0x5abd8, 0x5ac01, 0x5acc0, 0x5acdf, 0x5acf0, 0x5ad01, 0x5ad13, 0x5ad14, 0x5ad42,
    0x5ad68, 0x5ad6e, 0x5ad88, 0x5ad8d, 0x5ade0, 0x5adf5, 0x5ae40, 0x5b901, 0x5ba02, 0x5ba5f,
    0x5ba6c, 0x5bc01, 0x5bd2c, 0x5bd41, 0x5bd44, 0x5be4d, 0x5be80, 0x5bf81, 0x5bf8b, 0x5bf8d,
    0x5bf90, 0x5c001, 0x61fe0, 0x62001, 0x63358, 0x63401, 0x63424, 0x6bfc1, 0x6bfd0, 0x6bfd5,
    0x6bff0, 0x6bff5, 0x6bffc, 0x6c001, 0x6c48c, 0x6c4c9, 0x6c4cc, 0x6c541, 0x6c54c, 0x6c555,
    0x6c558, 0x6c591, 0x6c5a0, 0x6c5c1, 0x6cbf0, 0x6f001, 0x6f1ac, 0x6f1c1, 0x6f1f4, 0x6f201,
    0x6f224, 0x6f241, 0x6f268, 0x6f27f, 0x6f280, 0x74b02, 0x74b50, 0x74b82, 0x74bd0, 0x74d82,
    0x74de4, 0x75001, 0x75154, 0x75159, 0x75274, 0x75279, 0x75280, 0x75289, 0x7528c, 0x75295,
    0x7529c, 0x752a5, 0x752b4, 0x752b9, 0x752e8, 0x752ed, 0x752f0, 0x752f5, 0x75310, 0x75315,
    0x75418, 0x7541d, 0x7542c, 0x75435, 0x75454, 0x75459, 0x75474, 0x75479, 0x754e8, 0x754ed,
    0x754fc, 0x75501, 0x75514, 0x75519, 0x7551c, 0x75529, 0x75544, 0x75549, 0x75a98, 0x75aa1,
    0x75b04, 0x75b09, 0x75b6c, 0x75b71, 0x75bec, 0x75bf1, 0x75c54, 0x75c59, 0x75cd4, 0x75cd9,
    0x75d3c, 0x75d41, 0x75dbc, 0x75dc1, 0x75e24, 0x75e29, 0x75ea4, 0x75ea9, 0x75f0c, 0x75f11,
    0x75f30, 0x75f3a, 0x76000, 0x76a1f, 0x76a30, 0x77c01, 0x77c7c, 0x77c95, 0x77cac, 0x780c1,
    0x781b8, 0x78401, 0x784b4, 0x784dd, 0x784f8, 0x78502, 0x78528, 0x78539, 0x7853c, 0x78a41,
    0x78ab8, 0x78b01, 0x78bb0, 0x78bc2, 0x78be8, 0x79341, 0x793b0, 0x793c2, 0x793e8, 0x79f81,
    0x79f9c, 0x79fa1, 0x79fb0, 0x79fb5, 0x79fbc, 0x79fc1, 0x79ffc, 0x7a001, 0x7a314, 0x7a31e,
    0x7a340, 0x7a401, 0x7a510, 0x7a52d, 0x7a530, 0x7a542, 0x7a568, 0x7a57b, 0x7a580, 0x7b1c6,
    0x7b2b0, 0x7b2b6, 0x7b2c0, 0x7b2c6, 0x7b2d4, 0x7b406, 0x7b4b8, 0x7b4be, 0x7b4f8, 0x7b801,
    0x7b810, 0x7b815, 0x7b880, 0x7b885, 0x7b88c, 0x7b891, 0x7b894, 0x7b89d, 0x7b8a0, 0x7b8a5,
    0x7b8cc, 0x7b8d1, 0x7b8e0, 0x7b8e5, 0x7b8e8, 0x7b8ed, 0x7b8f0, 0x7b909, 0x7b90c, 0x7b91d,
    0x7b920, 0x7b925, 0x7b928, 0x7b92d, 0x7b930, 0x7b935, 0x7b940, 0x7b945, 0x7b94c, 0x7b951,
    0x7b954, 0x7b95d, 0x7b960, 0x7b965, 0x7b968, 0x7b96d, 0x7b970, 0x7b975, 0x7b978, 0x7b97d,
    0x7b980, 0x7b985, 0x7b98c, 0x7b991, 0x7b994, 0x7b99d, 0x7b9ac, 0x7b9b1, 0x7b9cc, 0x7b9d1,
    0x7b9e0, 0x7b9e5, 0x7b9f4, 0x7b9f9, 0x7b9fc, 0x7ba01, 0x7ba28, 0x7ba2d, 0x7ba70, 0x7ba85,
    0x7ba90, 0x7ba95, 0x7baa8, 0x7baad, 0x7baf0, 0x7c402, 0x7c434, 0x7efc2, 0x7efe8, 0x80001,
    0xa9b80, 0xa9c01, 0xadce8, 0xadd01, 0xae078, 0xae081, 0xb3a88, 0xb3ac1, 0xbaf84, 0xbafc1,
    0xbb978, 0xbe001, 0xbe878, 0xc0001, 0xc4d2c, 0xc4d41, 0xc8ec0,
};
const size_t kClassRangeCount = sizeof(kClassRanges) / sizeof(kClassRanges[0]);

}  // namespace

}  // namespace hmllm
