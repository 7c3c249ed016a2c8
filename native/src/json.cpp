#include "hmllm/json.h"

#include <cstdlib>
#include <cstring>

namespace hmllm {

namespace {

constexpr int kMaxDepth = 64;

struct Parser {
    std::string_view s;
    size_t i = 0;
    const char* error = nullptr;  // the first failure's reason; i is where it happened

    bool fail(const char* why) {
        if (!error) error = why;
        return false;
    }
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
    }
    bool literal(const char* word) {
        const size_t n = std::strlen(word);
        if (s.compare(i, n, word) != 0) return fail("unexpected character");
        i += n;
        return true;
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
    bool hex4(uint32_t* v) {
        if (i + 4 > s.size()) return fail("a truncated \\u escape");
        *v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = s[i++];
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) return fail("a bad \\u escape");
            *v = *v * 16 + uint32_t(d);
        }
        return true;
    }
    bool string(std::string* out) {
        ++i;  // the opening quote
        for (;;) {
            if (i >= s.size()) return fail("an unterminated string");
            const unsigned char c = static_cast<unsigned char>(s[i]);
            if (c == '"') {
                ++i;
                return true;
            }
            if (c < 0x20) return fail("a control character in a string");
            ++i;
            if (c != '\\') {
                *out += char(c);
                continue;
            }
            if (i >= s.size()) return fail("an unterminated string");
            const char e = s[i++];
            switch (e) {
                case '"': *out += '"'; break;
                case '\\': *out += '\\'; break;
                case '/': *out += '/'; break;
                case 'b': *out += '\b'; break;
                case 'f': *out += '\f'; break;
                case 'n': *out += '\n'; break;
                case 'r': *out += '\r'; break;
                case 't': *out += '\t'; break;
                case 'u': {
                    uint32_t cp;
                    if (!hex4(&cp)) return false;
                    if (cp >= 0xD800 && cp < 0xDC00 && s.compare(i, 2, "\\u") == 0) {
                        const size_t at = i;
                        i += 2;
                        uint32_t lo;
                        if (!hex4(&lo)) return false;
                        if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else i = at;  // not a pair: the high half alone, the next escape read on its own
                    }
                    utf8(cp >= 0xD800 && cp < 0xE000 ? 0xFFFD : cp, out);
                    break;
                }
                default: --i; return fail("a bad escape");
            }
        }
    }
    bool number(double* out) {
        const size_t start = i;
        if (i < s.size() && s[i] == '-') ++i;
        const auto digits = [&] {
            const size_t from = i;
            while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
            return i - from;
        };
        const size_t int_start = i;
        const size_t n = digits();
        if (n == 0 || (n > 1 && s[int_start] == '0')) return fail("a malformed number");
        if (i < s.size() && s[i] == '.') {
            ++i;
            if (digits() == 0) return fail("a malformed number");
        }
        if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
            ++i;
            if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
            if (digits() == 0) return fail("a malformed number");
        }
        *out = std::strtod(std::string(s.substr(start, i - start)).c_str(), nullptr);
        return true;
    }
    bool value(JsonValue* v, int depth) {
        if (depth > kMaxDepth) return fail("nesting deeper than 64 levels");
        ws();
        if (i >= s.size()) return fail("unexpected end of text");
        const char c = s[i];
        if (c == '{') {
            v->type = JsonValue::Type::Object;
            ++i;
            ws();
            if (i < s.size() && s[i] == '}') return ++i, true;
            for (;;) {
                ws();
                if (i >= s.size() || s[i] != '"') return fail("expected a string key");
                std::string key;
                if (!string(&key)) return false;
                ws();
                if (i >= s.size() || s[i] != ':') return fail("expected ':'");
                ++i;
                JsonValue member;
                if (!value(&member, depth + 1)) return false;
                v->object.emplace_back(std::move(key), std::move(member));
                ws();
                if (i < s.size() && s[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < s.size() && s[i] == '}') return ++i, true;
                return fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            v->type = JsonValue::Type::Array;
            ++i;
            ws();
            if (i < s.size() && s[i] == ']') return ++i, true;
            for (;;) {
                JsonValue element;
                if (!value(&element, depth + 1)) return false;
                v->array.push_back(std::move(element));
                ws();
                if (i < s.size() && s[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < s.size() && s[i] == ']') return ++i, true;
                return fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v->type = JsonValue::Type::String;
            return string(&v->string);
        }
        if (c == 't' || c == 'f') {
            v->type = JsonValue::Type::Bool;
            v->boolean = c == 't';
            return literal(c == 't' ? "true" : "false");
        }
        if (c == 'n') return literal("null");
        if (c == '-' || (c >= '0' && c <= '9')) {
            v->type = JsonValue::Type::Number;
            return number(&v->number);
        }
        return fail("unexpected character");
    }
};

}  // namespace

const JsonValue* JsonValue::get(std::string_view key) const {
    for (auto it = object.rbegin(); it != object.rend(); ++it)
        if (it->first == key) return &it->second;
    return nullptr;
}

const char* json_type_name(JsonValue::Type type) {
    switch (type) {
        case JsonValue::Type::Null: return "null";
        case JsonValue::Type::Bool: return "a boolean";
        case JsonValue::Type::Number: return "a number";
        case JsonValue::Type::String: return "a string";
        case JsonValue::Type::Array: return "an array";
        case JsonValue::Type::Object: return "an object";
    }
    return "?";
}

Status parse_json(std::string_view text, const std::string& what, JsonValue* out) {
    Parser p{text};
    JsonValue v;
    bool ok = p.value(&v, 0);
    if (ok) {
        p.ws();
        if (p.i != text.size()) ok = p.fail("text after the value");
    }
    if (!ok)
        return Status::error(ErrorCode::InvalidArgument,
                             what + " is not valid JSON (" + p.error + " at byte " + std::to_string(p.i) + ")");
    *out = std::move(v);
    return Status{};
}

}  // namespace hmllm
