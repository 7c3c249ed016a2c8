#include "hmllm/engine.h"

#include "hmllm/fp16.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace hmllm {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void rmsnorm(const float* x, const float* w, int n, float eps, float* out) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const float scale = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
    for (int i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

// Transcendentals go through the double-precision libm and round once to float: float libm
// functions differ by an ulp between glibc builds (x86_64 has FMA variants) and musl, the double
// ones round to the same float, so a phone and the CI host compute the same values.
float exp_f(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
float tanh_f(float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); }

float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanh_f(0.7978845608028654f * x * (1.0f + 0.044715f * x * x)));
}

// GELU through a 64K table indexed by the fp16 bits of x, as ggml computes it: faster than tanh
// per element, and rounded the way llama.cpp rounds it.
float gelu_table(float x) {
    static const std::vector<uint16_t> table = [] {
        std::vector<uint16_t> t(65536);
        for (uint32_t i = 0; i < 65536; ++i) t[i] = fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(i))));
        return t;
    }();
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return fp16_to_fp32(table[fp32_to_fp16(x)]);
}

float silu(float x) { return x / (1.0f + exp_f(-x)); }

// cos/sin of the rotary angles pos * base^(-2i/d) of one position, with the angle advanced by
// repeated multiplication in float as ggml does. Llama 3's factors divide angle i (ggml's
// freq_factors); linear scaling multiplies every angle by `scale`.
void rope_angles(int pos, float base, int head_dim, float scale, const float* factors, std::vector<float>* cs) {
    const int half = head_dim / 2;
    cs->resize(size_t(head_dim));
    const float step = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(-2.0f / head_dim)));
    float theta = static_cast<float>(pos);
    for (int i = 0; i < half; ++i) {
        const float angle = scale * (factors ? theta / factors[i] : theta);
        (*cs)[size_t(2 * i)] = static_cast<float>(std::cos(static_cast<double>(angle)));
        (*cs)[size_t(2 * i + 1)] = static_cast<float>(std::sin(static_cast<double>(angle)));
        theta *= step;
    }
}

// Rotary position embedding of one head in place. neox rotates (i, i + d/2) pairs, the
// original llama layout adjacent (2i, 2i + 1) pairs.
void rope(float* x, int head_dim, const std::vector<float>& cs, bool neox) {
    const int half = head_dim / 2;
    for (int i = 0; i < half; ++i) {
        const float c = cs[size_t(2 * i)], s = cs[size_t(2 * i + 1)];
        const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        const float x0 = x[a], x1 = x[b];
        x[a] = x0 * c - x1 * s;
        x[b] = x0 * s + x1 * c;
    }
}

std::string mb(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
    return buf;
}

}  // namespace

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::EndOfGeneration: return "eos";
        case StopReason::MaxTokens: return "max_tokens";
        case StopReason::Callback: return "stopped";
        case StopReason::ContextFull: return "context_full";
    }
    return "?";
}

double GenerateResult::prefill_tps() const {
    return prefill_ms > 0 ? (prompt_tokens - reused_tokens) * 1000.0 / prefill_ms : 0;
}
double GenerateResult::decode_tps() const {
    // The first token comes out of the prefill; decode speed counts the ones after it.
    return decode_ms > 0 && tokens.size() > 1 ? (tokens.size() - 1) * 1000.0 / decode_ms : 0;
}

std::string MemoryPlan::describe() const {
    return "weights " + mb(weights) + " + KV cache " + mb(kv_cache) + " + scratch " + mb(scratch) + " = " + mb(total());
}

