#include "hmllm/gguf_reader.h"

#include <cstring>
#include <limits>
#include <utility>

namespace hmllm {

namespace {

// Nested arrays are legal GGUF but unused by real models; the limit keeps a crafted file from
// driving the recursive validator arbitrarily deep.
constexpr uint32_t kMaxArrayDepth = 8;
// The spec caps keys at 65535 bytes; ggml caps tensor names at 63. Our tensor limit is looser
// than ggml's so an unusual converter still loads, but stays small enough to print.
constexpr uint64_t kMaxKeyLength = 65535;
constexpr uint64_t kMaxTensorNameLength = 1024;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;
// Raw type values below this belong to ggml's numbering: an unknown one there is most likely a
// newer llama.cpp quantization (UnsupportedModel), anything else is garbage (InvalidModel).
constexpr uint32_t kGgmlTypeRange = 64;
// Reserving is only an optimisation; past this, vectors grow as entries are actually parsed,
// so a header that lies about its counts cannot make us allocate ahead of the real data.
constexpr uint64_t kMaxReserve = 1u << 16;

constexpr size_t kHeaderSize = 4 + 4 + 8 + 8;  // magic, version, tensor_count, kv_count
// Smallest possible encodings, used to reject counts that cannot fit in the remaining bytes.
constexpr uint64_t kMinKvSize = 8 + 1 + 4 + 1;              // key length, 1-byte key, type, u8
constexpr uint64_t kMinTensorInfoSize = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, ne[0], type, offset
constexpr uint64_t kStringHeaderSize = 8;
constexpr uint64_t kArrayHeaderSize = 4 + 8;

// GGUF is little-endian on disk; assembling bytes keeps this correct on any host and makes
// unaligned fields safe.
uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t load_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t load_u64(const uint8_t* p) {
    return static_cast<uint64_t>(load_u32(p)) | static_cast<uint64_t>(load_u32(p + 4)) << 32;
}

float load_f32(const uint8_t* p) {
    uint32_t bits = load_u32(p);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

double load_f64(const uint8_t* p) {
    uint64_t bits = load_u64(p);
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

// Bytes one scalar occupies on disk; 0 for STRING, ARRAY and unknown types.
uint64_t fixed_value_size(uint32_t type) {
    switch (static_cast<GgufValueType>(type)) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::BOOL: return 1;
        case GgufValueType::UINT16:
        case GgufValueType::INT16: return 2;
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::FLOAT32: return 4;
        case GgufValueType::UINT64:
        case GgufValueType::INT64:
        case GgufValueType::FLOAT64: return 8;
        case GgufValueType::STRING:
        case GgufValueType::ARRAY: return 0;
    }
    return 0;
}

bool is_known_value_type(uint32_t type) {
    return type <= static_cast<uint32_t>(GgufValueType::FLOAT64);
}

bool is_integer_type(uint32_t type) {
    switch (static_cast<GgufValueType>(type)) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::UINT16:
        case GgufValueType::INT16:
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::UINT64:
        case GgufValueType::INT64: return true;
        default: return false;
    }
}

// Smallest on-disk size of one value of `type`, for checking element counts up front.
uint64_t min_value_size(uint32_t type) {
    if (type == static_cast<uint32_t>(GgufValueType::STRING)) return kStringHeaderSize;
    if (type == static_cast<uint32_t>(GgufValueType::ARRAY)) return kArrayHeaderSize;
    return fixed_value_size(type);
}

// Integers are carried as sign + magnitude so that every source type (u64 included) can be
// range-checked against every target type without overflow.
bool decode_integer(uint32_t type, const uint8_t* p, bool* negative, uint64_t* magnitude) {
    int64_t s = 0;
    switch (static_cast<GgufValueType>(type)) {
        case GgufValueType::UINT8: *negative = false; *magnitude = p[0]; return true;
        case GgufValueType::UINT16: *negative = false; *magnitude = load_u16(p); return true;
        case GgufValueType::UINT32: *negative = false; *magnitude = load_u32(p); return true;
        case GgufValueType::UINT64: *negative = false; *magnitude = load_u64(p); return true;
        case GgufValueType::INT8: s = static_cast<int8_t>(p[0]); break;
        case GgufValueType::INT16: s = static_cast<int16_t>(load_u16(p)); break;
        case GgufValueType::INT32: s = static_cast<int32_t>(load_u32(p)); break;
        case GgufValueType::INT64: s = static_cast<int64_t>(load_u64(p)); break;
        default: return false;
    }
    *negative = s < 0;
    // Unsigned negation is exact even for INT64_MIN.
    *magnitude = s < 0 ? 0 - static_cast<uint64_t>(s) : static_cast<uint64_t>(s);
    return true;
}

bool integer_in_range(bool negative, uint64_t magnitude, int64_t min, uint64_t max) {
    if (!negative) return magnitude <= max;
    if (min >= 0) return false;
    uint64_t max_negative_magnitude = 0 - static_cast<uint64_t>(min);
    return magnitude <= max_negative_magnitude;
}

int64_t integer_value(bool negative, uint64_t magnitude) {
    if (!negative) return static_cast<int64_t>(magnitude);
    // -(m - 1) - 1 avoids overflowing int64 when magnitude is 2^63.
    return -static_cast<int64_t>(magnitude - 1) - 1;
}

// Names from the file end up in error messages; keep them short and printable.
std::string printable(std::string_view s) {
    constexpr size_t kMax = 80;
    std::string out;
    for (size_t i = 0; i < s.size() && i < kMax; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    if (s.size() > kMax) out += "...";
    return out;
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::string_view GgufStringArray::operator[](size_t i) const {
    const uint8_t* p = base_ + offsets_[i];
    return std::string_view(reinterpret_cast<const char*>(p + kStringHeaderSize),
                            static_cast<size_t>(load_u64(p)));
}

// Walks the file once, front to back. Each read is preceded by a check against the bytes left
// in the mapping; nothing is allocated on the strength of a count until that count has been
// shown to fit in those bytes.
class GgufParser {
public:
    GgufParser(const std::string& path, GgufFile* file)
        : path_(path), file_(file), data_(file->map_.data()), size_(file->map_.size()) {}

    Status parse() {
        Status st = parse_header();
        if (!st.ok()) return st;
        st = parse_metadata();
        if (!st.ok()) return st;
        st = parse_alignment();
        if (!st.ok()) return st;
        st = parse_tensor_infos();
        if (!st.ok()) return st;
        return locate_tensor_data();
    }

private:
    size_t remaining() const { return size_ - pos_; }

    bool read_u32(uint32_t* v) {
        if (remaining() < 4) return false;
        *v = load_u32(data_ + pos_);
        pos_ += 4;
        return true;
    }

    bool read_u64(uint64_t* v) {
        if (remaining() < 8) return false;
        *v = load_u64(data_ + pos_);
        pos_ += 8;
        return true;
    }

    bool skip(uint64_t n) {
        if (n > remaining()) return false;
        pos_ += static_cast<size_t>(n);
        return true;
    }

    Status invalid(const std::string& problem) const {
        return Status::error(ErrorCode::InvalidModel,
                             path_ + " is not a valid GGUF file: " + problem);
    }

    Status unsupported(const std::string& problem) const {
        return Status::error(ErrorCode::UnsupportedModel, path_ + " cannot be loaded: " + problem);
    }

    Status truncated() const { return invalid("the file ends inside " + where_); }

    // GGUF strings are a u64 length followed by that many bytes, no terminator. The length has
    // already been read; the result is a view into the mapping.
    Status read_string_body(uint64_t len, std::string_view* out, const char* what) {
        if (len > remaining()) {
            return invalid(std::string(what) + " in " + where_ + " claims " + std::to_string(len) +
                           " bytes but only " + std::to_string(remaining()) + " remain");
        }
        *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_),
                                static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return Status{};
    }

    Status parse_header() {
        where_ = "the header";
        static const uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
        const size_t magic_bytes = size_ < 4 ? size_ : 4;
        if (std::memcmp(data_, kMagic, magic_bytes) != 0) {
            return Status::error(ErrorCode::InvalidModel, path_ + " is not a GGUF file (bad magic)");
        }
        if (size_ < 8) return truncated();
        pos_ = 4;
        uint32_t version;
        read_u32(&version);
        if (version == 1) {
            return unsupported("GGUF version 1 is not supported (re-convert the model with a "
                               "current llama.cpp)");
        }
        if (version != 2 && version != 3) {
            const uint32_t swapped = (version >> 24) | ((version >> 8) & 0xff00u) |
                                     ((version << 8) & 0xff0000u) | (version << 24);
            if (swapped >= 1 && swapped <= 3) {
                return unsupported("it is a big-endian GGUF file (version " +
                                   std::to_string(swapped) +
                                   "), and only little-endian files are supported");
            }
            return invalid("unknown GGUF version " + std::to_string(version));
        }
        file_->version_ = version;
        if (size_ < kHeaderSize) return truncated();
        read_u64(&tensor_count_);
        read_u64(&kv_count_);
        if (kv_count_ > remaining() / kMinKvSize) {
            return invalid("the header claims " + std::to_string(kv_count_) +
                           " metadata entries, more than the remaining " +
                           std::to_string(remaining()) + " bytes can hold");
        }
        if (tensor_count_ > remaining() / kMinTensorInfoSize) {
            return invalid("the header claims " + std::to_string(tensor_count_) +
                           " tensors, more than the remaining " + std::to_string(remaining()) +
                           " bytes can hold");
        }
        return Status{};
    }

    Status parse_metadata() {
        file_->kvs_.reserve(static_cast<size_t>(kv_count_ < kMaxReserve ? kv_count_ : kMaxReserve));
        for (uint64_t i = 0; i < kv_count_; ++i) {
            where_ = "metadata entry " + std::to_string(i);
            GgufFile::KeyValue kv;
            uint64_t key_len;
            if (!read_u64(&key_len)) return truncated();
            if (key_len == 0) return invalid(where_ + " has an empty key");
            if (key_len > kMaxKeyLength) {
                return invalid(where_ + " has a key of " + std::to_string(key_len) +
                               " bytes (the limit is " + std::to_string(kMaxKeyLength) + ")");
            }
            Status st = read_string_body(key_len, &kv.key, "the key");
            if (!st.ok()) return st;
            where_ = "metadata entry " + std::to_string(i) + " ('" + printable(kv.key) + "')";
            if (file_->kv_index_.count(kv.key) != 0) {
                return invalid("metadata key '" + printable(kv.key) + "' appears more than once");
            }
            if (!read_u32(&kv.type)) return truncated();
            if (!is_known_value_type(kv.type)) {
                return invalid(where_ + " has unknown value type " + std::to_string(kv.type));
            }
            kv.offset = pos_;
            if (kv.type == static_cast<uint32_t>(GgufValueType::ARRAY)) {
                if (!read_u32(&kv.elem_type) || !read_u64(&kv.count)) return truncated();
                kv.offset = pos_;
                const bool strings = kv.elem_type == static_cast<uint32_t>(GgufValueType::STRING);
                st = skip_array_body(kv.elem_type, kv.count, 1,
                                     strings ? &kv.string_offsets : nullptr);
            } else {
                st = skip_value(kv.type, 0);
            }
            if (!st.ok()) return st;
            file_->kv_index_.emplace(kv.key, file_->kvs_.size());
            file_->kvs_.push_back(std::move(kv));
        }
        return Status{};
    }

    // Validates one value of `type` at the cursor and steps over it.
    Status skip_value(uint32_t type, uint32_t depth) {
        if (type == static_cast<uint32_t>(GgufValueType::STRING)) {
            uint64_t len;
            if (!read_u64(&len)) return truncated();
            std::string_view ignored;
            return read_string_body(len, &ignored, "a string");
        }
        if (type == static_cast<uint32_t>(GgufValueType::ARRAY)) {
            uint32_t elem_type;
            uint64_t count;
            if (!read_u32(&elem_type) || !read_u64(&count)) return truncated();
            return skip_array_body(elem_type, count, depth + 1, nullptr);
        }
        if (!skip(fixed_value_size(type))) return truncated();
        return Status{};
    }

    // Steps over `count` elements of `elem_type`; for string arrays optionally records where
    // each element starts so later lookups need no scan.
    Status skip_array_body(uint32_t elem_type, uint64_t count, uint32_t depth,
                           std::vector<uint64_t>* string_offsets) {
        if (depth > kMaxArrayDepth) {
            return invalid(where_ + " nests arrays more than " + std::to_string(kMaxArrayDepth) +
                           " levels deep");
        }
        if (!is_known_value_type(elem_type)) {
            return invalid(where_ + " is an array of unknown value type " +
                           std::to_string(elem_type));
        }
        const uint64_t min_size = min_value_size(elem_type);
        if (count > remaining() / min_size) {
            return invalid(where_ + " claims " + std::to_string(count) +
                           " array elements, more than the remaining " +
                           std::to_string(remaining()) + " bytes can hold");
        }
        const uint64_t fixed = fixed_value_size(elem_type);
        if (fixed != 0) {
            skip(count * fixed);  // cannot fail or overflow: count <= remaining / fixed
            return Status{};
        }
        if (string_offsets != nullptr) {
            string_offsets->reserve(static_cast<size_t>(count < kMaxReserve ? count : kMaxReserve));
        }
        for (uint64_t i = 0; i < count; ++i) {
            if (string_offsets != nullptr) string_offsets->push_back(pos_);
            Status st = skip_value(elem_type, depth);
            if (!st.ok()) return st;
        }
        return Status{};
    }

    Status parse_alignment() {
        file_->alignment_ = kDefaultAlignment;
        if (!file_->has_key("general.alignment")) return Status{};
        uint32_t alignment;
        if (!file_->get_u32("general.alignment", &alignment)) {
            return invalid("general.alignment must be an unsigned 32-bit integer");
        }
        if (!is_power_of_two(alignment)) {
            return invalid("general.alignment is " + std::to_string(alignment) +
                           ", which is not a power of two");
        }
        file_->alignment_ = alignment;
        return Status{};
    }

    Status parse_tensor_infos() {
        // Checked again here because the metadata has consumed part of the bytes the header
        // check allowed for.
        if (tensor_count_ > remaining() / kMinTensorInfoSize) {
            where_ = "the tensor table";
            return invalid("the header claims " + std::to_string(tensor_count_) +
                           " tensors, more than the remaining " + std::to_string(remaining()) +
                           " bytes can hold");
        }
        auto& tensors = file_->tensors_;
        tensors.reserve(static_cast<size_t>(tensor_count_ < kMaxReserve ? tensor_count_
                                                                        : kMaxReserve));
        for (uint64_t i = 0; i < tensor_count_; ++i) {
            where_ = "tensor info " + std::to_string(i);
            Status st = parse_tensor_info(i);
            if (!st.ok()) return st;
        }
        return Status{};
    }

    Status parse_tensor_info(uint64_t index) {
        std::string_view name;
        uint64_t name_len;
        if (!read_u64(&name_len)) return truncated();
        if (name_len == 0) return invalid(where_ + " has an empty name");
        if (name_len > kMaxTensorNameLength) {
            return invalid(where_ + " has a name of " + std::to_string(name_len) +
                           " bytes (the limit is " + std::to_string(kMaxTensorNameLength) + ")");
        }
        Status st = read_string_body(name_len, &name, "the name");
        if (!st.ok()) return st;
        const std::string shown = "tensor '" + printable(name) + "'";
        where_ = "tensor info " + std::to_string(index) + " ('" + printable(name) + "')";
        if (file_->tensor_index_.count(name) != 0) {
            return invalid(shown + " appears more than once");
        }

        GgufTensorInfo t;
        t.name.assign(name.data(), name.size());
        if (!read_u32(&t.n_dims)) return truncated();
        if (t.n_dims < 1 || t.n_dims > kMaxDims) {
            return invalid(shown + " has " + std::to_string(t.n_dims) +
                           " dimensions (must be 1 to " + std::to_string(kMaxDims) + ")");
        }
        uint64_t elements = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            uint64_t ne;
            if (!read_u64(&ne)) return truncated();
            // On disk the extents are u64, but ggml computes with int64: values above
            // INT64_MAX are negative there and must be refused.
            if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                return invalid(shown + " has dimension " + std::to_string(d) + " of " +
                               std::to_string(static_cast<int64_t>(ne)) + " (must be at least 1)");
            }
            if (elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne) {
                return invalid(shown + " has more elements than fit in a 64-bit count");
            }
            elements *= ne;
            t.ne[d] = static_cast<int64_t>(ne);
        }

        if (!read_u32(&t.type)) return truncated();
        const TypeInfo* info = type_info(t.type);
        if (info == nullptr) {
            // A type of ggml's that has no row here (IQ2_XXS, TQ1_0, MXFP4, ...), or a number in
            // ggml's range it may assign next: named, with what does run.
            if (t.type < kGgmlTypeRange) return unsupported(unrunnable_tensor_message("'" + printable(name) + "'", t.type));
            return invalid(shown + " has unknown type " + std::to_string(t.type));
        }
        const uint64_t ne0 = static_cast<uint64_t>(t.ne[0]);
        if (ne0 % info->block_size != 0) {
            return invalid(shown + " of type " + info->name + " has " + std::to_string(ne0) +
                           " elements per row, not a multiple of the block size " +
                           std::to_string(info->block_size));
        }
        // The element count fits in int64, but bytes per element can exceed 1 (f32), so the
        // byte count can still overflow and every multiplication is guarded.
        uint64_t n_bytes = ne0 / info->block_size;
        if (n_bytes > std::numeric_limits<uint64_t>::max() / info->type_size) {
            return invalid(shown + " is too large to address");
        }
        n_bytes *= info->type_size;
        for (uint32_t d = 1; d < kMaxDims; ++d) {
            const uint64_t ne = static_cast<uint64_t>(t.ne[d]);
            if (n_bytes > std::numeric_limits<uint64_t>::max() / ne) {
                return invalid(shown + " is too large to address");
            }
            n_bytes *= ne;
        }
        t.n_bytes = n_bytes;

        if (!read_u64(&t.offset)) return truncated();

        file_->tensor_index_.emplace(name, file_->tensors_.size());
        file_->tensors_.push_back(std::move(t));
        return Status{};
    }

