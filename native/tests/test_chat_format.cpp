// The chat format on the C++ side: the compiled JSON read and refused as docs/chat.md says, prompts
// rendered character for character as hmbuild's Python reference renders them (the fixture
// tests/data/chat_render.json, recorded by scripts/record_chat_render.py for the built-in formats
// and two published templates), the JSON reader's refusals, and, with HMLLM_TEST_MODEL set, a chat
// on the real Gemma 3 270M that ends at <end_of_turn> and reuses the KV cache of earlier turns.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hmllm/chat_format.h"
#include "hmllm/json.h"
#include "hmllm/session.h"
#include "test_main.h"

namespace {

using hmllm::ChatFormat;
using hmllm::ChatMessage;
using hmllm::JsonValue;
using hmllm::Status;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const char* test_model() {
    const char* p = std::getenv("HMLLM_TEST_MODEL");
    return p && *p ? p : nullptr;
}

// Python's sentence ("Message 2 has ...") as the runtime writes it ("message 2 has ...").
std::string runtime_sentence(std::string s) {
    if (!s.empty() && s.back() == '.') s.pop_back();
    if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
    return s;
}

bool one_sentence(const Status& st) {
    return !st.ok() && !st.message.empty() && st.message.find('\n') == std::string::npos && st.message.size() < 300;
}

const char* kGemma =
    R"({"format": "hmbuild-chat", "version": 1, "source": "builtin:gemma", "prefix": "<bos>",
        "system": {"prefix": "", "suffix": "\n\n", "trim": false, "mode": "fold", "default": null},
        "user": {"prefix": "<start_of_turn>user\n", "suffix": "<end_of_turn>\n", "trim": true},
        "assistant": {"prefix": "<start_of_turn>model\n", "suffix": "<end_of_turn>\n", "trim": true},
        "alternate": true, "generation_prompt": "<start_of_turn>model\n", "stop": ["<eos>", "<end_of_turn>"],
        "date_string": null})";

// The real-model cases' session: two threads, a 512-token context, the gemma format.
hmllm::SessionOptions gemma_chat_options() {
    hmllm::SessionOptions so;
    so.context_size = 512;
    so.threads = 2;
    so.chat_format = kGemma;
    return so;
}