MemoryPlan plan_memory(const ModelConfig& c, const ModelWeights& w, const EngineOptions& o) {
    MemoryPlan p;
    p.weights = w.weight_bytes;
    const int kv_dim = c.n_kv_heads * c.head_dim;
    p.kv_cache = KvCache::bytes_for(c.n_layers, o.context_size, kv_dim, o.kv_type);
    const uint64_t q_dim = uint64_t(c.n_heads) * c.head_dim;
    const uint64_t per_token = 3ull * c.d_model + 2 * q_dim + 2ull * kv_dim + 2ull * c.d_ff +
                               std::max<uint64_t>({uint64_t(c.d_model), uint64_t(c.d_ff), q_dim});  // rotated_
    // floats per batch row, the quantized activations (<= 1.25 bytes per float), logits and per
    // thread one attention score row for each query head sharing a KV head (attend_group).
    const uint64_t group = uint64_t(std::max(1, c.n_heads / std::max(1, c.n_kv_heads)));
    p.scratch = (per_token * o.max_batch * 4) + per_token * o.max_batch * 2 + uint64_t(c.n_vocab) * 4 +
                uint64_t(o.threads) * group * o.context_size * 4;
    return p;
}

Status Engine::create(const ModelConfig& cfg, const ModelWeights& w, const EngineOptions& options,
                      std::unique_ptr<Engine>* out) {
    EngineOptions o = options;
    if (o.threads < 1) o.threads = 1;
    if (o.context_size < 1) return Status::error(ErrorCode::InvalidArgument, "the context size must be at least 1 token");
    if (o.context_size > cfg.ctx_train) o.context_size = cfg.ctx_train;
    if (o.max_batch < 1) o.max_batch = 1;
    if (o.kv_type == KvType::Q8_0 && cfg.head_dim % 32 != 0)
        return Status::error(ErrorCode::InvalidArgument, "an 8-bit KV cache needs a head size that is a multiple of 32");
    MemoryPlan plan = plan_memory(cfg, w, o);
    if (o.memory_budget_bytes && plan.total() > o.memory_budget_bytes)
        return Status::error(ErrorCode::OutOfMemory, "this configuration needs " + plan.describe() +
                                                         ", over the budget of " + mb(o.memory_budget_bytes) +
                                                         "; use a shorter context, an 8-bit KV cache or a smaller model");
    std::unique_ptr<Engine> e(new Engine());
    e->cfg_ = cfg;
    e->w_ = w;
    e->opt_ = o;
    e->plan_ = plan;
    const int kv_dim = cfg.n_kv_heads * cfg.head_dim, q_dim = cfg.n_heads * cfg.head_dim;
    try {
        e->kv_.init(cfg.n_layers, o.context_size, kv_dim, cfg.head_dim, o.kv_type);
        const size_t b = size_t(o.max_batch);
        e->x_.resize(b * cfg.d_model);
        e->xn_.resize(b * std::max(cfg.d_model, cfg.d_ff));
        e->q_.resize(b * q_dim);
        e->k_.resize(b * kv_dim);
        e->v_.resize(b * kv_dim);
        e->att_.resize(b * q_dim);
        e->o_.resize(b * cfg.d_model);
        e->gate_.resize(b * cfg.d_ff);
        e->up_.resize(b * cfg.d_ff);
        e->rotated_.resize(b * std::max({cfg.d_model, cfg.d_ff, q_dim}));
        e->logits_.resize(size_t(cfg.n_vocab));
    } catch (const std::bad_alloc&) {
        return Status::error(ErrorCode::OutOfMemory, "could not allocate " + plan.describe());
    }
    e->pool_ = std::make_unique<ThreadPool>(o.threads, !o.own_threads);
    *out = std::move(e);
    return Status{};
}

void Engine::matmul(const MatView& w, const float* x, int n, float* y) {
    const MatJob job{&w, y};
    matmul_many(&job, 1, x, n);
}