    Status locate_tensor_data() {
        where_ = "the tensor data";
        const uint64_t alignment = file_->alignment_;
        // pos_ <= size_, and alignment <= 2^31, so this cannot wrap in 64 bits.
        const uint64_t data_offset = (static_cast<uint64_t>(pos_) + alignment - 1) / alignment * alignment;
        if (file_->tensors_.empty()) {
            // Writers may omit the final padding when no tensor data follows.
            file_->data_offset_ = data_offset <= size_ ? static_cast<size_t>(data_offset) : size_;
            return Status{};
        }
        if (data_offset > size_) {
            return invalid("the tensor data section would start at byte " +
                           std::to_string(data_offset) + ", past the end of the " +
                           std::to_string(size_) + "-byte file");
        }
        file_->data_offset_ = static_cast<size_t>(data_offset);
        const uint64_t data_size = size_ - data_offset;
        for (GgufTensorInfo& t : file_->tensors_) {
            const std::string shown = "tensor '" + printable(t.name) + "'";
            if (t.offset % alignment != 0) {
                return invalid(shown + " has data offset " + std::to_string(t.offset) +
                               ", which is not a multiple of the alignment " +
                               std::to_string(alignment));
            }
            if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
                return invalid(shown + " needs " + std::to_string(t.n_bytes) +
                               " bytes at data offset " + std::to_string(t.offset) +
                               ", past the end of the file (the data section has " +
                               std::to_string(data_size) + " bytes)");
            }
            t.data = data_ + data_offset + t.offset;
        }
        return Status{};
    }

