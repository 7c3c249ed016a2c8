// tool_support.h: small helpers shared by the command-line tools in native/tools (hmllm_run,
// hmllm_eval, hmllm_bench, hmllm_calibrate): JSON string escaping, the common error exit
// ("TOOL: message" on stderr, {"ok": false, "error": ...} on stdout with --json), the walk over
// the command line and strict integer option parsing. Header-only; not part of the library's
// public API.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

namespace hmllm::tools {

// The body of a JSON string literal: quotes, backslashes, \n, \r and \t escaped, other control
// characters as \u00XX; bytes from 0x80 up (UTF-8) pass through unchanged.
inline std::string json_escape(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out;
}

// Reports an error the tools' way and returns code (the exit status): "TOOL: msg" on stderr and,
// with json, {"ok": false, "error": "msg"} on stdout.
inline int fail(const char* tool, bool json, int code, const std::string& msg) {
    std::fprintf(stderr, "%s: %s\n", tool, msg.c_str());
    if (json) std::printf("{\"ok\": false, \"error\": \"%s\"}\n", json_escape(msg).c_str());
    return code;
}

// A whole decimal integer in [lo, hi] into *out; false (and *out untouched) on an empty string,
// trailing characters, overflow or a value out of range.
inline bool parse_long(const char* s, long lo, long hi, long* out) {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi) return false;
    *out = v;
    return true;
}

// True when argv holds `flag` anywhere: the tools look for --json before anything else, so even an
// error in an option that comes before it is reported as JSON.
inline bool has_flag(int argc, char** argv, const char* flag) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0) return true;
    return false;
}

// What a tool says of one option it was handed.
enum class Opt { ok, bad_value, unknown };
inline Opt check(bool ok) { return ok ? Opt::ok : Opt::bad_value; }

// Walks argv: each of `flags` goes to on_option(name, nullptr), every other "--name VALUE" pair to
// on_option(name, value). Returns "" or the one-line error for exit status 2 (an option without its
// value, one on_option does not know, or a value it refused).
template <class OnOption>
std::string parse_options(int argc, char** argv, std::initializer_list<const char*> flags, OnOption&& on_option) {
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        const bool is_flag = std::any_of(flags.begin(), flags.end(), [&](const char* f) { return k == f; });
        if (!is_flag && i + 1 >= argc) return "option " + k + " needs a value (or is unknown)";
        const char* v = is_flag ? nullptr : argv[++i];
        switch (on_option(k, v)) {
            case Opt::ok: break;
            case Opt::unknown: return "unknown option " + k;
            case Opt::bad_value: return "bad value '" + std::string(v ? v : "") + "' for " + k;
        }
    }
    return {};
}

}  // namespace hmllm::tools
