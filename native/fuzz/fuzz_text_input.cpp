// libFuzzer target: the input cleaner (hmllm/text_input.h) over arbitrary bytes. Besides memory
// safety it checks what the cleaner promises: strict UTF-8 out, no control characters other than
// newline and tab, clean text passes through unchanged, and cleaning twice changes nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "hmllm/text_input.h"

namespace {

bool is_dropped_control(unsigned long cp) {
    if (cp == '\n' || cp == '\t') return false;
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

bool is_clean(std::string_view s) {
    bool clean = true;
    const bool valid = for_each_code_point(s, [&](unsigned long cp) {
        if (is_dropped_control(cp)) clean = false;
    });
    return valid && clean;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const std::string out = hmllm::clean_input_text(in);
    FUZZ_REQUIRE(is_clean(out));
    // Each input byte gives at most one U+FFFD (3 bytes).
    FUZZ_REQUIRE(out.size() <= 3 * in.size());
    if (is_clean(in)) FUZZ_REQUIRE(out == in);
    FUZZ_REQUIRE(hmllm::clean_input_text(out) == out);
    return 0;
}