    const std::string& path_;
    GgufFile* file_;
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    uint64_t tensor_count_ = 0;
    uint64_t kv_count_ = 0;
    std::string where_;  // what is being parsed, for error messages
};

Status GgufFile::open(const std::string& path, GgufFile* out) {
    GgufFile file;
    Status st = MappedFile::open(path, &file.map_);
    if (!st.ok()) return st;
    st = GgufParser(path, &file).parse();
    if (!st.ok()) return st;
    file.map_.advise_sequential();
    *out = std::move(file);
    return Status{};
}

Status GgufFile::open_memory(const uint8_t* data, size_t size, const std::string& name,
                             GgufFile* out) {
    if (data == nullptr || size == 0) {
        return Status::error(ErrorCode::InvalidModel, name + " is empty");
    }
    GgufFile file;
    file.map_ = MappedFile::borrow(data, size, name);
    Status st = GgufParser(name, &file).parse();
    if (!st.ok()) return st;
    *out = std::move(file);
    return Status{};
}

const GgufFile::KeyValue* GgufFile::find_kv(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

bool GgufFile::has_key(std::string_view key) const { return find_kv(key) != nullptr; }

std::string_view GgufFile::metadata_key(size_t i) const {
    return i < kvs_.size() ? kvs_[i].key : std::string_view();
}

bool GgufFile::get_value_type(std::string_view key, uint32_t* type) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr) return false;
    *type = kv->type;
    return true;
}

