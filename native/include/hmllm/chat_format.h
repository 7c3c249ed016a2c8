// A model's chat format as hmbuild compiles it at build time ("hmbuild-chat" JSON, version 1,
// docs/chat.md): text pieces per role, where the system message goes, the generation prompt and the
// stop strings. Jinja never runs on the phone; a prompt is assembled here by concatenation, with
// exactly the algorithm of hmbuild's ChatFormat.render (hmbuild/model/chat_template.py), which is
// the reference the tests compare against.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hmllm/status.h"
#include "hmllm/tokenizer.h"

namespace hmllm {

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

struct ChatTurnRule {
    std::string prefix, suffix;
    bool trim = false;  // strip the content's leading and trailing whitespace (Python str.strip())
};

struct ChatFormat {
    enum class SystemMode { Turn, Fold, None };

    std::string source;  // "gguf", "builtin:<name>", "file:<name>" (information only)
    std::string prefix;  // written once, before everything (usually BOS's text)
    SystemMode system_mode = SystemMode::Turn;
    ChatTurnRule system;
    bool has_system_default = false;
    std::string system_default;  // used when the conversation has no system message
    ChatTurnRule user, assistant;
    bool alternate = false;  // user, assistant, user, ... after an optional system message
    std::string generation_prompt;
    std::vector<std::string> stop;

    // Reads the compiled JSON; another format or version, a missing field or a field of the wrong
    // type is InvalidArgument in one sentence. Unknown fields are ignored (hmbuild's --json output
    // carries "ok").
    static Status parse(std::string_view json, ChatFormat* out);

    // The messages this format can write, or one sentence (InvalidArgument) naming the first
    // message it refuses: an empty conversation, an unknown role, a misplaced or unsupported system
    // message, roles out of the order the template requires.
    Status validate(const std::vector<ChatMessage>& messages) const;

    // validate(), then the prompt text (with the generation prompt when add_generation_prompt).
    Status render(const std::vector<ChatMessage>& messages, bool add_generation_prompt, std::string* out) const;
};

// Reads a conversation: {"messages": [{"role": ..., "content": ...}, ...]} or the bare array.
// A message that is not an object with string role and content is refused naming its number; the
// roles themselves are checked by ChatFormat::validate.
Status parse_chat_messages(std::string_view json, const std::string& what, std::vector<ChatMessage>* out);

// The text without the leading and trailing characters Python's str.isspace() accepts (what a
// template's `| trim` removes); invalid UTF-8 is left alone.
std::string trim_python_whitespace(std::string_view text);

// How a format's stop strings are recognised with one vocabulary. A stop string that is one control
// token (<end_of_turn>, <|im_end|>, <|eot_id|>, <eos>) must be matched by id: the stream decoder
// writes no text for control tokens, so it never shows up in the output. Any other stop string is
// matched as text on the decoded output.
struct ChatStops {
    std::vector<int32_t> ids;
    std::vector<std::string> id_texts;  // the stop string of each id
    std::vector<std::string> texts;
};
ChatStops resolve_chat_stops(const std::vector<std::string>& stop, const Tokenizer& tokenizer);

// The rendered prompt's token ids: special tokens written in the text (the prefix's <bos>, turn
// markers) become their ids and no BOS is added, since the format writes BOS itself where the
// template does (llama.cpp's tokenize(text, add_special=false, parse_special=true)).
std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, std::string_view prompt);

}  // namespace hmllm
