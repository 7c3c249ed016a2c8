#include "hmllm/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>

namespace hmllm {
namespace {

// The matrices stored as W·R (MatView::rotated), written by hmbuild quantize.
const std::string kRotatedKey = "hmllm.rotated_inputs";

// "[64, 300]": every dimension the file declares, so a stray third one shows.
std::string shape_of(const GgufTensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

struct Binder {
    const GgufFile& gguf;
    Status status;
    uint64_t bytes = 0;
    std::set<std::string> rotated;  // hmllm.rotated_inputs: matrices stored as W·R
    std::set<std::string> bound;    // the matrices bound so far

    Status fail(ErrorCode code, const std::string& msg) {
        if (status.ok()) status = Status::error(code, gguf.mapping().path() + ": " + msg);
        return status;
    }

    const GgufTensorInfo* find(const std::string& name, bool required) {
        const GgufTensorInfo* t = gguf.find_tensor(name);
        if (!t && required) fail(ErrorCode::InvalidModel, "tensor " + name + " is missing");
        return t;
    }

    // A 2-D weight [n_rows][n_cols] (ggml ne = {n_cols, n_rows}).
    MatView matrix(const std::string& name, int64_t n_cols, int64_t n_rows, bool required = true) {
        MatView m{};
        const GgufTensorInfo* t = find(name, required);
        if (!t) return m;
        if (t->ne[0] != n_cols || t->ne[1] != n_rows || t->ne[2] != 1 || t->ne[3] != 1) {
            fail(ErrorCode::InvalidModel, "tensor " + name + " has shape " + shape_of(*t) + ", expected [" +
                                              std::to_string(n_cols) + ", " + std::to_string(n_rows) + "]");
            return m;
        }
        if (!kernel_supported(t->type)) {  // load_model refused the file already; kept for other callers
            fail(ErrorCode::UnsupportedModel, unrunnable_tensor_message(name, t->type));
            return m;
        }
        if (n_rows % row_granularity(t->type) != 0) {
            fail(ErrorCode::InvalidModel, "tensor " + name + " has a row count its type cannot tile");
            return m;
        }
        m.rotated = rotated.count(name) > 0;
        if (m.rotated && n_cols % kRotationBlock != 0) {
            fail(ErrorCode::InvalidModel, "tensor " + name + " is listed in hmllm.rotated_inputs but its " +
                                              std::to_string(n_cols) + " columns are not whole blocks of " +
                                              std::to_string(kRotationBlock));
            return m;
        }
        bytes += t->n_bytes;
        bound.insert(name);
        m.type = t->type;
        m.data = t->data;
        m.n_cols = n_cols;
        m.n_rows = n_rows;
        return m;
    }

    const float* vector(const std::string& name, int64_t n, bool required = true) {
        const GgufTensorInfo* t = find(name, required);
        if (!t) return nullptr;
        if (t->type != static_cast<uint32_t>(GgmlType::F32) || t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 ||
            t->ne[3] != 1) {
            fail(ErrorCode::UnsupportedModel, "tensor " + name + " must be an F32 vector of " + std::to_string(n));
            return nullptr;
        }
        bytes += t->n_bytes;
        return reinterpret_cast<const float*>(t->data);
    }
};

// Reads one integer hyper-parameter into *out. An absent optional key keeps the default; a
// present one must be an integer in [lo, hi], and the error names the key, so a forged value
// never reaches an allocation size or a loop bound.
Status read_param(const GgufFile& g, const std::string& key, int64_t lo, int64_t hi, bool required, int* out) {
    const std::string& path = g.mapping().path();
    uint32_t type;
    if (!g.get_value_type(key, &type)) {
        if (!required) return Status{};
        return Status::error(ErrorCode::InvalidModel, path + " lacks the required key " + key);
    }
    int64_t v;
    if (!g.get_i64(key, &v))
        return Status::error(ErrorCode::InvalidModel, path + ": " + key + " must be an integer from " +
                                                          std::to_string(lo) + " to " + std::to_string(hi));
    if (v < lo || v > hi)
        return Status::error(ErrorCode::InvalidModel, path + ": " + key + " is " + std::to_string(v) + ", outside " +
                                                          std::to_string(lo) + " to " + std::to_string(hi));
    *out = static_cast<int>(v);
    return Status{};
}

std::string shortest(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
}

// The float counterpart: absent keeps the default; present must be a finite number in [lo, hi].
Status read_float_param(const GgufFile& g, const std::string& key, float lo, float hi, float* out) {
    uint32_t type;
    if (!g.get_value_type(key, &type)) return Status{};
    float v;
    if (!g.get_f32(key, &v) || !std::isfinite(v) || v < lo || v > hi)
        return Status::error(ErrorCode::InvalidModel, g.mapping().path() + ": " + key + " must be a number from " +
                                                          shortest(lo) + " to " + shortest(hi));
    *out = v;
    return Status{};
}

// RoPE scaling as llama.cpp reads it: a missing type means linear, whose factor (default 1)
// divides every angle; "none" scales nothing. YaRN and LongRoPE change the rotation itself, and a
// partial rotary dimension rotates only part of each head: refused rather than computed wrongly.
Status read_rope_scaling(const GgufFile& g, const std::string& a, int head_dim, float* freq_scale) {
    const std::string& path = g.mapping().path();
    std::string type = "linear";
    if (g.has_key(a + ".rope.scaling.type") && !g.get_string(a + ".rope.scaling.type", &type))
        return Status::error(ErrorCode::InvalidModel, path + ": " + a + ".rope.scaling.type must be a string");
    if (type != "linear" && type != "none")
        return Status::error(ErrorCode::UnsupportedModel, path + " uses '" + type +
                                                              "' RoPE scaling; this runtime supports none, linear "
                                                              "and Llama 3's rope_freqs");
    float factor = 1.0f;
    Status st = read_float_param(g, a + ".rope.scaling.factor", 0.0f, 1024.0f, &factor);
    if (!st.ok()) return st;
    *freq_scale = (type == "none" || factor == 0.0f) ? 1.0f : 1.0f / factor;
    int n_rot = head_dim;
    st = read_param(g, a + ".rope.dimension_count", 1, 1024, false, &n_rot);
    if (!st.ok()) return st;
    if (n_rot != head_dim)
        return Status::error(ErrorCode::UnsupportedModel, path + " rotates " + std::to_string(n_rot) + " of " +
                                                              std::to_string(head_dim) +
                                                              " dimensions per head; this runtime rotates whole heads");
    return Status{};
}

}  // namespace

void interleave_weights(const GgufFile& gguf, ModelWeights* mw) {
    std::vector<MatView*> views = {&mw->tok_embd, &mw->output};
    for (LayerWeights& l : mw->layers)
        for (MatView* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) views.push_back(m);
    // Each tensor once (a tied output is the embedding's view), in file order.
    std::vector<const uint8_t*> sources;
    for (const MatView* m : views)
        if (m->data && m->n_rows % 4 == 0 && interleave_pays(m->type)) sources.push_back(m->data);
    std::sort(sources.begin(), sources.end());
    sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
    if (sources.empty()) return;
    auto view_of = [&](const uint8_t* p) {
        for (MatView* m : views)
            if (m->data == p) return m;
        return static_cast<MatView*>(nullptr);
    };
    uint64_t total = 0;
    for (const uint8_t* p : sources) {
        const MatView* m = view_of(p);
        total += row_bytes(m->type, m->n_cols) * uint64_t(m->n_rows);
    }
    if (total > SIZE_MAX) return;
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<uint8_t[]> store(new (std::nothrow) uint8_t[static_cast<size_t>(total)]);
    if (!store) return;
    const MappedFile& file = gguf.mapping();
    uint8_t* out = store.get();
    for (const uint8_t* p : sources) {
        const MatView* m = view_of(p);
        const size_t rb = row_bytes(m->type, m->n_cols);
        const int64_t slice = std::max<int64_t>(4, int64_t(1 << 20) / int64_t(rb) / 4 * 4);  // ~1 MB
        for (int64_t r = 0; r < m->n_rows; r += slice) {
            const int64_t r1 = std::min(m->n_rows, r + slice);
            interleave_rows(m->type, p, m->n_cols, r, r1, out + size_t(r) * rb);
            // From the previous slice's start, so the page the two share goes too.
            const int64_t from = std::max<int64_t>(0, r - slice);
            file.drop_pages(size_t(p - file.data()) + size_t(from) * rb, size_t(r1 - from) * rb);
        }
        for (MatView* v : views)
            if (v->data == p) {
                v->data = out;
                v->interleaved = true;
            }
        out += size_t(m->n_rows) * rb;
    }
    mw->interleaved_store = std::move(store);
    mw->interleaved_bytes = total;
    mw->interleave_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}


Status load_model(const GgufFile& gguf, ModelConfig* cfg, ModelWeights* w) {
    ModelConfig c;
    c.arch_name = gguf.architecture();
    const std::string& a = c.arch_name;
    const std::string& path = gguf.mapping().path();
    if (a == "llama") c.arch = Arch::Llama;
    else if (a == "qwen2") c.arch = Arch::Qwen2;
    else if (a == "qwen3") c.arch = Arch::Qwen3;
    else if (a == "gemma3") c.arch = Arch::Gemma3;
    else if (a.empty()) return Status::error(ErrorCode::InvalidModel, path + " has no general.architecture");
    else return Status::error(ErrorCode::UnsupportedModel,
                              path + " is a '" + a + "' model; supported: llama, qwen2, qwen3, gemma3");

    // A file holding any tensor this runtime cannot compute with is refused here, whichever tensor
    // it is, before anything is read from it (the GGUF reader already refused the types it cannot size).
    for (const GgufTensorInfo& t : gguf.tensors())
        if (!kernel_supported(t.type))
            return Status::error(ErrorCode::UnsupportedModel, path + " cannot be loaded: " + unrunnable_tensor_message(t.name, t.type));

    constexpr int64_t kIntMax = 0x7fffffff;
    Status st;
    for (const auto& [key, lo, hi, out] : {std::tuple{".block_count", 1, 1024, &c.n_layers},
                                           std::tuple{".embedding_length", 1, 65536, &c.d_model},
                                           std::tuple{".attention.head_count", 1, 1024, &c.n_heads},
                                           std::tuple{".feed_forward_length", 1, 1 << 20, &c.d_ff}}) {
        if (!(st = read_param(gguf, a + key, lo, hi, true, out)).ok()) return st;
    }
    c.n_kv_heads = c.n_heads;
    c.head_dim = c.d_model / c.n_heads;
    int v_dim = 0;
    if (!(st = read_param(gguf, a + ".attention.head_count_kv", 1, c.n_heads, false, &c.n_kv_heads)).ok() ||
        !(st = read_param(gguf, a + ".attention.key_length", 1, 1024, false, &c.head_dim)).ok())
        return st;
    v_dim = c.head_dim;
    if (!(st = read_param(gguf, a + ".attention.value_length", 1, 1024, false, &v_dim)).ok()) return st;
    if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0 || c.head_dim <= 0 || c.head_dim % 2 != 0 ||
        v_dim != c.head_dim || c.head_dim > 1024)
        return Status::error(ErrorCode::UnsupportedModel,
                             path + " has " + std::to_string(c.n_heads) + " attention heads, " +
                                 std::to_string(c.n_kv_heads) + " KV heads, key length " + std::to_string(c.head_dim) +
                                 " and value length " + std::to_string(v_dim) +
                                 ", an attention layout this runtime does not support (heads must be a multiple of "
                                 "KV heads, and the key length even and equal to the value length)");
    c.ctx_train = 2048;
    if (!(st = read_param(gguf, a + ".context_length", 1, kIntMax, false, &c.ctx_train)).ok()) return st;
    if (!(st = read_float_param(gguf, a + ".attention.layer_norm_rms_epsilon", 0.0f, 1.0f, &c.rms_eps)).ok()) return st;
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