bool GgufFile::get_string_view(std::string_view key, std::string_view* out) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr || kv->type != static_cast<uint32_t>(GgufValueType::STRING)) return false;
    const uint8_t* p = map_.data() + kv->offset;
    *out = std::string_view(reinterpret_cast<const char*>(p + kStringHeaderSize),
                            static_cast<size_t>(load_u64(p)));
    return true;
}

bool GgufFile::get_string(std::string_view key, std::string* out) const {
    std::string_view view;
    if (!get_string_view(key, &view)) return false;
    out->assign(view.data(), view.size());
    return true;
}

bool GgufFile::get_integer(std::string_view key, int64_t min, uint64_t max, bool* negative,
                           uint64_t* magnitude) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr) return false;
    if (!decode_integer(kv->type, map_.data() + kv->offset, negative, magnitude)) return false;
    return integer_in_range(*negative, *magnitude, min, max);
}

bool GgufFile::get_u32(std::string_view key, uint32_t* out) const {
    bool negative;
    uint64_t magnitude;
    if (!get_integer(key, 0, std::numeric_limits<uint32_t>::max(), &negative, &magnitude)) {
        return false;
    }
    *out = static_cast<uint32_t>(magnitude);
    return true;
}

bool GgufFile::get_i32(std::string_view key, int32_t* out) const {
    bool negative;
    uint64_t magnitude;
    if (!get_integer(key, std::numeric_limits<int32_t>::min(),
                     std::numeric_limits<int32_t>::max(), &negative, &magnitude)) {
        return false;
    }
    *out = static_cast<int32_t>(integer_value(negative, magnitude));
    return true;
}