// Matrices that read the same input (Q, K, V; gate, up) run as one parallel step: the input is
// quantized once per activation format and the chunks of all of them go out together, so the
// threads meet once instead of once per matrix.
void Engine::matmul_many(const MatJob* jobs, int n_jobs, const float* x, int n) {
    bool ready[kActSlots] = {};
    int64_t first_chunk[kMaxJobs + 1] = {0}, rows_per_chunk[kMaxJobs];
    const Activations* act[kMaxJobs];
    const float* x_rotated = nullptr;  // x times R, made once when a rotated matrix needs it
    for (int j = 0; j < n_jobs; ++j) {
        const MatView& w = *jobs[j].w;
        const int slot = static_cast<int>(activation_kind(w.type)) + (w.rotated ? kActKinds : 0);
        act[j] = &acts_[slot];
        if (!ready[slot]) {
            if (w.rotated && !x_rotated) {
                std::copy(x, x + size_t(n) * size_t(w.n_cols), rotated_.begin());
                hadamard_rows(rotated_.data(), w.n_cols, n);
                x_rotated = rotated_.data();
            }
            acts_[slot].quantize(w.type, w.rotated ? x_rotated : x, w.n_cols, n);
            ready[slot] = true;
        }
        // Many more chunks than threads, so faster cores take more of them.
        const int64_t gran = row_granularity(w);
        const int64_t want_chunks = int64_t(pool_->size()) * 8;
        int64_t rpc = (w.n_rows + want_chunks - 1) / want_chunks;
        rpc = std::max(gran, std::min<int64_t>((rpc + gran - 1) / gran * gran, 512));
        rows_per_chunk[j] = rpc;
        first_chunk[j + 1] = first_chunk[j] + (w.n_rows + rpc - 1) / rpc;
    }
    pool_->parallel_for(first_chunk[n_jobs], [&](int64_t c) {
        int j = 0;
        while (c >= first_chunk[j + 1]) ++j;
        const MatView& w = *jobs[j].w;
        const int64_t r0 = (c - first_chunk[j]) * rows_per_chunk[j], r1 = std::min(w.n_rows, r0 + rows_per_chunk[j]);
        hmllm::matmul(w, *act[j], jobs[j].y, w.n_rows, r0, r1);
    });
}

