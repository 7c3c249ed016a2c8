#include "hmllm/mapped_file.h"

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
      mapped_(other.mapped_) {
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
    for (size_t off = 0; off < size_; off += page) {
        sink = static_cast<uint8_t>(sink ^ bytes[off]);
        ++pages;
    }
    (void)sink;
    return pages;
}

void MappedFile::close() {
    if (data_ == nullptr) return;
    if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
}

}  // namespace hmllm
