// Tokenizer: exact encodings on tiny hand-built vocabularies (no model needed), byte fallback,
// UTF-8-safe streaming decode, robustness on arbitrary bytes; and, when HMLLM_TEST_MODEL and
// HMLLM_FIXTURES_DIR are set, id-for-id agreement with llama.cpp on the real Gemma 3 model
// (tests/fixtures/llama_cpp/gemma3_tokenize.json, recorded by scripts/record_llama_reference.py).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "hmllm/gguf_reader.h"
#include "hmllm/tokenizer.h"
#include "support/gguf_builder.h"
#include "test_main.h"

using hmllm::GgufFile;
using hmllm::Status;
using hmllm::Tokenizer;
using hmllm::TokenStreamDecoder;
using hmtest::gpt2_byte_piece;
using hmtest::Metadata;
using hmtest::metadata_only_file;
using hmtest::Vocabulary;
using Ids = std::vector<int32_t>;

namespace {

// ---- vocabularies as GGUF files on disk (support/gguf_builder.h writes them) ---------------

// Writes `m` as a metadata-only file and returns its path (removed by the caller).
std::string write_temp_file(const Metadata& m) {
    const std::vector<uint8_t> b = metadata_only_file(m);
    char path[] = "/tmp/hmllm-tok-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ::write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size())) std::abort();
    close(fd);
    return path;
}

// A loaded tokenizer together with the file it views.
struct Loaded {
    GgufFile file;
    Tokenizer tok;
    std::string path;
    Status status;
    ~Loaded() {
        if (!path.empty()) unlink(path.c_str());
    }
};

std::unique_ptr<Loaded> load(const Metadata& m) {
    auto l = std::make_unique<Loaded>();
    l->path = write_temp_file(m);
    l->status = GgufFile::open(l->path, &l->file);
    if (l->status.ok()) l->status = Tokenizer::load(l->file, &l->tok);
    return l;
}

// ---- the tiny SentencePiece vocabulary -----------------------------------------------------
// ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the pieces below.

const std::string kSp = "\xE2\x96\x81";  // U+2581
constexpr int32_t kByte0 = 3;
constexpr int32_t kSpace = 259, kA = 260, kB = 261, kC = 262, kAB = 263, kBC = 264,
                  kSpaceA = 265, kCtl = 266, kUd = 267, kEAcute = 268, kEndTurn = 269;

Metadata spm_vocab(bool add_space_prefix) {
    Vocabulary v = hmtest::spm_skeleton(add_space_prefix);
    v.add(kSp, -10, 1);
    v.add("a", -5, 1);
    v.add("b", -5, 1);
    v.add("c", -5, 1);
    v.add("ab", -1, 1);
    v.add("bc", -0.5f, 1);  // preferred over "ab": "abc" must become a + bc
    v.add(kSp + "a", -2, 1);
    v.add("<ctl>", 0, 3);
    v.add("<ud>", 0, 4);
    v.add("\xC3\xA9", -3, 1);  // é
    v.add("<end_of_turn>", 0, 3);
    return v.metadata();
}

int32_t byte_tok(unsigned char b) { return kByte0 + b; }

bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        }
        i += n;
    }
    return true;
}

std::string concat_pieces(const Tokenizer& t, const Ids& ids) {
    std::string s;
    for (int32_t id : ids) s += t.piece(id);
    return s;
}

// ---- the tiny byte-level BPE vocabulary ----------------------------------------------------
// ids 0..255: the GPT-2 code point of byte id; then merged pieces and two control tokens.

constexpr int32_t kHe = 256, kLl = 257, kHell = 258, kHello = 259, kGw = 260, kOr = 261,
                  kGwor = 262, kLd = 263, kGworld = 264, k12 = 265, k123 = 266, k45 = 267,
                  kEot = 268, kImEnd = 269;

Metadata bpe_vocab(const std::string& pre) {
    Vocabulary v = hmtest::bpe_skeleton(pre);
    const std::string G = gpt2_byte_piece(' ');  // "Ġ"
    for (const std::string& t : {std::string("he"), std::string("ll"), std::string("hell"),
                                 std::string("hello"), G + "w", std::string("or"), G + "wor",
                                 std::string("ld"), G + "world", std::string("12"),
                                 std::string("123"), std::string("45")}) {
        v.add(t, 1);
    }
    v.add("<|endoftext|>", 3);
    v.add("<|im_end|>", 3);
    v.merges = {"h e", "l l", "he ll", "hell o", G + " w", "o r",
                G + "w or", "l d", G + "wor ld", "1 2", "12 3", "4 5"};
    v.bos = v.eos = kEot;
    return v.metadata();
}

