#include "hmllm/chat_format.h"

#include <cmath>
#include <cstdio>

#include "hmllm/json.h"

namespace hmllm {

namespace {

using Type = JsonValue::Type;

Status bad(std::string message) { return Status::error(ErrorCode::InvalidArgument, std::move(message)); }

// One field of the format: present and of the expected type, or the sentence saying which is wrong.
Status field(const JsonValue& obj, const std::string& where, const char* key, Type type, const JsonValue** out,
             bool null_ok = false) {
    const JsonValue* v = obj.get(key);
    const std::string name = "the chat format's " + where + key;
    if (!v) return bad(name + " is missing; recompile the format with hmbuild chat-template");
    if (!v->is(type) && !(null_ok && v->is(Type::Null)))
        return bad(name + " must be " + json_type_name(type) + (null_ok ? " or null" : "") + ", not " +
                   json_type_name(v->type));
    *out = v;
    return Status{};
}

Status turn_rule(const JsonValue& root, const char* key, ChatTurnRule* rule) {
    const JsonValue *obj, *prefix, *suffix, *trim;
    Status st = field(root, "", key, Type::Object, &obj);
    if (!st.ok()) return st;
    const std::string where = std::string(key) + ".";
    if (!(st = field(*obj, where, "prefix", Type::String, &prefix)).ok() ||
        !(st = field(*obj, where, "suffix", Type::String, &suffix)).ok() ||
        !(st = field(*obj, where, "trim", Type::Bool, &trim)).ok())
        return st;
    rule->prefix = prefix->string;
    rule->suffix = suffix->string;
    rule->trim = trim->boolean;
    return Status{};
}

// One code point of UTF-8 at s[i..], its length in *n; -1 when the bytes there are not valid UTF-8.
int32_t decode_utf8(std::string_view s, size_t i, size_t* n) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    if (c < 0x80) return *n = 1, c;
    size_t len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return -1;
    int32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; ++k) {
        if ((b(k) & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (b(k) & 0x3F);
    }
    const int32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return -1;
    *n = len;
    return cp;
}

// Python's str.isspace(): hmbuild/model/chat_template.py WHITESPACE.
bool is_python_space(int32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

// A value from the input inside a one-line message: control characters escaped as Python's repr
// escapes them, cut after 32 bytes at a character boundary.
std::string shown(const std::string& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(v[i]);
        if (i >= 32 && (c & 0xC0) != 0x80) return out + "...";
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += char(c);
    }
    return out;
}

}  // namespace

std::string trim_python_whitespace(std::string_view text) {
    size_t begin = 0, end = text.size(), n = 0;
    while (begin < end) {
        const int32_t cp = decode_utf8(text.substr(0, end), begin, &n);
        if (cp < 0 || !is_python_space(cp)) break;
        begin += n;
    }
    while (end > begin) {
        // The last code point starts at most 3 continuation bytes before the end.
        size_t start = end - 1;
        while (start > begin && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        const int32_t cp = decode_utf8(text.substr(0, end), start, &n);
        if (cp < 0 || start + n != end || !is_python_space(cp)) break;
        end = start;
    }
    return std::string(text.substr(begin, end - begin));
}

Status ChatFormat::parse(std::string_view json, ChatFormat* out) {
    JsonValue root;
    Status st = parse_json(json, "the chat format", &root);
    if (!st.ok()) return st;
    const JsonValue* format = root.is(Type::Object) ? root.get("format") : nullptr;
    if (!format || !format->is(Type::String) || format->string != "hmbuild-chat")
        return bad("the chat format is not an hmbuild chat format (no \"format\": \"hmbuild-chat\"); "
                   "compile one with hmbuild chat-template MODEL.gguf --json");
    const JsonValue* version = root.get("version");
    if (!version || !version->is(Type::Number) || version->number != 1.0) {
        std::string v = !version ? "missing" : version->is(Type::Number) && std::abs(version->number) < 1e9
                                                   ? std::to_string(static_cast<long long>(version->number))
                                                   : json_type_name(version->type);
        return bad("the chat format's version is " + v + ", not 1; recompile it with this hmbuild "
                   "(hmbuild chat-template MODEL.gguf --json)");
    }
    ChatFormat f;
    const JsonValue *prefix, *system, *mode, *def, *alternate, *gen, *stop;
    if (!(st = field(root, "", "prefix", Type::String, &prefix)).ok() ||
        !(st = field(root, "", "system", Type::Object, &system)).ok() ||
        !(st = field(*system, "system.", "mode", Type::String, &mode)).ok() ||
        !(st = field(*system, "system.", "default", Type::String, &def, true)).ok() ||
        !(st = turn_rule(root, "system", &f.system)).ok() || !(st = turn_rule(root, "user", &f.user)).ok() ||
        !(st = turn_rule(root, "assistant", &f.assistant)).ok() ||
        !(st = field(root, "", "alternate", Type::Bool, &alternate)).ok() ||
        !(st = field(root, "", "generation_prompt", Type::String, &gen)).ok() ||
        !(st = field(root, "", "stop", Type::Array, &stop)).ok())
        return st;
    if (mode->string == "turn") f.system_mode = SystemMode::Turn;
    else if (mode->string == "fold") f.system_mode = SystemMode::Fold;
    else if (mode->string == "none") f.system_mode = SystemMode::None;
    else return bad("the chat format's system.mode '" + shown(mode->string) + "' is not turn, fold or none");
    for (const JsonValue& s : stop->array) {
        if (!s.is(Type::String) || s.string.empty()) return bad("the chat format's stop must hold non-empty strings");
        f.stop.push_back(s.string);
    }
    if (const JsonValue* source = root.get("source"); source && source->is(Type::String)) f.source = source->string;
    f.prefix = prefix->string;
    f.has_system_default = def->is(Type::String);
    f.system_default = def->string;
    f.alternate = alternate->boolean;
    f.generation_prompt = gen->string;
    *out = std::move(f);
    return Status{};
}

Status ChatFormat::validate(const std::vector<ChatMessage>& messages) const {
    if (messages.empty()) return bad("a conversation must be a non-empty list of messages");
    std::string expected = "user";
    for (size_t k = 0; k < messages.size(); ++k) {
        const std::string n = "message " + std::to_string(k + 1);
        const std::string& role = messages[k].role;
        if (role != "system" && role != "user" && role != "assistant")
            return bad(n + " has the unknown role '" + shown(role) + "'; use system, user or assistant");
        if (role == "system") {
            if (system_mode == SystemMode::None)
                return bad(n + " is a system message, which this model's template does not support; put the "
                               "instructions in the first user message");
            if (k != 0) return bad(n + " is a system message; a system message may only come first");
            continue;
        }
        if (alternate) {
            if (role != expected)
                return bad(n + " is a" + (role == "user" ? " user" : "n assistant") + " message where this template needs a" +
                           (expected == "user" ? " user" : "n assistant") +
                           " one; roles must alternate user/assistant after an optional system message");
            expected = role == "user" ? "assistant" : "user";
        }
    }
    return Status{};
}

Status ChatFormat::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt, std::string* out) const {
    Status st = validate(messages);
    if (!st.ok()) return st;
    size_t first = 0;
    bool has_system = false;
    std::string system_text;
    if (messages[0].role == "system") {
        system_text = messages[0].content;
        has_system = true;
        first = 1;
    } else if (has_system_default) {
        system_text = system_default;
        has_system = true;
    }
    if (has_system && system.trim) system_text = trim_python_whitespace(system_text);
    std::string s = prefix;
    if (has_system && system_mode == SystemMode::Turn) s += system.prefix + system_text + system.suffix;
    for (size_t k = first; k < messages.size(); ++k) {
        const ChatMessage& m = messages[k];
        const ChatTurnRule& rule = m.role == "user" ? user : assistant;
        s += rule.prefix;
        if (k == first && has_system && system_mode == SystemMode::Fold) s += system.prefix + system_text + system.suffix;
        s += rule.trim ? trim_python_whitespace(m.content) : m.content;
        s += rule.suffix;
    }
    if (add_generation_prompt) s += generation_prompt;
    *out = std::move(s);
    return Status{};
}

Status parse_chat_messages(std::string_view json, const std::string& what, std::vector<ChatMessage>* out) {
    JsonValue root;
    Status st = parse_json(json, what, &root);
    if (!st.ok()) return st;
    const JsonValue* list = &root;
    if (root.is(Type::Object)) {
        list = root.get("messages");
        if (!list) return bad(what + " has no \"messages\" list");
    }
    if (!list->is(Type::Array) || list->array.empty())
        return bad("a conversation must be a non-empty list of messages");
    std::vector<ChatMessage> messages;
    for (size_t k = 0; k < list->array.size(); ++k) {
        const JsonValue& m = list->array[k];
        const std::string n = "message " + std::to_string(k + 1);
        const JsonValue* role = m.is(Type::Object) ? m.get("role") : nullptr;
        const JsonValue* content = m.is(Type::Object) ? m.get("content") : nullptr;
        if (!role || !content) return bad(n + " must be an object with a role and a content");
        if (!role->is(Type::String)) return bad(n + " has a role that is " + json_type_name(role->type) + "; use system, user or assistant");
        if (!content->is(Type::String))
            return bad(n + " has content that is " + std::string(json_type_name(content->type)) + "; content must be text");
        messages.push_back({role->string, content->string});
    }
    *out = std::move(messages);
    return Status{};
}

ChatStops resolve_chat_stops(const std::vector<std::string>& stop, const Tokenizer& tokenizer) {
    ChatStops r;
    for (const std::string& s : stop) {
        const std::vector<int32_t> ids = tokenizer.encode(s, false);
        if (ids.size() == 1 && tokenizer.is_control(ids[0])) {
            r.ids.push_back(ids[0]);
            r.id_texts.push_back(s);
        } else {
            r.texts.push_back(s);
        }
    }
    return r;
}

std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, std::string_view prompt) {
    return tokenizer.encode(prompt, false);
}

}  // namespace hmllm