namespace {

// The query heads of one KV head (grouped-query attention) side by side: each cached key and
// value is converted once for all of them, and each head keeps its own float sums, advanced in the
// same order as a loop over one head (KvCache::dot_k / add_v), so the grouping changes no bit.
// G is the group size when known at compile time (the loops over heads then vectorize); 0 reads
// it from `group`.
template <int G>
void attend_group(const KvCache& kv, int layer, int kv_off, int start, int p, int group, int hd, const float* qg,
                  float* og) {
    const int gs = G > 0 ? G : group;
    const int blk = kv.block(), nblk = hd / blk, len = p - start + 1;
    // One scratch block per call, not thread_local vectors: with emulated TLS (OHOS, Android) a
    // thread_local with a destructor can be destroyed after its TLS block is freed at thread exit
    // (the two pthread-key destructors run in no fixed order), which crashed on musl.
    const size_t n_qt = size_t(hd) * gs, n_scores = size_t(len) * gs;
    std::vector<float> scratch(2 * n_qt + n_scores + size_t(hd) + size_t(nblk) + 2 * size_t(gs), 0.0f);
    float* const qt = scratch.data();
    float* const ot = qt + n_qt;  // zeroed: the weighted values accumulate into it
    float* const scores = ot + n_qt;
    float* const vals = scores + n_scores;
    float* const scales = vals + hd;
    float* const acc = scales + nblk;
    float* const part = acc + gs;
    for (int h = 0; h < gs; ++h)
        for (int i = 0; i < hd; ++i) qt[size_t(i) * gs + h] = qg[size_t(h) * hd + i];
    for (int j = start; j <= p; ++j) {
        kv.head_values(KvCache::Which::K, layer, j, kv_off, vals, scales);
        if constexpr (G > 0) {
            // The sums in local arrays of G floats: the compiler keeps them in one vector register
            // (sums in the heap scratch may alias qt, which kept every step scalar).
            float acc_g[G] = {};
            for (int b = 0; b < nblk; ++b) {
                float part_g[G] = {};
                for (int i = b * blk; i < (b + 1) * blk; ++i) {
                    const float v = vals[i];
                    const float* q = &qt[size_t(i) * G];
                    for (int h = 0; h < G; ++h) part_g[h] += q[h] * v;
                }
                for (int h = 0; h < G; ++h) acc_g[h] += part_g[h] * scales[b];
            }
            for (int h = 0; h < G; ++h) scores[size_t(h) * len + (j - start)] = acc_g[h];
            continue;
        }
        for (int h = 0; h < gs; ++h) acc[h] = 0.0f;
        for (int b = 0; b < nblk; ++b) {
            for (int h = 0; h < gs; ++h) part[h] = 0.0f;
            for (int i = b * blk; i < (b + 1) * blk; ++i) {
                const float v = vals[i];
                const float* q = &qt[size_t(i) * gs];
                for (int h = 0; h < gs; ++h) part[h] += q[h] * v;
            }
            for (int h = 0; h < gs; ++h) acc[h] += part[h] * scales[b];
        }
        for (int h = 0; h < gs; ++h) scores[size_t(h) * len + (j - start)] = acc[h];
    }
    // Softmax per head (exp_f, a double sum), then the weighted values.
    for (int h = 0; h < gs; ++h) {
        float* sh = &scores[size_t(h) * len];
        float max_s = -INFINITY;
        for (int k = 0; k < len; ++k) max_s = std::max(max_s, sh[k]);
        double total = 0;
        for (int k = 0; k < len; ++k) {
            sh[k] = exp_f(sh[k] - max_s);
            total += sh[k];
        }
        const float inv = static_cast<float>(1.0 / total);
        for (int k = 0; k < len; ++k) sh[k] = sh[k] * inv;
    }
    for (int j = start; j <= p; ++j) {
        kv.head_values(KvCache::Which::V, layer, j, kv_off, vals, scales);
        if constexpr (G > 0) {
            for (int b = 0; b < nblk; ++b) {
                float part_g[G];
                for (int h = 0; h < G; ++h) part_g[h] = scores[size_t(h) * len + (j - start)] * scales[b];
                for (int i = b * blk; i < (b + 1) * blk; ++i) {
                    const float v = vals[i];
                    float* o = &ot[size_t(i) * G];
                    for (int h = 0; h < G; ++h) o[h] += part_g[h] * v;
                }
            }
            continue;
        }
        for (int b = 0; b < nblk; ++b) {
            for (int h = 0; h < gs; ++h) part[h] = scores[size_t(h) * len + (j - start)] * scales[b];
            for (int i = b * blk; i < (b + 1) * blk; ++i) {
                const float v = vals[i];
                float* o = &ot[size_t(i) * gs];
                for (int h = 0; h < gs; ++h) o[h] += part[h] * v;
            }
        }
    }
    for (int h = 0; h < gs; ++h)
        for (int i = 0; i < hd; ++i) og[size_t(h) * hd + i] = ot[size_t(i) * gs + h];
}

}  // namespace

// Causal attention for the n new tokens at positions [pos, pos + n) over the cache, one task per
// (token, KV head). When that is fewer tasks than threads (decode of a model with one or two KV
// heads), each group of query heads is split into sub-groups, one task each: a sub-group converts
// the cached rows again, but the threads share the work. Each head's sums are the same either way.
// Sliding-window layers see only the last `sliding_window` positions.
void Engine::attention(int layer, int n, int pos, const float* q, float* out) {
    const int hd = cfg_.head_dim, n_kv = cfg_.n_kv_heads, group = cfg_.n_heads / cfg_.n_kv_heads;
    const int q_dim = cfg_.n_heads * hd;
    const bool sliding = w_.layers[layer].sliding && cfg_.sliding_window > 0;
    int split = 1;
    while (split < group && int64_t(n) * n_kv * split < pool_->size() && group % (2 * split) == 0) split *= 2;
    const int gs = group / split;
    pool_->parallel_for(int64_t(n) * n_kv * split, [&](int64_t task) {
        const int sub = static_cast<int>(task % split);
        const int t = static_cast<int>(task / split / n_kv), g = static_cast<int>(task / split % n_kv);
        const int p = pos + t;
        const int start = sliding ? std::max(0, p - cfg_.sliding_window + 1) : 0;
        const size_t at = size_t(t) * q_dim + (size_t(g) * group + size_t(sub) * gs) * hd;
        switch (gs) {
            case 1: attend_group<1>(kv_, layer, g * hd, start, p, gs, hd, q + at, out + at); break;
            case 2: attend_group<2>(kv_, layer, g * hd, start, p, gs, hd, q + at, out + at); break;
            case 3: attend_group<3>(kv_, layer, g * hd, start, p, gs, hd, q + at, out + at); break;
            case 4: attend_group<4>(kv_, layer, g * hd, start, p, gs, hd, q + at, out + at); break;
            case 8: attend_group<8>(kv_, layer, g * hd, start, p, gs, hd, q + at, out + at); break;
            default: attend_group<0>(kv_, layer, g * hd, start, p, gs, hd, q + at, out + at); break;
        }
    });
}