    switch (c.arch) {
        case Arch::Llama:
            break;
        case Arch::Qwen2:
            c.qkv_bias = true;
            c.rope_neox = true;
            c.rope_base = 1000000.0f;
            break;
        case Arch::Qwen3:
            // No QKV bias; each head's q and k RMS-normed before RoPE. The RoPE base, when the file
            // lacks it, is llama.cpp's default 10000 (real Qwen3 files carry 1000000).
            c.qk_norm = true;
            c.rope_neox = true;
            break;
        case Arch::Gemma3:
            c.qk_norm = true;
            c.post_norms = true;
            c.gelu = true;
            c.rope_neox = true;
            c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
            c.rope_base = 1000000.0f;
            c.rope_base_local = 10000.0f;  // fixed by the architecture, not stored in the file
            c.sliding_window = 512;
            if (!(st = read_param(gguf, a + ".attention.sliding_window", 1, kIntMax, false, &c.sliding_window)).ok())
                return st;
            break;
    }
    if (!(st = read_float_param(gguf, a + ".rope.freq_base", 1.0f, 1e12f, &c.rope_base)).ok()) return st;
    if (!(st = read_rope_scaling(gguf, a, c.head_dim, &c.rope_freq_scale)).ok()) return st;

    Binder b{gguf, Status{}, 0, {}, {}};
    if (gguf.has_key(kRotatedKey)) {
        GgufStringArray names;
        if (!gguf.get_string_array(kRotatedKey, &names))
            return Status::error(ErrorCode::InvalidModel,
                                 gguf.mapping().path() + ": " + kRotatedKey + " must be an array of tensor names");
        for (size_t i = 0; i < names.size(); ++i) b.rotated.insert(std::string(names[i]));
    }
    const GgufTensorInfo* emb = b.find("token_embd.weight", true);
    if (!emb) return b.status;
    c.n_vocab = static_cast<int>(emb->ne[1]);
    ModelWeights mw;
    const int64_t d = c.d_model, q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
    mw.tok_embd = b.matrix("token_embd.weight", d, c.n_vocab);
    mw.output_norm = b.vector("output_norm.weight", d);
    if (gguf.find_tensor("output.weight")) mw.output = b.matrix("output.weight", d, c.n_vocab);
    else mw.output = mw.tok_embd;  // tied output (gemma3, small llamas and qwens)
    // Llama 3.x rope scaling (convert_hf_to_gguf writes it from rope_scaling "llama3"); llama.cpp
    // reads it for llama only, so another family's copy is left unused, as there.
    if (c.arch == Arch::Llama && gguf.find_tensor("rope_freqs.weight")) {
        mw.rope_freqs = b.vector("rope_freqs.weight", c.head_dim / 2);
        for (int i = 0; mw.rope_freqs && i < c.head_dim / 2; ++i)
            if (!std::isfinite(mw.rope_freqs[i]) || mw.rope_freqs[i] <= 0.0f)
                return Status::error(ErrorCode::InvalidModel, path + ": rope_freqs.weight must hold positive numbers");
    }
    for (int il = 0; il < c.n_layers && b.status.ok(); ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights l;
        l.attn_norm = b.vector(p + "attn_norm.weight", d);
        l.wq = b.matrix(p + "attn_q.weight", d, q_dim);
        l.wk = b.matrix(p + "attn_k.weight", d, kv_dim);
        l.wv = b.matrix(p + "attn_v.weight", d, kv_dim);
        l.wo = b.matrix(p + "attn_output.weight", q_dim, d);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", d);
        l.w_gate = b.matrix(p + "ffn_gate.weight", d, c.d_ff);
        l.w_up = b.matrix(p + "ffn_up.weight", d, c.d_ff);
        l.w_down = b.matrix(p + "ffn_down.weight", c.d_ff, d);
        if (c.qkv_bias) {
            l.bq = b.vector(p + "attn_q.bias", q_dim);
            l.bk = b.vector(p + "attn_k.bias", kv_dim);
            l.bv = b.vector(p + "attn_v.bias", kv_dim);
        }
        if (c.qk_norm) {
            l.q_norm = b.vector(p + "attn_q_norm.weight", c.head_dim);
            l.k_norm = b.vector(p + "attn_k_norm.weight", c.head_dim);
        }
        if (c.post_norms) {
            l.post_attn_norm = b.vector(p + "post_attention_norm.weight", d);
            l.post_ffn_norm = b.vector(p + "post_ffw_norm.weight", d);
        }
        // Gemma 3 interleaves five sliding-window layers with one global layer.
        l.sliding = c.arch == Arch::Gemma3 && (il % 6) != 5;
        mw.layers.push_back(l);
    }
    if (!b.status.ok()) return b.status;
    for (const std::string& name : b.rotated) {
        // A matrix the file holds but this architecture does not use is harmless; anything else is a
        // list that does not describe the file.
        const GgufTensorInfo* t = b.bound.count(name) ? nullptr : gguf.find_tensor(name);
        if (!b.bound.count(name) && (!t || t->n_dims != 2 || t->ne[0] % kRotationBlock != 0))
            return Status::error(ErrorCode::InvalidModel, gguf.mapping().path() + ": " + kRotatedKey + " names " +
                                                              name + ", which is not a weight matrix of this model");
    }
    mw.weight_bytes = b.bytes;
    *cfg = c;
    *w = std::move(mw);
    return Status{};
}

}  // namespace hmllm
