// Session lifecycle as the NAPI layer uses it: open maps and validates the model, generate
// serves requests, release frees at once and is idempotent. With HMLLM_TEST_MODEL pointing at
// the real Gemma 3 270M file (hmbuild test sets it), the real model is run too.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "hmllm/session.h"
#include "test_main.h"

namespace {

// A GGUF v3 file that parses but is no model: one string key, one F32 tensor.
std::string write_header_only_gguf() {
    std::vector<uint8_t> b;
    auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); };
    auto u64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i))); };
    auto str = [&](const std::string& s) { u64(s.size()); b.insert(b.end(), s.begin(), s.end()); };
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    u32(3);
    u64(1);
    u64(1);
    str("general.architecture");
    u32(8);
    str("llama");
    str("w");
    u32(1);
    u64(32);
    u32(0);
    u64(0);
    while (b.size() % 32) b.push_back(0);
    b.resize(b.size() + 32 * 4, 0);
    char path[] = "/tmp/hmllm-session-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size())) std::abort();
    close(fd);
    return path;
}

const char* test_model() {
    const char* p = std::getenv("HMLLM_TEST_MODEL");
    return p && *p ? p : nullptr;
}

}  // namespace

TEST_CASE(missing_model_is_an_io_error_naming_the_file) {
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open("/nonexistent/model.gguf", hmllm::SessionOptions{}, &s);
    CHECK(!st.ok());
    CHECK(st.code == hmllm::ErrorCode::IoError);
    CHECK(st.message.find("model.gguf") != std::string::npos);
    CHECK(s == nullptr);
}

TEST_CASE(a_gguf_that_is_no_model_is_an_invalid_model_naming_what_is_missing) {
    std::string path = write_header_only_gguf();
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open(path, hmllm::SessionOptions{}, &s);
    CHECK(!st.ok());
    CHECK(st.code == hmllm::ErrorCode::InvalidModel);
    CHECK(st.message.find("llama.block_count") != std::string::npos);
    unlink(path.c_str());
}

TEST_CASE(real_model_continues_the_moon_landing_prompt_and_releases) {
    if (!test_model()) {
        std::printf("skip: HMLLM_TEST_MODEL is not set\n");
        return;
    }
    hmllm::SessionOptions so;
    so.context_size = 256;
    so.threads = 2;
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open(test_model(), so, &s);
    CHECK(st.ok());
    hmllm::InferRequest req;
    req.max_tokens = 4;
    std::string streamed;
    req.on_piece = [&](const std::string& piece) {
        streamed += piece;
        return true;
    };
    hmllm::InferResult r;
    CHECK(s->generate("In 1969, the first human to walk on the moon was", req, &r).ok());
    CHECK(r.text.find("Neil Armstrong") != std::string::npos);
    CHECK_EQ(streamed, r.text);  // streamed pieces concatenate to the result
    CHECK_EQ(r.generation.tokens.size(), size_t(4));
    CHECK(r.generation.ttft_ms > 0);
    // The same prompt again reuses the cached prefix and gives the same greedy tokens.
    hmllm::InferResult again;
    CHECK(s->generate("In 1969, the first human to walk on the moon was", req, &again).ok());
    CHECK(again.generation.reused_tokens == static_cast<int>(again.prompt_tokens.size()) - 1);
    CHECK(again.generation.tokens == r.generation.tokens);
    s->release();
    CHECK(s->released());
    CHECK(s->model().mapping().data() == nullptr);  // unmapped now, not at destruction
    s->release();                                     // twice is fine
    CHECK(!s->generate("again", req, &r).ok());
}

TEST_CASE(real_model_over_the_memory_budget_is_refused_with_the_breakdown) {
    if (!test_model()) {
        std::printf("skip: HMLLM_TEST_MODEL is not set\n");
        return;
    }
    hmllm::SessionOptions so;
    so.memory_budget_bytes = 100u << 20;  // 100 MB: the weights alone are larger
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open(test_model(), so, &s);
    CHECK(!st.ok());
    CHECK(st.code == hmllm::ErrorCode::OutOfMemory);
    CHECK(st.message.find("weights") != std::string::npos && st.message.find("KV cache") != std::string::npos);
}
