// Picks the next token from logits: greedy, or temperature + top-k + top-p with a seed.
// mt19937_64 is specified bit for bit by the standard, but the std distributions are not, so
// uniforms are made from its bits here: a seed gives the same tokens with libstdc++ and libc++.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace hmllm {

struct SamplingOptions {
    float temperature = 0.0f;  // <= 0: greedy
    int top_k = 40;            // <= 0: no limit
    float top_p = 0.95f;       // >= 1: no limit
    uint64_t seed = 0;
};

class Sampler {
public:
    explicit Sampler(const SamplingOptions& options);
    int32_t sample(const float* logits, int n_vocab);

private:
    SamplingOptions opt_;
    std::mt19937_64 rng_;
    std::vector<std::pair<float, int32_t>> cand_;
};

int32_t argmax(const float* logits, int n);  // lowest index on ties

}  // namespace hmllm