// ---- a small JSON reader for the fixtures ----------------------------------------------------

struct Json {
    enum Type { Null, Bool, Number, String, Array, Object } type = Null;
    double num = 0;
    bool b = false;
    std::string str;
    std::vector<Json> arr;
    std::map<std::string, Json> obj;
    const Json& operator[](const std::string& k) const {
        static const Json null;
        auto it = obj.find(k);
        return it == obj.end() ? null : it->second;
    }
};

struct JsonParser {
    const std::string& s;
    size_t i = 0;
    bool ok = true;
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
    }
    static void utf8(uint32_t cp, std::string* out) {
        if (cp < 0x80) {
            *out += char(cp);
        } else if (cp < 0x800) {
            *out += char(0xC0 | (cp >> 6));
            *out += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            *out += char(0xE0 | (cp >> 12));
            *out += char(0x80 | ((cp >> 6) & 0x3F));
            *out += char(0x80 | (cp & 0x3F));
        } else {
            *out += char(0xF0 | (cp >> 18));
            *out += char(0x80 | ((cp >> 12) & 0x3F));
            *out += char(0x80 | ((cp >> 6) & 0x3F));
            *out += char(0x80 | (cp & 0x3F));
        }
    }
    uint32_t hex4() {
        uint32_t v = 0;
        for (int k = 0; k < 4 && i < s.size(); ++k) v = v * 16 + std::stoul(s.substr(i++, 1), nullptr, 16);
        return v;
    }
    std::string string() {
        std::string out;
        ++i;  // opening quote
        while (i < s.size() && s[i] != '"') {
            char c = s[i++];
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = s[i++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < s.size() && s[i] == '\\') {
                        i += 2;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4() - 0xDC00);
                    }
                    utf8(cp, &out);
                    break;
                }
                default: out += e;
            }
        }
        ++i;  // closing quote
        return out;
    }
    Json value() {
        ws();
        Json v;
        if (i >= s.size()) {
            ok = false;
            return v;
        }
        char c = s[i];
        if (c == '{') {
            v.type = Json::Object;
            ++i;
            ws();
            while (ok && i < s.size() && s[i] != '}') {
                ws();
                std::string k = string();
                ws();
                ++i;  // ':'
                v.obj[k] = value();
                ws();
                if (i < s.size() && s[i] == ',') ++i;
                ws();
            }
            ++i;
        } else if (c == '[') {
            v.type = Json::Array;
            ++i;
            ws();
            while (ok && i < s.size() && s[i] != ']') {
                v.arr.push_back(value());
                ws();
                if (i < s.size() && s[i] == ',') ++i;
                ws();
            }
            ++i;
        } else if (c == '"') {
            v.type = Json::String;
            v.str = string();
        } else if (s.compare(i, 4, "true") == 0) {
            v.type = Json::Bool;
            v.b = true;
            i += 4;
        } else if (s.compare(i, 5, "false") == 0) {
            v.type = Json::Bool;
            i += 5;
        } else if (s.compare(i, 4, "null") == 0) {
            i += 4;
        } else {
            v.type = Json::Number;
            size_t used = 0;
            v.num = std::stod(s.substr(i, 40), &used);
            i += used;
        }
        return v;
    }
};

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        out += char(std::stoul(hex.substr(i, 2), nullptr, 16));
    }
    return out;
}

Ids ids_of(const Json& a) {
    Ids out;
    for (const Json& v : a.arr) out.push_back(static_cast<int32_t>(v.num));
    return out;
}

std::string show(const Ids& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "]";
}

Json read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    JsonParser p{text};
    Json v = p.value();
    return p.ok ? v : Json{};
}

// HMLLM_FIXTURES_DIR, else the repository's tests/fixtures/llama_cpp next to this source file
// (absent when the native tree was copied elsewhere: those cases then skip).
std::string fixtures_dir() {
    const char* env = std::getenv("HMLLM_FIXTURES_DIR");
    if (env != nullptr && *env) return env;
#ifdef HMLLM_TESTS_DIR
    const std::string here_dir = HMLLM_TESTS_DIR;  // set by CMake: __FILE__ may be relative
#else
    const std::string here = __FILE__;
    const size_t slash = here.rfind('/');
    if (slash == std::string::npos) return {};
    const std::string here_dir = here.substr(0, slash);
#endif
    const std::string dir = here_dir + "/../../tests/fixtures/llama_cpp";
    return access((dir + "/bpe_reduced_tokenize.json").c_str(), R_OK) == 0 ? dir : std::string();
}

