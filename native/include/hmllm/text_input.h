// Cleaning of text that arrives from apps before it is tokenized: invalid UTF-8 becomes U+FFFD,
// control characters other than newline and tab are dropped, everything else (CJK, emoji,
// combining marks) passes through unchanged.
#pragma once

#include <string>
#include <string_view>

namespace hmllm {

std::string clean_input_text(std::string_view text);

}  // namespace hmllm