bool GgufFile::get_u64(std::string_view key, uint64_t* out) const {
    bool negative;
    uint64_t magnitude;
    if (!get_integer(key, 0, std::numeric_limits<uint64_t>::max(), &negative, &magnitude)) {
        return false;
    }
    *out = magnitude;
    return true;
}

bool GgufFile::get_i64(std::string_view key, int64_t* out) const {
    bool negative;
    uint64_t magnitude;
    if (!get_integer(key, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), &negative, &magnitude)) {
        return false;
    }
    *out = integer_value(negative, magnitude);
    return true;
}

bool GgufFile::get_f32(std::string_view key, float* out) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr) return false;
    const uint8_t* p = map_.data() + kv->offset;
    if (kv->type == static_cast<uint32_t>(GgufValueType::FLOAT32)) {
        *out = load_f32(p);
        return true;
    }
    if (kv->type == static_cast<uint32_t>(GgufValueType::FLOAT64)) {
        *out = static_cast<float>(load_f64(p));
        return true;
    }
    return false;
}

bool GgufFile::get_bool(std::string_view key, bool* out) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr || kv->type != static_cast<uint32_t>(GgufValueType::BOOL)) return false;
    *out = map_.data()[kv->offset] != 0;
    return true;
}

bool GgufFile::get_array_info(std::string_view key, uint32_t* elem_type, uint64_t* count) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr || kv->type != static_cast<uint32_t>(GgufValueType::ARRAY)) return false;
    *elem_type = kv->elem_type;
    *count = kv->count;
    return true;
}