const char* input_site_name(InputSite s) {
    switch (s) {
        case InputSite::AttnIn: return "attn_in";
        case InputSite::AttnOut: return "attn_out";
        case InputSite::FfnIn: return "ffn_in";
        case InputSite::FfnMid: return "ffn_mid";
        case InputSite::Output: return "output";
    }
    return "?";
}

Status Engine::forward(const int32_t* tokens, int n_total, int pos0, bool all_logits) {
    // The whole pass runs on the pool's leader thread (see ThreadPool::run): one hand-off per
    // pass instead of one per matmul.
    Status st;
    pool_->run([&] { st = forward_pass(tokens, n_total, pos0, all_logits); });
    return st;
}

Status Engine::forward_pass(const int32_t* tokens, int n_total, int pos0, bool all_logits) {
    if (pos0 < 0 || n_total < 1 || pos0 + n_total > kv_.n_ctx())
        return Status::error(ErrorCode::InvalidArgument, "the request does not fit the context of " +
                                                             std::to_string(kv_.n_ctx()) + " tokens");
    for (int i = 0; i < n_total; ++i)
        if (tokens[i] < 0 || tokens[i] >= cfg_.n_vocab)
            return Status::error(ErrorCode::InvalidArgument, "token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
    const int d = cfg_.d_model, hd = cfg_.head_dim, q_dim = cfg_.n_heads * hd, kv_dim = cfg_.n_kv_heads * hd;
    if (all_logits) logits_.resize(size_t(n_total) * cfg_.n_vocab);
    else logits_.resize(size_t(cfg_.n_vocab));
    cached_.resize(std::min<size_t>(cached_.size(), size_t(pos0)));

    for (int done = 0; done < n_total;) {
        const int n = std::min(opt_.max_batch, n_total - done);
        const int pos = pos0 + done;
        for (int t = 0; t < n; ++t) {
            float* x = &x_[size_t(t) * d];
            dequantize_row(w_.tok_embd, tokens[done + t], x);
            if (w_.tok_embd.rotated) hadamard_rows(x, d, 1);  // the stored row is e·R; R·R = I
            if (cfg_.embed_scale != 1.0f)
                for (int i = 0; i < d; ++i) x[i] *= cfg_.embed_scale;
        }
        for (int il = 0; il < cfg_.n_layers; ++il) {
            const LayerWeights& L = w_.layers[il];
            for (int t = 0; t < n; ++t) rmsnorm(&x_[size_t(t) * d], L.attn_norm, d, cfg_.rms_eps, &xn_[size_t(t) * d]);
            if (observe_) observe_(il, InputSite::AttnIn, xn_.data(), d, n);
            const MatJob qkv[3] = {{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}};
            matmul_many(qkv, 3, xn_.data(), n);
            // Sliding-window layers (gemma3) keep their own base and are never scaled, as in llama.cpp.
            const float base = L.sliding ? cfg_.rope_base_local : cfg_.rope_base;
            const float scale = L.sliding ? 1.0f : cfg_.rope_freq_scale;
            std::vector<float>& cs = rope_cs_;
            for (int t = 0; t < n; ++t) {
                rope_angles(pos + t, base, hd, scale, w_.rope_freqs, &cs);
                float* q = &q_[size_t(t) * q_dim];
                float* k = &k_[size_t(t) * kv_dim];
                float* v = &v_[size_t(t) * kv_dim];
                if (L.bq) {
                    for (int i = 0; i < q_dim; ++i) q[i] += L.bq[i];
                    for (int i = 0; i < kv_dim; ++i) k[i] += L.bk[i];
                    for (int i = 0; i < kv_dim; ++i) v[i] += L.bv[i];
                }
                for (int h = 0; h < cfg_.n_heads; ++h) {
                    float* qh = q + size_t(h) * hd;
                    if (L.q_norm) rmsnorm(qh, L.q_norm, hd, cfg_.rms_eps, qh);
                    rope(qh, hd, cs, cfg_.rope_neox);
                    for (int i = 0; i < hd; ++i) qh[i] *= cfg_.attn_scale;
                }
                for (int h = 0; h < cfg_.n_kv_heads; ++h) {
                    float* kh = k + size_t(h) * hd;
                    if (L.k_norm) rmsnorm(kh, L.k_norm, hd, cfg_.rms_eps, kh);
                    rope(kh, hd, cs, cfg_.rope_neox);
                }
                kv_.store(il, pos + t, k, v);
            }
            attention(il, n, pos, q_.data(), att_.data());
            if (observe_) observe_(il, InputSite::AttnOut, att_.data(), q_dim, n);
            matmul(L.wo, att_.data(), n, o_.data());
            for (int t = 0; t < n; ++t) {
                float* o = &o_[size_t(t) * d];
                if (L.post_attn_norm) rmsnorm(o, L.post_attn_norm, d, cfg_.rms_eps, o);
                float* x = &x_[size_t(t) * d];
                for (int i = 0; i < d; ++i) x[i] += o[i];
                rmsnorm(x, L.ffn_norm, d, cfg_.rms_eps, &xn_[size_t(t) * d]);
            }
            if (observe_) observe_(il, InputSite::FfnIn, xn_.data(), d, n);
            const MatJob gate_up[2] = {{&L.w_gate, gate_.data()}, {&L.w_up, up_.data()}};
            matmul_many(gate_up, 2, xn_.data(), n);
            const size_t nf = size_t(n) * cfg_.d_ff;
            for (size_t i = 0; i < nf; ++i) {
                const float g = cfg_.gelu ? gelu_table(gate_[i]) : silu(gate_[i]);
                gate_[i] = g * up_[i];
            }
            if (observe_) observe_(il, InputSite::FfnMid, gate_.data(), cfg_.d_ff, n);
            matmul(L.w_down, gate_.data(), n, o_.data());
            for (int t = 0; t < n; ++t) {
                float* o = &o_[size_t(t) * d];
                if (L.post_ffn_norm) rmsnorm(o, L.post_ffn_norm, d, cfg_.rms_eps, o);
                float* x = &x_[size_t(t) * d];
                for (int i = 0; i < d; ++i) x[i] += o[i];
            }
        }
        // Logits: the last position only, unless every position was asked for.
        const int first = all_logits ? 0 : n - 1;
        for (int t = first; t < n; ++t) rmsnorm(&x_[size_t(t) * d], w_.output_norm, d, cfg_.rms_eps, &xn_[size_t(t - first) * d]);
        const bool last_batch = done + n == n_total;
        if (observe_ && (all_logits || last_batch)) observe_(-1, InputSite::Output, xn_.data(), d, n - first);
        if (all_logits) matmul(w_.output, xn_.data(), n, &logits_[size_t(done) * cfg_.n_vocab]);
        else if (last_batch) matmul(w_.output, xn_.data(), 1, logits_.data());
        cached_.insert(cached_.end(), tokens + done, tokens + done + n);
        done += n;
    }
    return Status{};
}

int Engine::reuse_prefix(const std::vector<int32_t>& prompt) {
    size_t common = 0;
    while (common < cached_.size() && common < prompt.size() && cached_[common] == prompt[common]) ++common;
    if (common == prompt.size()) --common;  // the last prompt token always runs, for its logits
    truncate_cache(static_cast<int>(common));
    return static_cast<int>(common);
}

void Engine::truncate_cache(int n) {
    if (n < static_cast<int>(cached_.size())) cached_.resize(size_t(std::max(0, n)));
}

namespace {
double log_softmax_at(const float* logits, int n, int32_t id) {
    float mx = logits[0];
    for (int i = 1; i < n; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
    return static_cast<double>(logits[id] - mx) - std::log(sum);
}
}  // namespace

Status Engine::score(const std::vector<int32_t>& prompt, const std::vector<std::vector<int32_t>>& continuations,
                     std::vector<double>* logprobs) {
    if (prompt.empty()) return Status::error(ErrorCode::InvalidArgument, "the prompt is empty");
    size_t longest = 0;
    for (const auto& c : continuations) {
        if (c.empty()) return Status::error(ErrorCode::InvalidArgument, "a label has no tokens");
        longest = std::max(longest, c.size());
    }
    if (prompt.size() + longest > static_cast<size_t>(kv_.n_ctx()))
        return Status::error(ErrorCode::InvalidArgument, "the text and labels have " + std::to_string(prompt.size() + longest) +
                                                             " tokens, over the context size of " + std::to_string(kv_.n_ctx()));
    const int common = reuse_prefix(prompt);
    Status st = forward(prompt.data() + common, static_cast<int>(prompt.size()) - common, common);
    if (!st.ok()) return st;
    const std::vector<float> after_prompt = logits_;
    const int n_prompt = static_cast<int>(prompt.size());
    logprobs->clear();
    for (const auto& c : continuations) {
        double lp = log_softmax_at(after_prompt.data(), cfg_.n_vocab, c[0]);
        if (c.size() > 1) {
            truncate_cache(n_prompt);
            st = forward(c.data(), static_cast<int>(c.size() - 1), n_prompt, /*all_logits=*/true);
            if (!st.ok()) return st;
            for (size_t k = 1; k < c.size(); ++k)
                lp += log_softmax_at(&logits_[(k - 1) * size_t(cfg_.n_vocab)], cfg_.n_vocab, c[k]);
        }
        truncate_cache(n_prompt);
        logprobs->push_back(lp);
    }
    return Status{};
}

Status Engine::generate(const std::vector<int32_t>& prompt, const GenerateOptions& options, GenerateResult* result) {
    GenerateResult r;
    r.prompt_tokens = static_cast<int>(prompt.size());
    if (prompt.empty()) return Status::error(ErrorCode::InvalidArgument, "the prompt is empty");
    if (static_cast<int>(prompt.size()) > kv_.n_ctx())
        return Status::error(ErrorCode::InvalidArgument, "the prompt has " + std::to_string(prompt.size()) +
                                                             " tokens, over the context size of " + std::to_string(kv_.n_ctx()));
    // Reuse the KV of the longest common prefix with what is cached (a fixed prompt template's
    // prefix is computed once); at least the last prompt token runs again to produce logits.
    const int common = reuse_prefix(prompt);
    r.reused_tokens = common;

    const auto t0 = Clock::now();
    Status st = forward(prompt.data() + common, static_cast<int>(prompt.size()) - common, common);
    if (!st.ok()) return st;
    Sampler sampler(options.sampling);
    int32_t next = sampler.sample(logits_.data(), cfg_.n_vocab);
    r.prefill_ms = r.ttft_ms = ms_since(t0);
    const auto t1 = Clock::now();
    for (;;) {
        if (options.is_end && options.is_end(next)) {
            r.stop = StopReason::EndOfGeneration;
            break;
        }
        r.tokens.push_back(next);
        if (options.on_token && !options.on_token(next)) {
            r.stop = StopReason::Callback;
            break;
        }
        if (static_cast<int>(r.tokens.size()) >= options.max_tokens) {
            r.stop = StopReason::MaxTokens;
            break;
        }
        const int pos = static_cast<int>(cached_.size());
        if (pos >= kv_.n_ctx()) {
            r.stop = StopReason::ContextFull;
            break;
        }
        st = forward(&next, 1, pos);
        if (!st.ok()) return st;
        next = sampler.sample(logits_.data(), cfg_.n_vocab);
    }
    r.decode_ms = ms_since(t1);
    *result = std::move(r);
    return Status{};
}

}  // namespace hmllm
