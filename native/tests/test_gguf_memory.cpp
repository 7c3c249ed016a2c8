// GgufFile::open_memory: a GGUF image already in memory (an app's buffer, a fuzzer's input) is
// parsed in place with the same checks as a mapped file, and the caller's bytes are never freed
// or unmapped by the GgufFile that views them.
#include "test_main.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hmllm/gguf_reader.h"
#include "hmllm/mapped_file.h"

namespace {

using namespace hmllm;

void put(std::vector<uint8_t>* b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b->push_back(uint8_t(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>* b, const std::string& s) {
    put(b, s.size(), 8);
    b->insert(b->end(), s.begin(), s.end());
}

// GGUF v3: one string key, one F32 tensor "w" of 4 floats (1, 2, 3, 4) at the default alignment.
std::vector<uint8_t> tiny_gguf() {
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
    put(&b, 3, 4);  // version
    put(&b, 1, 8);  // tensors
    put(&b, 1, 8);  // metadata
    put_str(&b, "general.architecture");
    put(&b, 8, 4);  // STRING
    put_str(&b, "llama");
    put_str(&b, "w");
    put(&b, 1, 4);  // n_dims
    put(&b, 4, 8);
    put(&b, 0, 4);  // F32
    put(&b, 0, 8);  // offset
    while (b.size() % 32 != 0) b.push_back(0);
    for (float f : {1.0f, 2.0f, 3.0f, 4.0f}) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        put(&b, bits, 4);
    }
    return b;
}

}  // namespace

TEST_CASE(open_memory_views_the_callers_bytes_in_place) {
    const std::vector<uint8_t> image = tiny_gguf();
    const std::vector<uint8_t> copy = image;
    {
        GgufFile f;
        Status st = GgufFile::open_memory(image.data(), image.size(), "app-buffer", &f);
        CHECK(st.ok());
        CHECK_EQ(f.architecture(), std::string("llama"));
        CHECK_EQ(f.tensors().size(), size_t(1));
        const GgufTensorInfo* w = f.find_tensor("w");
        CHECK(w != nullptr);
        CHECK(w->data == image.data() + image.size() - 16);  // no copy
        float third;
        std::memcpy(&third, w->data + 8, 4);
        CHECK_EQ(third, 3.0f);
        CHECK_EQ(f.mapping().path(), std::string("app-buffer"));
        f.mapping().close();  // forgets the bytes; must not unmap or free them
    }
    CHECK(image == copy);  // still readable and unchanged after the GgufFile is gone
}

TEST_CASE(open_memory_rejects_what_open_rejects_naming_the_buffer) {
    std::vector<uint8_t> image = tiny_gguf();
    GgufFile f;
    Status empty = GgufFile::open_memory(image.data(), 0, "app-buffer", &f);
    CHECK(empty.code == ErrorCode::InvalidModel);
    CHECK(empty.message.find("app-buffer") != std::string::npos);
    CHECK(GgufFile::open_memory(nullptr, 10, "app-buffer", &f).code == ErrorCode::InvalidModel);

    Status cut = GgufFile::open_memory(image.data(), image.size() - 1, "app-buffer", &f);
    CHECK(cut.code == ErrorCode::InvalidModel);  // the tensor's data runs past the end
    CHECK(cut.message.find("app-buffer") != std::string::npos);

    image[0] = 'X';
    Status magic = GgufFile::open_memory(image.data(), image.size(), "app-buffer", &f);
    CHECK(magic.code == ErrorCode::InvalidModel);
    CHECK(f.tensors().empty());  // *out left unchanged on failure
}