bool GgufFile::get_string_array(std::string_view key, GgufStringArray* out) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr || kv->type != static_cast<uint32_t>(GgufValueType::ARRAY) ||
        kv->elem_type != static_cast<uint32_t>(GgufValueType::STRING)) {
        return false;
    }
    out->base_ = map_.data();
    out->offsets_ = kv->string_offsets.data();
    out->count_ = kv->string_offsets.size();
    return true;
}

bool GgufFile::get_string_array_element(std::string_view key, uint64_t i,
                                        std::string_view* out) const {
    GgufStringArray array;
    if (!get_string_array(key, &array) || i >= array.size()) return false;
    *out = array[static_cast<size_t>(i)];
    return true;
}

bool GgufFile::get_f32_array(std::string_view key, std::vector<float>* out) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr || kv->type != static_cast<uint32_t>(GgufValueType::ARRAY) ||
        kv->elem_type != static_cast<uint32_t>(GgufValueType::FLOAT32)) {
        return false;
    }
    // count * 4 bytes were verified to lie inside the file, so this allocation is bounded.
    const uint8_t* p = map_.data() + kv->offset;
    out->resize(static_cast<size_t>(kv->count));
    for (size_t i = 0; i < out->size(); ++i) (*out)[i] = load_f32(p + 4 * i);
    return true;
}

bool GgufFile::get_i32_array(std::string_view key, std::vector<int32_t>* out) const {
    const KeyValue* kv = find_kv(key);
    if (kv == nullptr || kv->type != static_cast<uint32_t>(GgufValueType::ARRAY)) return false;
    if (!is_integer_type(kv->elem_type)) return false;
    const uint64_t elem_size = fixed_value_size(kv->elem_type);
    bool negative;
    uint64_t magnitude;
    // Values are range-checked one by one, so build aside and only publish a full result.
    const uint8_t* p = map_.data() + kv->offset;
    std::vector<int32_t> values;
    values.reserve(static_cast<size_t>(kv->count));
    for (uint64_t i = 0; i < kv->count; ++i) {
        if (!decode_integer(kv->elem_type, p + i * elem_size, &negative, &magnitude) ||
            !integer_in_range(negative, magnitude, std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max())) {
            return false;
        }
        values.push_back(static_cast<int32_t>(integer_value(negative, magnitude)));
    }
    *out = std::move(values);
    return true;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::string GgufFile::architecture() const {
    std::string arch;
    return get_string("general.architecture", &arch) ? arch : std::string();
}

}  // namespace hmllm