// The real model and its fixture, loaded once; nullptr (and "skip" printed) when not configured.
struct RealModel {
    GgufFile file;
    Tokenizer tok;
    Json fixture;
    double load_ms = 0;
};

const RealModel* real_model() {
    static std::unique_ptr<RealModel> model;
    static bool tried = false;
    if (tried) return model.get();
    tried = true;
    const char* path = std::getenv("HMLLM_TEST_MODEL");
    const std::string dir = fixtures_dir();
    if (path == nullptr || !*path || dir.empty()) return nullptr;
    auto m = std::make_unique<RealModel>();
    Status st = GgufFile::open(path, &m->file);
    if (!st.ok()) {
        std::printf("cannot open %s: %s\n", path, st.message.c_str());
        return nullptr;
    }
    auto t0 = std::chrono::steady_clock::now();
    st = Tokenizer::load(m->file, &m->tok);
    auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) {
        std::printf("tokenizer load failed: %s\n", st.message.c_str());
        return nullptr;
    }
    m->load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    m->fixture = read_json(dir + "/gemma3_tokenize.json");
    if (m->fixture.type != Json::Object) {
        std::printf("cannot parse %s/gemma3_tokenize.json\n", dir.c_str());
        return nullptr;
    }
    model = std::move(m);
    return model.get();
}

bool skip_without_model() {
    if (real_model() != nullptr) return false;
    std::printf("skip: set HMLLM_TEST_MODEL (and HMLLM_FIXTURES_DIR outside the repository) "
                "to compare with llama.cpp on Gemma 3\n");
    return true;
}

}  // namespace

// ---- SentencePiece -----------------------------------------------------------------------------

TEST_CASE(spm_merges_best_scored_pair_first) {
    auto l = load(spm_vocab(false));
    CHECK(l->status.ok());
    const Tokenizer& t = l->tok;
    CHECK(t.kind() == Tokenizer::Kind::Spm);
    CHECK_EQ(t.n_vocab(), 270);
    CHECK_EQ(show(t.encode("ab", false)), show({kAB}));
    CHECK_EQ(show(t.encode("abc", false)), show({kA, kBC}));  // "bc" scores higher than "ab"
    CHECK_EQ(show(t.encode("cab", false)), show({kC, kAB}));
    CHECK_EQ(show(t.encode(" a", false)), show({kSpaceA}));
    CHECK_EQ(show(t.encode("a b", false)), show({kA, kSpace, kB}));
    CHECK_EQ(show(t.encode("abab", true)), show({1, kAB, kAB}));
    CHECK_EQ(show(t.encode("", true)), show({1}));
    CHECK(t.encode("", false).empty());
}

TEST_CASE(spm_space_prefix_follows_metadata) {
    auto l = load(spm_vocab(true));
    CHECK(l->status.ok());
    // "▁ab": "ab" (-1) merges before "▁a" (-2), and "▁ab" is not a token.
    CHECK_EQ(show(l->tok.encode("ab", true)), show({1, kSpace, kAB}));
    // After a special token the prefix space is added again, as llama.cpp does.
    CHECK_EQ(show(l->tok.encode("a<ctl>a", false)), show({kSpaceA, kCtl, kSpaceA}));
}

TEST_CASE(spm_byte_fallback_for_missing_characters) {
    auto l = load(spm_vocab(false));
    const Tokenizer& t = l->tok;
    CHECK_EQ(show(t.encode("x", false)), show({byte_tok('x')}));
    CHECK_EQ(show(t.encode("\xC3\xA9", false)), show({kEAcute}));                      // é
    CHECK_EQ(show(t.encode("\xC3\xA8", false)), show({byte_tok(0xC3), byte_tok(0xA8)}));  // è
    const std::string pizza = "\xF0\x9F\x8D\x95";  // U+1F355
    CHECK_EQ(show(t.encode("a" + pizza, false)),
             show({kA, byte_tok(0xF0), byte_tok(0x9F), byte_tok(0x8D), byte_tok(0x95)}));
    // Invalid UTF-8 is spelled byte by byte too.
    CHECK_EQ(show(t.encode("\xFF\xC3", false)), show({byte_tok(0xFF), byte_tok(0xC3)}));
}

