#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "hmllm/sha256.h"
#include "test_main.h"

using hmllm::Sha256;
using hmllm::sha256;
using hmllm::to_hex;

namespace {
std::string hex_of(const std::string& s) { return to_hex(sha256(s.data(), s.size())); }

std::string temp_file(const std::string& content) {
    char path[] = "/tmp/hmllm-sha256-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return "";
    FILE* f = fdopen(fd, "wb");
    fwrite(content.data(), 1, content.size(), f);
    fclose(f);
    return path;
}
}  // namespace

// FIPS 180-4 examples (NIST CSRC "Examples with Intermediate Values") and the NIST long message.
TEST_CASE(nist_empty_message) {
    CHECK_EQ(hex_of(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
}

TEST_CASE(nist_abc) {
    CHECK_EQ(hex_of("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

TEST_CASE(nist_448_bit_message) {
    CHECK_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
}

TEST_CASE(nist_one_million_a) {
    Sha256 h;
    const std::string thousand(1000, 'a');
    for (int i = 0; i < 1000; ++i) h.update(thousand.data(), thousand.size());
    CHECK_EQ(to_hex(h.finish()), std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

TEST_CASE(any_chunking_gives_the_one_shot_digest) {
    std::mt19937 gen(7);
    for (size_t len : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 1000u, 4097u}) {
        std::string data(len, '\0');
        for (auto& c : data) c = static_cast<char>(gen());
        const std::string expected = hex_of(data);
        Sha256 h;
        for (size_t pos = 0; pos < len;) {
            const size_t n = std::min<size_t>(len - pos, gen() % 70);
            h.update(data.data() + pos, n);
            pos += n;
        }
        CHECK_EQ(to_hex(h.finish()), expected);
    }
}

TEST_CASE(hex_digests_parse_in_either_case_and_nothing_else) {
    hmllm::Sha256Digest d{};
    CHECK(hmllm::parse_sha256_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", &d));
    CHECK_EQ(to_hex(d), hex_of("abc"));
    CHECK(!hmllm::parse_sha256_hex(hex_of("abc").substr(1), &d));
    CHECK(!hmllm::parse_sha256_hex(hex_of("abc") + "0", &d));
    CHECK(!hmllm::parse_sha256_hex(std::string(63, '0') + "g", &d));
    CHECK(!hmllm::parse_sha256_hex("", &d));
}

TEST_CASE(files_are_hashed_across_read_chunks) {
    std::string data((1 << 20) * 2 + 12345, '\0');  // spans three 1 MiB reads
    std::mt19937 gen(11);
    for (auto& c : data) c = static_cast<char>(gen());
    const std::string path = temp_file(data);
    CHECK(!path.empty());
    hmllm::Sha256Digest d{};
    const hmllm::Status st = hmllm::sha256_file(path, &d);
    unlink(path.c_str());
    CHECK(st.ok());
    CHECK_EQ(to_hex(d), hex_of(data));
}

TEST_CASE(unreadable_files_are_io_errors_naming_the_path) {
    hmllm::Sha256Digest d{};
    hmllm::Status st = hmllm::sha256_file("/nonexistent/model.gguf", &d);
    CHECK(st.code == hmllm::ErrorCode::IoError);
    CHECK(st.message.find("/nonexistent/model.gguf") != std::string::npos);
    st = hmllm::sha256_file("/tmp", &d);
    CHECK(st.code == hmllm::ErrorCode::IoError);
}
