// Reading everything an opened GGUF file's metadata offers, for the native tests and the fuzz
// targets (native/fuzz/): every accessor on every key, and every byte the views they return
// point at, so that a sanitizer sees any view that escapes the file. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hmllm/gguf_reader.h"

namespace hmtest {

// Walks the metadata of `f`. The accessors must agree with each other (a listed key is found,
// an array's elements number its count, ...); each such fact is passed to require(holds, what),
// which reports it the caller's way (a test failure, a fuzzer crash). Returns a sum of what was
// read, so that the reads are not optimised away.
template <typename Require>
uint64_t read_all_metadata(const hmllm::GgufFile& f, Require require) {
    uint64_t sum = 0;
    auto add_chars = [&sum](std::string_view s) {
        for (char c : s) sum += static_cast<uint8_t>(c);
    };
    for (size_t i = 0; i < f.metadata_count(); ++i) {
        const std::string_view key = f.metadata_key(i);
        require(f.has_key(key), "a listed key is found");
        uint32_t type = 0;
        require(f.get_value_type(key, &type), "a listed key has a value type");
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        int64_t i64;
        float f32;
        bool b;
        std::string s;
        std::string_view sv;
        sum += f.get_u32(key, &u32) + f.get_i32(key, &i32) + f.get_u64(key, &u64) +
               f.get_i64(key, &i64) + f.get_f32(key, &f32) + f.get_bool(key, &b) +
               f.get_string(key, &s) + f.get_string_view(key, &sv);
        add_chars(s);
        add_chars(sv);
        uint32_t elem_type = 0;
        uint64_t count = 0;
        if (!f.get_array_info(key, &elem_type, &count)) continue;
        hmllm::GgufStringArray strings;
        if (f.get_string_array(key, &strings)) {
            require(strings.size() == count, "a string array holds its count of strings");
            for (size_t k = 0; k < strings.size(); ++k) add_chars(strings[k]);
            std::string_view elem;
            if (count > 0) {
                require(f.get_string_array_element(key, count - 1, &elem),
                        "a string array's last element is found");
            }
            require(!f.get_string_array_element(key, count, &elem),
                    "no string array element past the count");
        }
        std::vector<float> floats;
        if (f.get_f32_array(key, &floats)) {
            require(floats.size() == count, "an f32 array holds its count of values");
            for (float v : floats) sum += v == v;
        }
        std::vector<int32_t> ints;
        if (f.get_i32_array(key, &ints)) {
            require(ints.size() == count, "an i32 array holds its count of values");
            for (int32_t v : ints) sum += static_cast<uint32_t>(v);
        }
    }
    require(f.metadata_key(f.metadata_count()).empty(), "no metadata key past the count");
    return sum;
}

}  // namespace hmtest