TEST_CASE(spm_special_tokens_in_text) {
    auto l = load(spm_vocab(false));
    const Tokenizer& t = l->tok;
    CHECK_EQ(show(t.encode("a<ctl>b", false)), show({kA, kCtl, kB}));
    CHECK_EQ(show(t.encode("<ud>abc<ctl><ctl>", false)), show({kUd, kA, kBC, kCtl, kCtl}));
    CHECK_EQ(show(t.encode("<s>a", true)), show({1, 1, kA}));
    // An incomplete special token is plain text.
    CHECK_EQ(show(t.encode("<ctl", false)),
             show({byte_tok('<'), kC, byte_tok('t'), byte_tok('l')}));
}

TEST_CASE(spm_pieces_and_metadata) {
    auto l = load(spm_vocab(false));
    const Tokenizer& t = l->tok;
    CHECK_EQ(t.piece(kSpace), std::string(" "));
    CHECK_EQ(t.piece(kSpaceA), std::string(" a"));
    CHECK_EQ(t.piece(byte_tok('A')), std::string("A"));
    CHECK_EQ(t.piece(byte_tok(0xF0)), std::string("\xF0"));
    CHECK_EQ(t.piece(kCtl), std::string("<ctl>"));
    CHECK_EQ(t.piece(-1), std::string());
    CHECK_EQ(t.piece(1 << 20), std::string());
    CHECK_EQ(t.bos_id(), 1);
    CHECK_EQ(t.eos_id(), 2);
    CHECK(t.add_bos());
    CHECK(t.is_end_of_generation(2));
    CHECK(t.is_end_of_generation(kEndTurn));  // found by its text, as llama.cpp does
    CHECK(!t.is_end_of_generation(kA));
    CHECK(t.is_control(kCtl));
    CHECK(!t.is_control(kUd));
    CHECK_EQ(t.token_id(kSp + "a"), kSpaceA);
    CHECK_EQ(t.token_id("zz"), -1);
}

TEST_CASE(stream_decoder_never_splits_a_character) {
    auto l = load(spm_vocab(false));
    const Tokenizer& t = l->tok;
    TokenStreamDecoder d(t);
    CHECK_EQ(d.push(kA), std::string("a"));
    CHECK_EQ(d.push(byte_tok(0xF0)), std::string());
    CHECK_EQ(d.push(byte_tok(0x9F)), std::string());
    CHECK_EQ(d.push(byte_tok(0x8D)), std::string());
    CHECK_EQ(d.push(byte_tok(0x95)), std::string("\xF0\x9F\x8D\x95"));
    CHECK_EQ(d.push(kCtl), std::string());             // control tokens are not text
    CHECK_EQ(d.push(byte_tok(0xFF)), std::string("\xEF\xBF\xBD"));  // never valid: at once
    CHECK_EQ(d.push(byte_tok(0xC3)), std::string());
    CHECK_EQ(d.push(kSpace), std::string("\xEF\xBF\xBD "));  // broken sequence, then the space
    CHECK_EQ(d.push(byte_tok(0xE2)), std::string());
    CHECK_EQ(d.flush(), std::string("\xEF\xBF\xBD"));  // truncated at the end of the stream
    CHECK_EQ(d.flush(), std::string());
}

TEST_CASE(random_bytes_never_crash_and_round_trip) {
    auto l = load(spm_vocab(false));
    const Tokenizer& t = l->tok;
    std::mt19937 rng(12345);
    const std::string alphabet[] = {"a", "b", "c", " ", "<", ">", "<ctl>", "<ud>", "\xC3",
                                    "\xA9", "\xF0\x9F", "\x80", "\xFF", "\n", std::string(1, '\0')};
    for (int iter = 0; iter < 3000; ++iter) {
        std::string s;
        const int len = static_cast<int>(rng() % 40);
        for (int k = 0; k < len; ++k) {
            if (rng() % 2) {
                s += char(rng() & 0xFF);
            } else {
                s += alphabet[rng() % (sizeof alphabet / sizeof alphabet[0])];
            }
        }
        const Ids ids = t.encode(s, false);
        for (int32_t id : ids) CHECK(id >= 0 && id < t.n_vocab());
        // Without a space prefix, SPM pieces spell valid UTF-8 input back exactly. (A broken
        // lead byte swallows the next byte as llama.cpp does; a space there stays U+2581.)
        if (valid_utf8(s)) CHECK_EQ(concat_pieces(t, ids), s);
        TokenStreamDecoder d(t);
        for (int32_t id : ids) d.push(id);
        d.flush();
    }
}

