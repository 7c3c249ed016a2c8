// A whole file mapped read-only. Model weights are used straight out of this mapping, so the
// kernel can drop and re-read clean pages under memory pressure instead of killing the app.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hmllm/status.h"

namespace hmllm {

class MappedFile {
public:
    MappedFile() = default;
    ~MappedFile();

    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    // Maps `path` with PROT_READ / MAP_PRIVATE. On failure *out is left unchanged.
    //   missing or unreadable file, directory, non-regular file -> IoError
    //   empty file                                              -> InvalidModel
    //   the address space cannot hold the mapping               -> OutOfMemory
    static Status open(const std::string& path, MappedFile* out);

    // Views bytes the caller already holds (a buffer handed over by an app, a fuzzer's input)
    // without copying; `name` stands for the file in messages. The bytes must stay alive and
    // unchanged while this object is open; close() forgets them instead of unmapping.
    static MappedFile borrow(const uint8_t* data, size_t size, std::string name);

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }
    bool is_open() const { return data_ != nullptr; }

    // Hints the kernel to read ahead aggressively; failure is harmless and ignored.
    void advise_sequential();

    // Reads one byte per page so the whole file is resident before the first token, moving
    // page-fault stalls from inference time to load time. Returns the number of pages touched.
    // Pages given up with drop_pages stay out.
    size_t prefault();
    // Gives the whole pages inside [offset, offset + n) back to the kernel (MADV_DONTNEED): bytes
    // the process has copied elsewhere and will not read here again. They stay readable (a read
    // faults them in from the file again); prefault skips them. Const: the bytes do not change.
    void drop_pages(size_t offset, size_t n) const;

    // Unmaps now. Idempotent; every pointer obtained from data() becomes invalid.
    void close();

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;  // false for borrowed bytes: nothing to unmap or advise
    mutable std::vector<std::pair<size_t, size_t>> dropped_;  // page-aligned [begin, end) ranges
};

}  // namespace hmllm
