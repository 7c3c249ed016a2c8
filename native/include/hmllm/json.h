// A strict JSON reader for the little JSON the runtime is handed: a compiled chat format and a
// conversation's messages. Written here rather than taken from a library because the runtime has no
// third-party dependencies (it is vendored into every HAR and built offline for four targets) and
// needs only this: RFC 8259 values, refused with one sentence naming the byte where they go wrong.
// Input is untrusted (an app passes it on): nesting is bounded and nothing here throws or aborts.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hmllm/status.h"

namespace hmllm {

struct JsonValue {
    enum class Type { Null, Bool, Number, String, Array, Object };
    Type type = Type::Null;
    bool boolean = false;
    double number = 0;
    std::string string;  // UTF-8; \u escapes decoded, a lone surrogate as U+FFFD
    std::vector<JsonValue> array;
    std::vector<std::pair<std::string, JsonValue>> object;  // in file order

    // The member named key (the last one when repeated, as Python's json does), or nullptr.
    const JsonValue* get(std::string_view key) const;
    bool is(Type t) const { return type == t; }
};

// "null", "a boolean", "a number", "a string", "an array", "an object": for error messages.
const char* json_type_name(JsonValue::Type type);

// Parses one JSON value filling the whole text (whitespace around it allowed). Errors are
// InvalidArgument: "<what> is not valid JSON (<reason> at byte N)".
Status parse_json(std::string_view text, const std::string& what, JsonValue* out);

}  // namespace hmllm
