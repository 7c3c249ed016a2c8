// The KV cache: keys and values of every past position, per layer, bounded by the context size
// chosen at session start. f16 by default; q8_0 (one scale per 32 values) halves it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hmllm {

enum class KvType { F16, Q8_0 };

class KvCache {
public:
    // kv_dim = kv_heads * head_dim. For Q8_0 head_dim must be a multiple of 32.
    void init(int n_layers, int n_ctx, int kv_dim, int head_dim, KvType type);
    static uint64_t bytes_for(int n_layers, int n_ctx, int kv_dim, KvType type);
    uint64_t bytes() const { return k_.size() + v_.size(); }
    int n_ctx() const { return n_ctx_; }
    KvType type() const { return type_; }

    void store(int layer, int pos, const float* k, const float* v);
    // q · K[pos] over one head (offset = kv_head * head_dim).
    float dot_k(int layer, int pos, int offset, const float* q) const;
    // out += w * V[pos] over one head.
    void add_v(int layer, int pos, int offset, float w, float* out) const;

private:
    size_t row_bytes() const;
    uint8_t* row(std::vector<uint8_t>& buf, int layer, int pos) const;
    const uint8_t* row(const std::vector<uint8_t>& buf, int layer, int pos) const;

    int n_layers_ = 0, n_ctx_ = 0, kv_dim_ = 0, head_dim_ = 0;
    KvType type_ = KvType::F16;
    std::vector<uint8_t> k_, v_;
};

}  // namespace hmllm