// ---- byte-level BPE ---------------------------------------------------------------------------

TEST_CASE(bpe_merges_by_rank_within_words) {
    auto l = load(bpe_vocab("gpt-2"));
    CHECK(l->status.ok());
    const Tokenizer& t = l->tok;
    CHECK(t.kind() == Tokenizer::Kind::Bpe);
    CHECK(t.pre_tokenizer() == Tokenizer::PreTokenizer::Gpt2);
    CHECK_EQ(show(t.encode("hello world", false)), show({kHello, kGworld}));
    // Two spaces: the first stays alone (\s+(?!\S)), the second starts " world".
    CHECK_EQ(show(t.encode("hello  world", false)), show({kHello, ' ', kGworld}));
    // No merge crosses a word boundary: "lo" + "wor" are separate words.
    CHECK_EQ(show(t.encode("he,ll", false)), show({kHe, ',', kLl}));
    CHECK(!t.add_bos());
    CHECK_EQ(show(t.encode("hello<|im_end|>", t.add_bos())), show({kHello, kImEnd}));
    CHECK_EQ(show(t.encode("hello", true)), show({kEot, kHello}));  // an explicit BOS request
    // Non-ASCII text is spelled in the byte alphabet: é is C3 A9.
    CHECK_EQ(show(t.encode("\xC3\xA9", false)), show({0xC3, 0xA9}));
    CHECK(t.is_end_of_generation(kEot));
    CHECK(t.is_end_of_generation(kImEnd));
}

TEST_CASE(bpe_pieces_map_back_to_bytes) {
    auto l = load(bpe_vocab("gpt-2"));
    const Tokenizer& t = l->tok;
    CHECK_EQ(t.piece(kGworld), std::string(" world"));
    CHECK_EQ(t.piece(' '), std::string(" "));
    CHECK_EQ(t.piece(0xC3) + t.piece(0xA9), std::string("\xC3\xA9"));
    CHECK_EQ(t.piece(kImEnd), std::string("<|im_end|>"));
    CHECK_EQ(concat_pieces(t, t.encode("hello, wörld 123\n", false)),
             std::string("hello, wörld 123\n"));
}

TEST_CASE(bpe_digit_splitting_by_pre_tokenizer) {
    auto llama3 = load(bpe_vocab("llama-bpe"));
    CHECK(llama3->status.ok());
    CHECK(llama3->tok.pre_tokenizer() == Tokenizer::PreTokenizer::Llama3);
    CHECK_EQ(show(llama3->tok.encode("12345", false)), show({k123, k45}));  // \p{N}{1,3}
    auto qwen2 = load(bpe_vocab("qwen2"));
    CHECK(qwen2->status.ok());
    CHECK_EQ(show(qwen2->tok.encode("12345", false)), show({'1', '2', '3', '4', '5'}));  // \p{N}
    auto dflt = load(bpe_vocab("default"));
    CHECK(dflt->status.ok());
    CHECK_EQ(show(dflt->tok.encode("12345", false)), show({k123, k45}));  // [0-9]{3} pass
    // llama3 keeps a leading non-letter with a word; gpt2 and default keep " " with it only.
    CHECK_EQ(show(llama3->tok.encode(" world", false)), show({kGworld}));
}

TEST_CASE(bpe_random_bytes_never_crash) {
    for (const char* pre : {"gpt-2", "llama3", "qwen2", "default"}) {
        auto l = load(bpe_vocab(pre));
        CHECK(l->status.ok());
        std::mt19937 rng(7);
        for (int iter = 0; iter < 1000; ++iter) {
            std::string s;
            const int len = static_cast<int>(rng() % 48);
            for (int k = 0; k < len; ++k) s += char(rng() & 0xFF);
            s += "hello 123 <|im_end|>'s  \r\n";
            for (int32_t id : l->tok.encode(s, true)) CHECK(id >= 0 && id < l->tok.n_vocab());
        }
    }
}

// ---- loading errors ---------------------------------------------------------------------------

