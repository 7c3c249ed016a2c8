// The inference engine of one session: a model bound to its mapped weights, a KV cache, scratch
// buffers sized once from the config, and a thread pool. forward() is the whole transformer;
// generate() adds prompt-prefix reuse, sampling and stopping.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hmllm/kernels.h"
#include "hmllm/kv_cache.h"
#include "hmllm/model.h"
#include "hmllm/sampler.h"
#include "hmllm/status.h"
#include "hmllm/thread_pool.h"

namespace hmllm {

struct EngineOptions {
    int threads = 1;
    bool own_threads = false;  // the pool owns all threads (so they can be pinned); the caller waits
    int context_size = 2048;  // bounded by the model's training context
    KvType kv_type = KvType::F16;
    uint64_t memory_budget_bytes = 0;  // 0: no limit
    int max_batch = 32;                // prompt tokens per forward step
};

// What a configuration costs before anything is allocated (weights are mapped, not copied).
struct MemoryPlan {
    uint64_t weights = 0, kv_cache = 0, scratch = 0;
    uint64_t total() const { return weights + kv_cache + scratch; }
    std::string describe() const;  // "weights 241.0 MB + KV cache 18.0 MB + scratch 3.1 MB = 262.1 MB"
};
MemoryPlan plan_memory(const ModelConfig& config, const ModelWeights& weights, const EngineOptions& options);

// Where a weight matrix's input comes from, for tools that collect activation statistics
// (hmllm_calibrate): Q/K/V read one input, gate/up another.
enum class InputSite { AttnIn, AttnOut, FfnIn, FfnMid, Output };
const char* input_site_name(InputSite);  // "attn_in", "attn_out", "ffn_in", "ffn_mid", "output"
// Called on the forward pass's thread with the n_tokens x n_cols input rows of each site (layer -1
// for the output); it may use the engine's pool, never the engine itself.
using InputObserver = std::function<void(int layer, InputSite site, const float* x, int n_cols, int n_tokens)>;

enum class StopReason { EndOfGeneration, MaxTokens, Callback, ContextFull };
const char* stop_reason_name(StopReason);

struct GenerateOptions {
    int max_tokens = 128;
    SamplingOptions sampling;
    // Called with each new token; return false to stop (cancel, timeout, stop string).
    std::function<bool(int32_t)> on_token;
    std::function<bool(int32_t)> is_end;  // end-of-generation test (tokenizer's); none: never
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated, excluding the prompt
    int prompt_tokens = 0;
    int reused_tokens = 0;  // prompt prefix whose KV was kept from the previous request
    double ttft_ms = 0, prefill_ms = 0, decode_ms = 0;
    StopReason stop = StopReason::MaxTokens;
    double prefill_tps() const;
    double decode_tps() const;
};

class Engine {
public:
    static Status create(const ModelConfig& config, const ModelWeights& weights, const EngineOptions& options,
                         std::unique_ptr<Engine>* out);

    Status generate(const std::vector<int32_t>& prompt, const GenerateOptions& options, GenerateResult* result);

    // Log-probability of each continuation (summed over its tokens) after the prompt; the prompt's
    // KV is computed once (and reused from the previous request where the prefix matches).
    Status score(const std::vector<int32_t>& prompt, const std::vector<std::vector<int32_t>>& continuations,
                 std::vector<double>* logprobs);

    // Runs tokens at positions [pos, pos + n) through the model; logits of the last one land in
    // logits() (all n positions when all_logits, rows of n_vocab). Exposed for evaluation tools.
    Status forward(const int32_t* tokens, int n, int pos, bool all_logits = false);
    const std::vector<float>& logits() const { return logits_; }

    // Keeps the KV of the first n cached tokens only (used by prefix reuse and evaluation).
    void truncate_cache(int n);
    int cached_tokens() const { return static_cast<int>(cached_.size()); }
    int context_size() const { return kv_.n_ctx(); }  // tokens, after the model's bound

    const ModelConfig& config() const { return cfg_; }
    const MemoryPlan& memory_plan() const { return plan_; }
    int threads() const { return pool_->size(); }
    ThreadPool& pool() { return *pool_; }
    // Sees every matrix input of later forward passes (none: the default, no cost but a test).
    void set_input_observer(InputObserver observer) { observe_ = std::move(observer); }

private:
    Engine() = default;
    Status forward_pass(const int32_t* tokens, int n, int pos, bool all_logits);
    struct MatJob {
        const MatView* w;
        float* y;  // n rows of w->n_rows outputs
    };
    static constexpr int kMaxJobs = 3, kActKinds = 5, kActSlots = 2 * kActKinds;  // ActKind values, plain and rotated
    void matmul(const MatView& w, const float* x, int n, float* y);
    void matmul_many(const MatJob* jobs, int n_jobs, const float* x, int n);
    // Keeps the cached KV of the longest common prefix with `prompt`; returns its length.
    int reuse_prefix(const std::vector<int32_t>& prompt);
    void attention(int layer, int n, int pos, const float* q, float* out);

    ModelConfig cfg_;
    ModelWeights w_;
    EngineOptions opt_;
    MemoryPlan plan_;
    KvCache kv_;
    std::unique_ptr<ThreadPool> pool_;
    std::vector<int32_t> cached_;  // tokens whose K/V are in kv_, in order
    // Scratch, sized once for max_batch tokens.
    std::vector<float> x_, xn_, q_, k_, v_, att_, o_, gate_, up_, logits_, rope_cs_;
    std::vector<float> rotated_;   // a matmul input times R (MatView::rotated), for max_batch rows
    Activations acts_[kActSlots];  // the input in each activation format a matmul needs, plain or rotated
    InputObserver observe_;
};

}  // namespace hmllm
