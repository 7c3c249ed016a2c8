#include "hmllm/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hmllm {

namespace {

// Closes the descriptor on every return path; the mapping outlives it.
struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

size_t page_size() {
    long n = ::sysconf(_SC_PAGESIZE);
    return n > 0 ? static_cast<size_t>(n) : 4096;
}

}  // namespace

MappedFile::~MappedFile() { close(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(other.data_),
      size_(other.size_),
      mapped_(other.mapped_),
      dropped_(std::move(other.dropped_)) {
    other.data_ = nullptr;
    other.size_ = 0;
    other.mapped_ = false;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        close();
        path_ = std::move(other.path_);
        data_ = other.data_;
        size_ = other.size_;
        mapped_ = other.mapped_;
        dropped_ = std::move(other.dropped_);
        other.data_ = nullptr;
        other.size_ = 0;
        other.mapped_ = false;
    }
    return *this;
}

Status MappedFile::open(const std::string& path, MappedFile* out) {
    // O_NONBLOCK keeps a FIFO at this path from hanging the loader until a writer appears;
    // it has no effect on regular files.
    int fd;
    do {
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int err = errno;
        return Status::error(ErrorCode::IoError, "cannot open " + path + ": " + std::strerror(err));
    }
    FdGuard guard{fd};

    struct stat st;
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        return Status::error(ErrorCode::IoError, "cannot stat " + path + ": " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        return Status::error(ErrorCode::IoError,
                             "cannot open " + path + ": " + std::strerror(EISDIR));
    }
    if (!S_ISREG(st.st_mode)) {
        return Status::error(ErrorCode::IoError,
                             "cannot open " + path + ": it is not a regular file");
    }
    if (st.st_size == 0) {
        return Status::error(ErrorCode::InvalidModel, path + " is empty");
    }
    if (static_cast<uint64_t>(st.st_size) > SIZE_MAX) {
        return Status::error(ErrorCode::OutOfMemory,
                             path + " is too large to map into this process's address space");
    }
    const size_t size = static_cast<size_t>(st.st_size);

    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
        int err = errno;
        ErrorCode code = err == ENOMEM ? ErrorCode::OutOfMemory : ErrorCode::IoError;
        return Status::error(code, "cannot map " + path + ": " + std::strerror(err));
    }

    out->close();
    out->path_ = path;
    out->data_ = static_cast<const uint8_t*>(addr);
    out->size_ = size;
    out->mapped_ = true;
    return Status{};
}

MappedFile MappedFile::borrow(const uint8_t* data, size_t size, std::string name) {
    MappedFile m;
    m.path_ = std::move(name);
    m.data_ = data;
    m.size_ = size;
    return m;
}

void MappedFile::advise_sequential() {
    if (data_ == nullptr || !mapped_) return;
    (void)::madvise(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);
}

size_t MappedFile::prefault() {
    if (data_ == nullptr) return 0;
    const size_t page = page_size();
    // Volatile so the compiler cannot prove the loads are dead and drop them.
    const volatile uint8_t* bytes = data_;
    uint8_t sink = 0;
    size_t pages = 0;
    size_t next_drop = 0;  // dropped_ is sorted and merged
    for (size_t off = 0; off < size_; off += page) {
        while (next_drop < dropped_.size() && dropped_[next_drop].second <= off) ++next_drop;
        if (next_drop < dropped_.size() && dropped_[next_drop].first <= off) continue;
        sink = static_cast<uint8_t>(sink ^ bytes[off]);
        ++pages;
    }
    (void)sink;
    return pages;
}

void MappedFile::drop_pages(size_t offset, size_t n) const {
    if (data_ == nullptr || !mapped_ || offset >= size_) return;
    const size_t page = page_size();
    const size_t begin = (offset + page - 1) / page * page, end = std::min(offset + n, size_) / page * page;
    if (end <= begin) return;
    (void)::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
    // Kept sorted and merged, so prefault walks it once.
    dropped_.emplace_back(begin, end);
    std::sort(dropped_.begin(), dropped_.end());
    size_t k = 0;
    for (size_t i = 1; i < dropped_.size(); ++i) {
        if (dropped_[i].first <= dropped_[k].second) dropped_[k].second = std::max(dropped_[k].second, dropped_[i].second);
        else dropped_[++k] = dropped_[i];
    }
    dropped_.resize(k + 1);
}

void MappedFile::close() {
    if (data_ == nullptr) return;
    if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
    dropped_.clear();
    mapped_ = false;
}

}  // namespace hmllm
