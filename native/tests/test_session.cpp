// Session lifecycle as the NAPI layer uses it: open maps the model, infer serves requests,
// release unmaps at once and is idempotent.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "hmllm/session.h"
#include "test_main.h"

namespace {

// A minimal GGUF v3 file: one string key, one 32-element F32 tensor.
std::string write_tiny_model() {
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

}  // namespace

TEST_CASE(open_infer_release) {
    std::string path = write_tiny_model();
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open(path, hmllm::SessionOptions{}, &s);
    CHECK(st.ok());
    CHECK_EQ(s->model().architecture(), std::string("llama"));
    CHECK(s->model().find_tensor("w") != nullptr);
    std::string out;
    CHECK(s->infer("你好, world", &out).ok());
    CHECK_EQ(out, std::string("你好, world"));
    s->release();
    CHECK(s->released());
    CHECK(s->model().mapping().data() == nullptr);  // unmapped now, not at destruction
    s->release();  // twice is fine
    st = s->infer("again", &out);
    CHECK(!st.ok());
    CHECK(st.code == hmllm::ErrorCode::InvalidArgument);
    unlink(path.c_str());
}

TEST_CASE(missing_model_is_an_io_error_naming_the_file) {
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open("/nonexistent/model.gguf", hmllm::SessionOptions{}, &s);
    CHECK(!st.ok());
    CHECK(st.code == hmllm::ErrorCode::IoError);
    CHECK(st.message.find("model.gguf") != std::string::npos);
    CHECK(s == nullptr);
}
