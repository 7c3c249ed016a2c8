#include "hmllm/sampler.h"

#include <algorithm>
#include <cmath>

namespace hmllm {

// Two passes: the largest value with eight independent running maxima (the one-pass loop carries
// its index through every comparison and runs at one element per cycle or so; the vocabulary is
// 262144 logits per token for Gemma 3), then the first index holding it. NaNs are never picked,
// as in the one-pass loop, unless every logit is NaN (then 0).
int32_t argmax(const float* logits, int n) {
    float m[8];
    for (float& v : m) v = -INFINITY;
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) m[k] = logits[i + k] > m[k] ? logits[i + k] : m[k];
    for (; i < n; ++i) m[0] = logits[i] > m[0] ? logits[i] : m[0];
    float best = m[0];
    for (int k = 1; k < 8; ++k) best = m[k] > best ? m[k] : best;
    for (int j = 0; j < n; ++j)
        if (logits[j] == best) return j;
    return 0;
}

Sampler::Sampler(const SamplingOptions& options) : opt_(options), rng_(options.seed) {}

int32_t Sampler::sample(const float* logits, int n_vocab) {
    if (opt_.temperature <= 0.0f) return argmax(logits, n_vocab);
    const int k = opt_.top_k > 0 && opt_.top_k < n_vocab ? opt_.top_k : n_vocab;
    cand_.resize(n_vocab);
    for (int i = 0; i < n_vocab; ++i) cand_[i] = {logits[i], i};
    auto by_logit = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), by_logit);
    cand_.resize(k);
    const float max_logit = cand_[0].first;
    double total = 0;
    for (auto& c : cand_) {
        c.first = static_cast<float>(std::exp((c.first - max_logit) / opt_.temperature));
        total += c.first;
    }
    // Keep the smallest prefix whose probability mass reaches top_p.
    size_t keep = cand_.size();
    if (opt_.top_p < 1.0f) {
        double mass = 0;
        for (size_t i = 0; i < cand_.size(); ++i) {
            mass += cand_[i].first / total;
            if (mass >= opt_.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    double kept = 0;
    for (size_t i = 0; i < keep; ++i) kept += cand_[i].first;
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * kept;
    double acc = 0;
    for (size_t i = 0; i < keep; ++i) {
        acc += cand_[i].first;
        if (u < acc) return cand_[i].second;
    }
    return cand_[keep - 1].second;
}

}  // namespace hmllm