TEST_CASE(unsupported_tokenizers_are_named) {
    Metadata g;
    g.str("tokenizer.ggml.model", "bert");
    g.str_array("tokenizer.ggml.tokens", {"a"});
    auto l = load(g);
    CHECK(l->status.code == hmllm::ErrorCode::UnsupportedModel);
    CHECK(l->status.message.find("bert") != std::string::npos);

    auto p = load(bpe_vocab("no-such-pre"));
    CHECK(p->status.code == hmllm::ErrorCode::UnsupportedModel);
    CHECK(p->status.message.find("no-such-pre") != std::string::npos);

    Metadata none;
    none.str("general.architecture", "llama");
    auto n = load(none);
    CHECK(n->status.code == hmllm::ErrorCode::UnsupportedModel);
}

TEST_CASE(inconsistent_vocabularies_are_invalid) {
    Metadata g;
    g.str("tokenizer.ggml.model", "llama");
    g.str_array("tokenizer.ggml.tokens", {"a", "b", "c"});
    g.f32_array("tokenizer.ggml.scores", {0.0f});  // shorter than the vocabulary
    auto l = load(g);
    CHECK(l->status.code == hmllm::ErrorCode::InvalidModel);

    Metadata m;
    m.str("tokenizer.ggml.model", "gpt2");
    m.str_array("tokenizer.ggml.tokens", {"a", "b"});  // no merges
    auto k = load(m);
    CHECK(k->status.code == hmllm::ErrorCode::InvalidModel);

    Tokenizer empty;  // never loaded: encodes nothing rather than crashing
    CHECK(empty.encode("abc", true).empty());
    CHECK_EQ(empty.piece(0), std::string());
}

// ---- the real Gemma 3 vocabulary against llama.cpp --------------------------------------------

TEST_CASE(gemma3_matches_llama_cpp_on_fixture_strings) {
    if (skip_without_model()) return;
    const RealModel& m = *real_model();
    std::printf("gemma3 tokenizer load: %.1f ms for %d tokens\n", m.load_ms, m.tok.n_vocab());
    const Json& cases = m.fixture["cases"];
    CHECK(cases.arr.size() >= 40);
    int matched = 0;
    int total = 0;
    for (const Json& c : cases.arr) {
        const std::string text = from_hex(c["text_hex"].str);
        for (bool bos : {true, false}) {
            const Ids want = ids_of(c[bos ? "ids_bos" : "ids_no_bos"]);
            const Ids got = m.tok.encode(text, bos);
            ++total;
            if (got == want) {
                ++matched;
            } else {
                std::printf("mismatch (bos=%d) on hex %s:\n  want %s\n  got  %s\n", bos,
                            c["text_hex"].str.c_str(), show(want).c_str(), show(got).c_str());
            }
        }
    }
    std::printf("gemma3: %d of %d encodings match llama.cpp\n", matched, total);
    CHECK_EQ(matched, total);
}

TEST_CASE(gemma3_pieces_match_llama_cpp) {
    if (skip_without_model()) return;
    const RealModel& m = *real_model();
    for (const Json& d : m.fixture["detokenize"].arr) {
        const Ids ids = ids_of(d["ids"]);
        for (size_t i = 0; i < ids.size(); ++i) {
            CHECK_EQ(m.tok.piece(ids[i]), from_hex(d["pieces_hex"].arr[i].str));
            // special = false in llama.cpp renders control tokens as nothing, as does the decoder
            const std::string plain = from_hex(d["pieces_plain_hex"].arr[i].str);
            CHECK_EQ(m.tok.is_control(ids[i]) ? std::string() : m.tok.piece(ids[i]), plain);
        }
    }
    const Json& vocab = m.fixture["vocab"];
    CHECK_EQ(m.tok.n_vocab(), static_cast<int32_t>(vocab["n_vocab"].num));
    CHECK_EQ(m.tok.bos_id(), static_cast<int32_t>(vocab["bos"].num));
    CHECK_EQ(m.tok.eos_id(), static_cast<int32_t>(vocab["eos"].num));
    CHECK(m.tok.is_end_of_generation(static_cast<int32_t>(vocab["eot"].num)));
    CHECK(m.tok.is_end_of_generation(m.tok.eos_id()));
    CHECK_EQ(m.tok.add_bos(), vocab["add_bos"].b);
}

