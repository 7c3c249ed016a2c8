#include <random>
#include <string>

#include "hmllm/text_input.h"
#include "test_main.h"

using hmllm::clean_input_text;

TEST_CASE(valid_text_passes_through_unchanged) {
    const std::string s = "Meeting at 7\tam\n明天早上七点开会。会議は7時。회의 🚀👩‍💻🇨🇳 café naïve";
    CHECK_EQ(clean_input_text(s), s);
}

TEST_CASE(control_characters_other_than_newline_and_tab_are_dropped) {
    CHECK_EQ(clean_input_text(std::string("a\x01" "b\x1b[31mc\r\nd\x7f" "e") + "\xc2\x85" "f"), std::string("ab[31mc\nd" "ef"));
}

TEST_CASE(invalid_utf8_becomes_replacement_characters) {
    CHECK_EQ(clean_input_text("a\xff" "b"), std::string("a\xef\xbf\xbd" "b"));
    CHECK_EQ(clean_input_text("\xe4\xbd"), std::string("\xef\xbf\xbd\xef\xbf\xbd"));        // truncated CJK
    CHECK_EQ(clean_input_text("\xc0\xaf"), std::string("\xef\xbf\xbd\xef\xbf\xbd"));        // overlong '/'
    CHECK_EQ(clean_input_text("\xed\xa0\x80"), std::string("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));  // surrogate
}

TEST_CASE(random_bytes_always_give_valid_utf8) {
    std::mt19937 gen(3);
    for (int round = 0; round < 2000; ++round) {
        std::string s(gen() % 64, '\0');
        for (auto& c : s) c = static_cast<char>(gen());
        const std::string once = clean_input_text(s);
        CHECK_EQ(clean_input_text(once), once);  // clean output is a fixed point: valid, no controls
    }
}
