#include "hmllm/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hmllm/fp16.h"

namespace hmllm {
namespace {
constexpr int kQ8Block = 32;
constexpr size_t kQ8BlockBytes = 2 + kQ8Block;  // fp16 scale + 32 int8, the q8_0 layout
}  // namespace

uint64_t KvCache::bytes_for(int n_layers, int n_ctx, int kv_dim, KvType type) {
    const uint64_t row = type == KvType::F16 ? uint64_t(kv_dim) * 2 : uint64_t(kv_dim / kQ8Block) * kQ8BlockBytes;
    return 2ull * n_layers * n_ctx * row;
}

size_t KvCache::row_bytes() const {
    return type_ == KvType::F16 ? size_t(kv_dim_) * 2 : size_t(kv_dim_ / kQ8Block) * kQ8BlockBytes;
}

void KvCache::init(int n_layers, int n_ctx, int kv_dim, int head_dim, KvType type) {
    n_layers_ = n_layers;
    n_ctx_ = n_ctx;
    kv_dim_ = kv_dim;
    head_dim_ = head_dim;
    type_ = type;
    const size_t total = size_t(n_layers) * n_ctx * row_bytes();
    k_.assign(total, 0);
    v_.assign(total, 0);
}

uint8_t* KvCache::row(std::vector<uint8_t>& buf, int layer, int pos) const {
    return buf.data() + (size_t(layer) * n_ctx_ + pos) * row_bytes();
}
const uint8_t* KvCache::row(const std::vector<uint8_t>& buf, int layer, int pos) const {
    return buf.data() + (size_t(layer) * n_ctx_ + pos) * row_bytes();
}

static void encode_row(KvType type, const float* x, int n, uint8_t* dst) {
    if (type == KvType::F16) {
        auto* h = reinterpret_cast<uint16_t*>(dst);
        for (int i = 0; i < n; ++i) h[i] = fp32_to_fp16(x[i]);
        return;
    }
    for (int b = 0; b < n / kQ8Block; ++b, x += kQ8Block, dst += kQ8BlockBytes) {
        float amax = 0;
        for (int i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::fabs(x[i]));  // inlined; as fmax for NaN
        const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        const uint16_t dh = fp32_to_fp16(d);
        std::memcpy(dst, &dh, 2);
        for (int i = 0; i < kQ8Block; ++i) dst[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[i] * id)));
    }
}

void KvCache::store(int layer, int pos, const float* k, const float* v) {
    encode_row(type_, k, kv_dim_, row(k_, layer, pos));
    encode_row(type_, v, kv_dim_, row(v_, layer, pos));
}

float KvCache::dot_k(int layer, int pos, int offset, const float* q) const {
    const uint8_t* r = row(k_, layer, pos);
    float sum = 0;
    if (type_ == KvType::F16) {
        const auto* h = reinterpret_cast<const uint16_t*>(r) + offset;
        for (int i = 0; i < head_dim_; ++i) sum += q[i] * fp16_to_fp32(h[i]);
        return sum;
    }
    const uint8_t* blk = r + size_t(offset / kQ8Block) * kQ8BlockBytes;
    for (int b = 0; b < head_dim_ / kQ8Block; ++b, blk += kQ8BlockBytes, q += kQ8Block) {
        uint16_t dh;
        std::memcpy(&dh, blk, 2);
        float s = 0;
        for (int i = 0; i < kQ8Block; ++i) s += q[i] * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
        sum += s * fp16_to_fp32(dh);
    }
    return sum;
}

void KvCache::add_v(int layer, int pos, int offset, float w, float* out) const {
    const uint8_t* r = row(v_, layer, pos);
    if (type_ == KvType::F16) {
        const auto* h = reinterpret_cast<const uint16_t*>(r) + offset;
        for (int i = 0; i < head_dim_; ++i) out[i] += w * fp16_to_fp32(h[i]);
        return;
    }
    const uint8_t* blk = r + size_t(offset / kQ8Block) * kQ8BlockBytes;
    for (int b = 0; b < head_dim_ / kQ8Block; ++b, blk += kQ8BlockBytes, out += kQ8Block) {
        uint16_t dh;
        std::memcpy(&dh, blk, 2);
        const float wd = w * fp16_to_fp32(dh);
        for (int i = 0; i < kQ8Block; ++i) out[i] += wd * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
    }
}

int KvCache::block() const { return type_ == KvType::F16 ? head_dim_ : kQ8Block; }

void KvCache::head_values(Which which, int layer, int pos, int offset, float* values, float* scales) const {
    const uint8_t* r = row(which == Which::K ? k_ : v_, layer, pos);
    if (type_ == KvType::F16) {
        const auto* h = reinterpret_cast<const uint16_t*>(r) + offset;
        fp16_to_fp32_row(h, values, head_dim_);
        scales[0] = 1.0f;
        return;
    }
    const uint8_t* blk = r + size_t(offset / kQ8Block) * kQ8BlockBytes;
    for (int b = 0; b < head_dim_ / kQ8Block; ++b, blk += kQ8BlockBytes, values += kQ8Block) {
        uint16_t dh;
        std::memcpy(&dh, blk, 2);
        scales[b] = fp16_to_fp32(dh);
        for (int i = 0; i < kQ8Block; ++i) values[i] = static_cast<float>(static_cast<int8_t>(blk[2 + i]));
    }
}

}  // namespace hmllm
