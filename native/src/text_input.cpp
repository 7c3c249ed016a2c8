#include "hmllm/text_input.h"

namespace hmllm {
namespace {

// Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0 when it is not one.
size_t utf8_sequence(const unsigned char* s, size_t n, uint32_t* cp) {
    const unsigned char c = s[0];
    if (c < 0x80) return *cp = c, 1;
    size_t len;
    uint32_t min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80, *cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800, *cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000, *cp = c & 0x07;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; ++i) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        *cp = (*cp << 6) | (s[i] & 0x3F);
    }
    if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) return 0;
    return len;
}

bool dropped_control(uint32_t cp) {
    if (cp == '\n' || cp == '\t') return false;
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);  // C0, DEL, C1
}

}  // namespace

std::string clean_input_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    size_t i = 0;
    while (i < text.size()) {
        uint32_t cp = 0;
        const size_t len = utf8_sequence(s + i, text.size() - i, &cp);
        if (len == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD for one bad byte, then resynchronise
            ++i;
            continue;
        }
        if (!dropped_control(cp)) out.append(text.data() + i, len);
        i += len;
    }
    return out;
}

}  // namespace hmllm