std::string with(std::string json, const std::string& from, const std::string& to) {
    const size_t at = json.find(from);
    if (at == std::string::npos) std::abort();
    return json.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE(renders_every_fixture_conversation_exactly_as_the_python_reference) {
    const std::string text = read_file(std::string(HMLLM_TEST_DATA_DIR) + "/chat_render.json");
    JsonValue root;
    CHECK(hmllm::parse_json(text, "chat_render.json", &root).ok());
    const JsonValue* formats = root.get("formats");
    CHECK(formats && formats->object.size() >= 7);
    int rendered = 0, refused = 0;
    for (const auto& [name, entry] : formats->object) {
        ChatFormat fmt;
        Status st = ChatFormat::parse(entry.get("format_json")->string, &fmt);
        if (!st.ok()) std::printf("%s: %s\n", name.c_str(), st.message.c_str());
        CHECK(st.ok());
        for (const JsonValue& c : entry.get("cases")->array) {
            const std::string what = name + " / " + c.get("name")->string;
            std::vector<ChatMessage> messages;
            std::string out;
            st = hmllm::parse_chat_messages(c.get("messages_json")->string, "the messages", &messages);
            if (st.ok()) st = fmt.render(messages, c.get("add_generation_prompt")->boolean, &out);
            if (const JsonValue* want = c.get("text")) {
                if (!st.ok() || out != want->string) std::printf("differs: %s (%s)\n", what.c_str(), st.message.c_str());
                CHECK(st.ok());
                CHECK_EQ(out, want->string);
                ++rendered;
            } else {
                const std::string want_error = runtime_sentence(c.get("error")->string);
                if (st.message != want_error) std::printf("%s:\n  got  %s\n  want %s\n", what.c_str(), st.message.c_str(), want_error.c_str());
                CHECK(!st.ok() && st.code == hmllm::ErrorCode::InvalidArgument);
                CHECK_EQ(st.message, want_error);
                ++refused;
            }
        }
    }
    std::printf("%d conversations rendered equal, %d refused with the same sentence\n", rendered, refused);
    CHECK(rendered >= 100 && refused >= 40);
}

TEST_CASE(a_format_of_another_version_or_shape_is_refused_in_one_sentence) {
    ChatFormat fmt;
    CHECK(ChatFormat::parse(kGemma, &fmt).ok());
    CHECK(fmt.system_mode == ChatFormat::SystemMode::Fold && fmt.alternate && fmt.stop.size() == 2);
    struct Case {
        std::string json, mentions;
    } cases[] = {
        {with(kGemma, "\"version\": 1", "\"version\": 2"), "version is 2, not 1"},
        {with(kGemma, "\"version\": 1", "\"version\": \"1\""), "version is a string"},
        {with(kGemma, "\"hmbuild-chat\"", "\"other\""), "not an hmbuild chat format"},
        {with(kGemma, "\"mode\": \"fold\"", "\"mode\": \"sideways\""), "system.mode 'sideways'"},
        {with(kGemma, "\"trim\": true", "\"trim\": \"yes\""), "user.trim must be a boolean, not a string"},
        {with(kGemma, "\"generation_prompt\"", "\"generation\""), "generation_prompt is missing"},
        {with(kGemma, "[\"<eos>\", \"<end_of_turn>\"]", "[\"<eos>\", 3]"), "stop must hold non-empty strings"},
        {std::string(kGemma).substr(0, 100), "not valid JSON (an unterminated string at byte 100)"},
        {std::string(kGemma) + " {}", "not valid JSON (text after the value"},
        {"", "not valid JSON (unexpected end of text at byte 0)"},
        {"[1, 2]", "not an hmbuild chat format"},
    };
    for (const Case& c : cases) {
        Status st = ChatFormat::parse(c.json, &fmt);
        if (st.message.find(c.mentions) == std::string::npos) std::printf("got: %s\n", st.message.c_str());
        CHECK(one_sentence(st) && st.code == hmllm::ErrorCode::InvalidArgument);
        CHECK(st.message.find(c.mentions) != std::string::npos);
    }
}

TEST_CASE(messages_that_are_not_role_and_text_content_are_refused_naming_the_message) {
    std::vector<ChatMessage> m;
    struct Case {
        const char* json;
        const char* mentions;
    } cases[] = {
        {R"({"messages": [{"role": "user", "content": 5}]})", "message 1 has content that is a number; content must be text"},
        {R"({"messages": [{"role": "user", "content": "a"}, {"role": "user"}]})", "message 2 must be an object with a role and a content"},
        {R"({"messages": [{"role": null, "content": "a"}]})", "message 1 has a role that is null"},
        {R"({"messages": ["hi"]})", "message 1 must be an object"},
        {R"({"messages": []})", "a conversation must be a non-empty list of messages"},
        {R"({"messages": {"role": "user"}})", "a conversation must be a non-empty list"},
        {R"({"turns": []})", "has no \"messages\" list"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\x01\"}]}", "not valid JSON (a control character in a string at byte 44)"},
    };
    for (const Case& c : cases) {
        Status st = hmllm::parse_chat_messages(c.json, "chat.json", &m);
        if (st.message.find(c.mentions) == std::string::npos) std::printf("got: %s\n", st.message.c_str());
        CHECK(one_sentence(st));
        CHECK(st.message.find(c.mentions) != std::string::npos);
    }
    // The bare array works too, and escapes decode (a lone surrogate becomes U+FFFD).
    CHECK(hmllm::parse_chat_messages(R"([{"role": "user", "content": "\u4f60\ud83d\ude00\ud800x\n"}])", "x", &m).ok());
    CHECK_EQ(m.size(), size_t(1));
    CHECK_EQ(m[0].content, std::string("\xe4\xbd\xa0\xf0\x9f\x98\x80\xef\xbf\xbdx\n"));
}

TEST_CASE(a_refusal_quoting_the_input_stays_one_line) {
    // Found by fuzz_chat_format: a role with a newline broke the one-sentence message.
    ChatFormat fmt;
    CHECK(ChatFormat::parse(kGemma, &fmt).ok());
    std::string out;
    Status st = fmt.render({{"a\nb\x01" + std::string(40, 'r'), "x"}}, true, &out);
    CHECK(one_sentence(st));
    CHECK(st.message.find("'a\\nb\\x01rrr") != std::string::npos && st.message.find("...'") != std::string::npos);
    st = ChatFormat::parse(with(kGemma, "\"mode\": \"fold\"", "\"mode\": \"a\\nb\""), &fmt);
    CHECK(one_sentence(st) && st.message.find("'a\\nb'") != std::string::npos);
}

TEST_CASE(the_json_reader_refuses_what_is_not_json_without_crashing) {
    JsonValue v;
    const char* bad[] = {"{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "tru", "\"\\x\"", "\"\\u12\"", "[1 2]", "{\"a\":1,}", "nul"};
    for (const char* text : bad) CHECK(one_sentence(hmllm::parse_json(text, "x", &v)));
    CHECK(one_sentence(hmllm::parse_json(std::string(1000, '['), "x", &v)));  // nesting is bounded
    CHECK(hmllm::parse_json(std::string(60, '[') + std::string(60, ']'), "x", &v).ok());
    CHECK(hmllm::parse_json(" {\"a\": [true, false, null, -1.5e3, \"\"], \"a\": 2} ", "x", &v).ok());
    CHECK(v.get("a")->number == 2.0);  // the last of a repeated key, as Python's json
}

TEST_CASE(trim_removes_exactly_python_whitespace_and_leaves_invalid_utf8_alone) {
    CHECK_EQ(hmllm::trim_python_whitespace("\xe3\x80\x80 a b \xc2\x85\xe2\x80\xa8"), std::string("a b"));
    CHECK_EQ(hmllm::trim_python_whitespace("\xe2\x80\x8b" "a"), std::string("\xe2\x80\x8b" "a"));  // U+200B stays
    CHECK_EQ(hmllm::trim_python_whitespace(" \xff "), std::string("\xff"));
    CHECK_EQ(hmllm::trim_python_whitespace(" \xe3\x80 "), std::string("\xe3\x80"));  // a truncated character
    CHECK_EQ(hmllm::trim_python_whitespace(" \t\n"), std::string());
}

TEST_CASE(real_model_chat_prompt_has_one_bos_special_tokens_and_id_stops) {
    if (!test_model()) {
        std::printf("skip: HMLLM_TEST_MODEL is not set\n");
        return;
    }
    std::unique_ptr<hmllm::Session> s;
    CHECK(hmllm::Session::open(test_model(), gemma_chat_options(), &s).ok());
    const hmllm::Tokenizer& tok = s->tokenizer();
    std::string text;
    std::vector<int32_t> ids;
    CHECK(s->chat_prompt({{"system", "Be brief."}, {"user", "你好 🌞"}}, &text, &ids).ok());
    CHECK_EQ(text, std::string("<bos><start_of_turn>user\nBe brief.\n\n你好 🌞<end_of_turn>\n<start_of_turn>model\n"));
    // The format writes <bos> itself: exactly one, first; the turn markers are single tokens.
    CHECK_EQ(ids[0], tok.bos_id());
    CHECK_EQ(std::count(ids.begin(), ids.end(), tok.bos_id()), 1L);
    const int32_t start = tok.token_id("<start_of_turn>"), end = tok.token_id("<end_of_turn>");
    CHECK(start >= 0 && end >= 0);
    CHECK_EQ(std::count(ids.begin(), ids.end(), start), 2L);
    CHECK_EQ(std::count(ids.begin(), ids.end(), end), 1L);
    CHECK(ids == tok.encode(text, false));
    const hmllm::ChatStops stops = hmllm::resolve_chat_stops({"<eos>", "<end_of_turn>", "Human:"}, tok);
    CHECK(stops.ids == (std::vector<int32_t>{tok.eos_id(), end}));
    CHECK(stops.texts == std::vector<std::string>{"Human:"});
}

// The test model is Gemma 3 270M *base*: where an instruct model ends its turn, it writes look-alike
// ordinary tokens instead (its <end_of_turn> embedding is untrained: the token ranks about 262000th
// of 262144 there), so a greedy chat runs to max_tokens. What a user sees is checked: no turn marker
// in the text, the stream equal to the result, the reason given, and the next turn's prefill
// starting after everything the first one already computed.
TEST_CASE(real_model_chat_reports_its_stop_and_the_next_turn_reuses_the_cache) {
    if (!test_model()) {
        std::printf("skip: HMLLM_TEST_MODEL is not set\n");
        return;
    }
    std::unique_ptr<hmllm::Session> s;
    CHECK(hmllm::Session::open(test_model(), gemma_chat_options(), &s).ok());
    std::vector<ChatMessage> conv = {{"user", "Say hi."}, {"assistant", "hi"}, {"user", "Say bye."}, {"assistant", "bye"},
                                     {"user", "Say yes."}};
    hmllm::InferRequest req;
    req.max_tokens = 24;
    std::string streamed;
    req.on_piece = [&](const std::string& p) {
        streamed += p;
        return true;
    };
    hmllm::InferResult r;
    Status st = s->chat(conv, req, &r);
    CHECK(st.ok());
    std::printf("answer %s, stop %s, %zu tokens\n", r.text.c_str(), r.stop.c_str(), r.generation.tokens.size());
    const bool at_end_of_turn = r.stop == "<end_of_turn>" || r.stop == "<eos>";
    CHECK(at_end_of_turn || (r.stop == "max_tokens" && r.generation.tokens.size() == 24));
    CHECK(r.text.find("<end_of_turn>") == std::string::npos && r.text.find("<start_of_turn>") == std::string::npos);
    CHECK_EQ(streamed, r.text);
    // The next turn: the conversation so far plus the answer and a new question. Only the new
    // turns are prefilled; everything up to the answer comes from the KV cache.
    const size_t first_prompt = r.prompt_tokens.size();
    conv.push_back({"assistant", r.text});
    conv.push_back({"user", "Say no."});
    hmllm::InferResult r2;
    CHECK(s->chat(conv, req, &r2).ok());
    std::printf("second turn: %zu prompt tokens, %d reused (first prompt %zu)\n", r2.prompt_tokens.size(),
                r2.generation.reused_tokens, first_prompt);
    CHECK(r2.generation.reused_tokens >= static_cast<int>(first_prompt));
    CHECK(r2.generation.reused_tokens < static_cast<int>(r2.prompt_tokens.size()));
    // max_tokens ends it otherwise, and says so.
    req.max_tokens = 1;
    CHECK(s->chat({{"user", "Count from one to twenty."}}, req, &r).ok());
    CHECK_EQ(r.stop, std::string("max_tokens"));
}

TEST_CASE(real_model_chat_refuses_bad_conversations_and_sessions_without_a_format) {
    if (!test_model()) {
        std::printf("skip: HMLLM_TEST_MODEL is not set\n");
        return;
    }
    hmllm::SessionOptions so;
    so.context_size = 64;
    so.threads = 2;
    std::unique_ptr<hmllm::Session> plain;
    CHECK(hmllm::Session::open(test_model(), so, &plain).ok());
    hmllm::InferRequest req;
    req.max_tokens = 8;
    hmllm::InferResult r;
    Status st = plain->chat({{"user", "hi"}}, req, &r);
    CHECK(one_sentence(st) && st.message.find("chatFormat") != std::string::npos);
    plain->release();
    so.chat_format = with(kGemma, "\"version\": 1", "\"version\": 7");
    std::unique_ptr<hmllm::Session> s;
    st = hmllm::Session::open(test_model(), so, &s);
    CHECK(one_sentence(st) && st.code == hmllm::ErrorCode::InvalidArgument && s == nullptr);
    so.chat_format = kGemma;
    CHECK(hmllm::Session::open(test_model(), so, &s).ok());
    st = s->chat({{"user", "a"}, {"user", "b"}}, req, &r);
    CHECK(one_sentence(st) && st.message.find("message 2 is a user message") != std::string::npos);
    st = s->chat({{"user", [] { std::string w; for (int i = 0; i < 80; ++i) w += "word "; return w; }()}}, req, &r);
    CHECK(one_sentence(st) && st.message.find("does not fit the context of 64 tokens") != std::string::npos);
}
