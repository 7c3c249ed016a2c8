// SHA-256 (FIPS 180-4), for verifying a downloaded model file against the digest it shipped with
// before it is switched in. Hand-written because the device side of the NAPI layer has no crypto
// library to link against (OpenSSL is not in the OpenHarmony NDK sysroot, and the runtime has no
// third-party dependencies); hashing 250 MB in ArkTS would be far slower.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hmllm/status.h"

namespace hmllm {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental hashing: update() any number of times with any chunk sizes, then finish() once.
class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t size);
    Sha256Digest finish();

private:
    void compress(const uint8_t block[64]);

    uint32_t state_[8];
    uint8_t buffer_[64];
    size_t buffered_ = 0;
    uint64_t total_bytes_ = 0;
};

Sha256Digest sha256(const void* data, size_t size);

// Lower-case hex, 64 characters.
std::string to_hex(const Sha256Digest& digest);

// Parses 64 hex digits (either case); false for anything else.
bool parse_sha256_hex(const std::string& hex, Sha256Digest* out);

// Hashes a whole file, reading it sequentially in 1 MiB chunks (constant memory, no mapping
// left behind). A missing, unreadable or non-regular file is IoError naming the path.
Status sha256_file(const std::string& path, Sha256Digest* out);

}  // namespace hmllm