TEST_CASE(gemma3_round_trips_and_streams_fixture_strings) {
    if (skip_without_model()) return;
    const RealModel& m = *real_model();
    for (const Json& c : m.fixture["cases"].arr) {
        const std::string text = from_hex(c["text_hex"].str);
        const Ids ids = m.tok.encode(text, false);
        if (!valid_utf8(text)) continue;
        CHECK_EQ(concat_pieces(m.tok, ids), text);  // Gemma has no space prefix
        TokenStreamDecoder d(m.tok);
        std::string streamed;
        for (int32_t id : ids) {
            if (m.tok.is_control(id)) continue;
            streamed += d.push(id);
        }
        streamed += d.flush();
        std::string visible;
        for (int32_t id : ids) {
            if (!m.tok.is_control(id)) visible += m.tok.piece(id);
        }
        CHECK_EQ(streamed, visible);
    }
}

// ---- SmolLM2-135M-Instruct (GPT-2 BPE, the smollm pre-tokenizer) against llama.cpp ----------------
// HMLLM_CHAT_TEST_MODEL: the file `hmbuild fetch-model smollm2-135m-instruct` caches (hmbuild test
// sets it when the file is there); the fixture is smollm2.json (scripts/record_smollm_reference.py).

TEST_CASE(smollm2_matches_llama_cpp_on_fixture_strings) {
    const char* path = std::getenv("HMLLM_CHAT_TEST_MODEL");
    const std::string dir = fixtures_dir();
    if (path == nullptr || !*path || dir.empty()) {
        std::printf("skip: set HMLLM_CHAT_TEST_MODEL (hmbuild fetch-model smollm2-135m-instruct) to compare "
                    "with llama.cpp on SmolLM2\n");
        return;
    }
    GgufFile file;
    CHECK(GgufFile::open(path, &file).ok());
    Tokenizer tok;
    const Status st = Tokenizer::load(file, &tok);
    if (!st.ok()) std::printf("%s\n", st.message.c_str());
    CHECK(st.ok());
    const Json fixture = read_json(dir + "/smollm2.json");
    CHECK(fixture.type == Json::Object);
    CHECK(!tok.add_bos());
    const int32_t end = static_cast<int32_t>(fixture["settings"]["end_of_turn"].num);
    CHECK(tok.is_end_of_generation(end));
    CHECK_EQ(tok.piece(end), std::string("<|im_end|>"));
    int matched = 0, total = 0;
    for (const Json& c : fixture["tokenize"].arr) {
        const std::string& text = c["text"].str;
        const Ids want = ids_of(c["ids"]);
        const Ids got = tok.encode(text, tok.add_bos());
        ++total;
        if (got == want) {
            ++matched;
        } else {
            std::printf("mismatch on %s:\n  want %s\n  got  %s\n", text.c_str(), show(want).c_str(), show(got).c_str());
        }
        CHECK_EQ(concat_pieces(tok, got), text);  // byte-level BPE: the pieces spell the text
    }
    std::printf("smollm2: %d of %d encodings match llama.cpp\n", matched, total);
    CHECK(total >= 15);
    CHECK_EQ(matched, total);
}

TEST_CASE(gemma3_random_bytes_never_crash) {
    if (skip_without_model()) return;
    const RealModel& m = *real_model();
    std::mt19937 rng(99);
    const char* fragments[] = {"<start_of_turn>", "<end_of_turn>", "  ", "\n\n", "<unused1",
                               "\xF0\x9F", "\xE4\xBD", " the", "<0x41>", "\t"};
    for (int iter = 0; iter < 500; ++iter) {
        std::string s;
        const int len = static_cast<int>(rng() % 64);
        for (int k = 0; k < len; ++k) {
            if (rng() % 3) {
                s += char(rng() & 0xFF);
            } else {
                s += fragments[rng() % 10];
            }
        }
        const Ids ids = m.tok.encode(s, true);
        CHECK(!ids.empty());
        for (int32_t id : ids) CHECK(id >= 0 && id < m.tok.n_vocab());
        if (valid_utf8(s)) CHECK_EQ(concat_pieces(m.tok, Ids(ids.begin() + 1, ids.end())), s);
    }
}

// ---- byte-level BPE against llama.cpp ----------------------------------------------------------

