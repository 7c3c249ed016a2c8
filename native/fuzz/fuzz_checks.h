// Properties the fuzz targets assert beyond "no sanitizer report". A violated property calls
// fuzz_fail(), which prints what broke and aborts, so libFuzzer saves the input as a crash.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>

inline void fuzz_fail(const char* what) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
}

#define FUZZ_REQUIRE(cond)                       \
    do {                                         \
        if (!(cond)) fuzz_fail(#cond);           \
    } while (0)

// Strict UTF-8 (RFC 3629): shortest forms only, no surrogates, nothing above U+10FFFF.
// Calls visit(code_point) for each character; returns false at the first defect.
template <typename Visit>
bool for_each_code_point(std::string_view s, Visit visit) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char lead = static_cast<unsigned char>(s[i]);
        size_t extra = 0;
        unsigned long cp = lead;
        if (lead >= 0x80) {
            if ((lead & 0xE0) == 0xC0) extra = 1, cp = lead & 0x1F;
            else if ((lead & 0xF0) == 0xE0) extra = 2, cp = lead & 0x0F;
            else if ((lead & 0xF8) == 0xF0) extra = 3, cp = lead & 0x07;
            else return false;
        }
        if (s.size() - i <= extra) return false;
        for (size_t k = 1; k <= extra; ++k) {
            const unsigned char c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        static const unsigned long kMin[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        visit(cp);
        i += extra + 1;
    }
    return true;
}

inline bool is_valid_utf8(std::string_view s) {
    return for_each_code_point(s, [](unsigned long) {});
}
