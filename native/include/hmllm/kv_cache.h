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
    // The one-head reference (tests): q · K[pos] over one head (offset = kv_head * head_dim), and
    // out += w * V[pos]. The engine's attention reads rows through head_values and must give
    // these functions' bits.
    float dot_k(int layer, int pos, int offset, const float* q) const;
    void add_v(int layer, int pos, int offset, float w, float* out) const;

    // One head's cached values at pos as floats, so attention converts each row once for all the
    // query heads that share it: values = the stored numbers (f16 exactly; q8_0 the int8 codes),
    // scales = one per block() values (q8_0 its fp16 scale, f16 1). dot_k equals, block by block,
    // sum += (q . values of the block, summed in order from 0) * scale, and add_v is
    // out += (w * scale) * value; multiplying by 1 and adding to 0 are exact, so a caller doing
    // exactly that gets dot_k's and add_v's bits.
    enum class Which { K, V };
    int block() const;  // values per scale: head_dim for f16, 32 for q8_0
    void head_values(Which which, int layer, int pos, int offset, float* values, float* scales) const;

private:
    size_t row_bytes() const;
    uint8_t* row(std::vector<uint8_t>& buf, int layer, int pos) const;
    const uint8_t* row(const std::vector<uint8_t>& buf, int layer, int pos) const;

    int n_layers_ = 0, n_ctx_ = 0, kv_dim_ = 0, head_dim_ = 0;
    KvType type_ = KvType::F16;
    std::vector<uint8_t> k_, v_;
};

}  // namespace hmllm