// A reduced Qwen2 vocabulary (byte alphabet, its first 1500 merges, control tokens) is part of
// the fixture, so this needs no download: the GGUF is rebuilt here exactly as the recording
// script built it for llama.cpp, once per pre-tokenizer.
TEST_CASE(bpe_reduced_qwen2_matches_llama_cpp) {
    const std::string dir = fixtures_dir();
    if (dir.empty()) {
        std::printf("skip: set HMLLM_FIXTURES_DIR to tests/fixtures/llama_cpp\n");
        return;
    }
    const Json fx = read_json(dir + "/bpe_reduced_tokenize.json");
    CHECK(fx.type == Json::Object);
    const Json& vocab = fx["vocab"];
    std::vector<std::string> tokens, merges;
    std::vector<int32_t> types;
    for (const Json& t : vocab["tokens"].arr) tokens.push_back(t.str);
    for (const Json& m : vocab["merges"].arr) merges.push_back(m.str);
    for (const Json& t : vocab["token_type"].arr) types.push_back(static_cast<int32_t>(t.num));
    std::vector<std::string> texts;
    for (const Json& h : fx["texts_hex"].arr) texts.push_back(from_hex(h.str));
    CHECK(texts.size() >= 80);
    for (const Json& run : fx["runs"].arr) {
        Metadata g;
        g.str("tokenizer.ggml.model", "gpt2");
        g.str("tokenizer.ggml.pre", run["pre"].str);
        g.str_array("tokenizer.ggml.tokens", tokens);
        g.i32_array("tokenizer.ggml.token_type", types);
        g.str_array("tokenizer.ggml.merges", merges);
        if (vocab["bos"].num >= 0) g.u32("tokenizer.ggml.bos_token_id", uint32_t(vocab["bos"].num));
        if (vocab["eos"].num >= 0) g.u32("tokenizer.ggml.eos_token_id", uint32_t(vocab["eos"].num));
        auto l = load(g);
        CHECK(l->status.ok());
        CHECK_EQ(l->tok.add_bos(), run["add_bos"].b);
        int matched = 0;
        for (size_t i = 0; i < texts.size(); ++i) {
            const Ids want = ids_of(run["cases"].arr[i]);
            const Ids got = l->tok.encode(texts[i], false);
            if (got == want) {
                ++matched;
            } else {
                std::printf("mismatch (pre %s) on hex %s:\n  want %s\n  got  %s\n",
                            run["pre"].str.c_str(), fx["texts_hex"].arr[i].str.c_str(),
                            show(want).c_str(), show(got).c_str());
            }
        }
        std::printf("reduced qwen2 vocab, pre %s: %d of %zu encodings match llama.cpp\n",
                    run["pre"].str.c_str(), matched, texts.size());
        CHECK_EQ(matched, static_cast<int>(texts.size()));
    }
}

// llama.cpp's own full test vocabularies (models/ggml-vocab-*.gguf in its source tree; see
// scripts/record_llama_reference.py), when HMLLM_VOCAB_DIR points at them.
TEST_CASE(llama_cpp_test_vocabularies_match) {
    const char* vocab_dir = std::getenv("HMLLM_VOCAB_DIR");
    const std::string dir = fixtures_dir();
    if (vocab_dir == nullptr || !*vocab_dir || dir.empty()) {
        std::printf("skip: set HMLLM_VOCAB_DIR to llama.cpp's models/ directory\n");
        return;
    }
    const Json fx = read_json(dir + "/llama_vocab_tokenize.json");
    CHECK(fx.type == Json::Object);
    for (const Json& v : fx["vocabs"].arr) {
        GgufFile file;
        Tokenizer tok;
        const std::string path = std::string(vocab_dir) + "/" + v["file"].str;
        Status st = GgufFile::open(path, &file);
        if (!st.ok()) {
            std::printf("skip %s: %s\n", v["file"].str.c_str(), st.message.c_str());
            continue;
        }
        auto t0 = std::chrono::steady_clock::now();
        st = Tokenizer::load(file, &tok);
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0).count();
        CHECK(st.ok());
        CHECK_EQ(tok.add_bos(), v["add_bos"].b);
        CHECK_EQ(tok.bos_id(), static_cast<int32_t>(v["bos"].num));
        int matched = 0;
        int total = 0;
        for (const Json& c : v["cases"].arr) {
            const std::string text = from_hex(c["text_hex"].str);
            const Ids want = ids_of(c["ids_no_bos"]);
            const Ids got = tok.encode(text, false);
            ++total;
            if (got == want) {
                ++matched;
            } else {
                std::printf("mismatch (%s) on hex %s:\n  want %s\n  got  %s\n",
                            v["file"].str.c_str(), c["text_hex"].str.c_str(), show(want).c_str(),
                            show(got).c_str());
            }
        }
        std::printf("%s (load %.1f ms): %d of %d encodings match llama.cpp\n",
                    v["file"].str.c_str(), ms, matched, total);
        CHECK_EQ(matched, total);
    }
}
