// libFuzzer target: the chat format's JSON reader, format parser, message reader and renderer
// (hmllm/chat_format.h, hmllm/json.h) over arbitrary bytes: the text before the first NUL byte is
// the format, the rest the messages. Besides memory safety it checks what rendering promises: a
// prompt starts with the format's prefix and ends with its generation prompt, a refusal is one
// sentence, and rendering is deterministic.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_checks.h"
#include "hmllm/chat_format.h"
#include "hmllm/json.h"

namespace {

bool one_sentence(const hmllm::Status& st) {
    return !st.ok() && !st.message.empty() && st.message.find('\n') == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const size_t nul = in.find('\0');
    const std::string_view format_text = in.substr(0, nul);
    const std::string_view messages_text = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
    hmllm::JsonValue any;
    const hmllm::Status json_st = hmllm::parse_json(in, "input", &any);
    FUZZ_REQUIRE(json_st.ok() || one_sentence(json_st));
    hmllm::ChatFormat fmt;
    const hmllm::Status fmt_st = hmllm::ChatFormat::parse(format_text, &fmt);
    FUZZ_REQUIRE(fmt_st.ok() || one_sentence(fmt_st));
    std::vector<hmllm::ChatMessage> messages;
    const hmllm::Status msg_st = hmllm::parse_chat_messages(messages_text, "messages", &messages);
    FUZZ_REQUIRE(msg_st.ok() || one_sentence(msg_st));
    if (!fmt_st.ok() || !msg_st.ok()) return 0;
    std::string out, again;
    const hmllm::Status st = fmt.render(messages, true, &out);
    FUZZ_REQUIRE(st.ok() || one_sentence(st));
    if (!st.ok()) return 0;
    FUZZ_REQUIRE(out.compare(0, fmt.prefix.size(), fmt.prefix) == 0);
    FUZZ_REQUIRE(out.size() >= fmt.generation_prompt.size() &&
                 out.compare(out.size() - fmt.generation_prompt.size(), std::string::npos, fmt.generation_prompt) == 0);
    FUZZ_REQUIRE(fmt.render(messages, true, &again).ok() && again == out);
    for (const hmllm::ChatMessage& m : messages) {
        const std::string t = hmllm::trim_python_whitespace(m.content);
        FUZZ_REQUIRE(t.size() <= m.content.size() && hmllm::trim_python_whitespace(t) == t);
    }
    return 0;
}
