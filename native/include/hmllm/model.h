// A model's hyper-parameters and weights, bound to a GGUF file. Weights are views into the
// read-only mapping (MatView / float pointers), never copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hmllm/gguf_reader.h"
#include "hmllm/kernels.h"
#include "hmllm/status.h"

namespace hmllm {

enum class Arch { Llama, Qwen2, Qwen3, Gemma3 };

struct ModelConfig {
    Arch arch = Arch::Llama;
    std::string arch_name;
    int n_layers = 0;
    int d_model = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int d_ff = 0;
    int n_vocab = 0;
    int ctx_train = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;        // global attention layers
    float rope_base_local = 10000.0f;  // sliding-window layers (gemma3)
    bool rope_neox = false;            // rotate halves (qwen2, qwen3, gemma3) vs adjacent pairs (llama)
    float rope_freq_scale = 1.0f;      // linear RoPE scaling: angles times 1 / <arch>.rope.scaling.factor
    int sliding_window = 0;            // 0: no sliding-window layers
    float attn_scale = 1.0f;           // applied to q before q·k
    // The few lines in which the architectures differ:
    bool qkv_bias = false;     // qwen2
    bool qk_norm = false;      // qwen3, gemma3: RMS-norm each q and k head before RoPE
    bool post_norms = false;   // gemma3: norm after attention and after the FFN, before the residual
    bool gelu = false;         // gemma3: GELU-tanh gated FFN (llama/qwen2: SiLU)
    float embed_scale = 1.0f;  // gemma3: sqrt(d_model)
};

struct LayerWeights {
    MatView wq, wk, wv, wo, w_gate, w_up, w_down;
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    const float* post_attn_norm = nullptr;
    const float* post_ffn_norm = nullptr;
    const float* bq = nullptr;
    const float* bk = nullptr;
    const float* bv = nullptr;
    bool sliding = false;
};

struct ModelWeights {
    MatView tok_embd;
    MatView output;  // the token embedding itself when the output is tied
    const float* output_norm = nullptr;
    // Llama 3.x rope scaling: head_dim / 2 factors that divide each rotary frequency (llama.cpp's
    // freq_factors; one tensor shared by every layer). nullptr: no scaling.
    const float* rope_freqs = nullptr;
    std::vector<LayerWeights> layers;
    uint64_t weight_bytes = 0;  // bytes of all tensors the forward pass reads
    // The matrices interleaved at load (MatView::interleaved) live here, their file pages given
    // back; shared so that copies of these weights keep them alive.
    std::shared_ptr<uint8_t[]> interleaved_store;
    uint64_t interleaved_bytes = 0;
    double interleave_ms = 0;  // what interleaving cost this load (part of a cold first token)
};

// Reads the config from metadata and binds every tensor; a missing tensor, a wrong shape or an
// unsupported type is an error naming the tensor.
// The weights are views into the mapping: nothing is copied.
Status load_model(const GgufFile& gguf, ModelConfig* config, ModelWeights* weights);

// Interleaves the matrices the active kernel set reads faster that way (kernels.h) into memory the
// weights then own, a slice of rows at a time, giving each slice's file pages back (drop_pages) as
// soon as it is copied: resident memory stays about the file's size (the bytes move, they are not
// doubled), the peak one slice (1 MB) above it. Without the memory for the copy the file layout
// is kept, which every kernel set also computes with. A session does this once after load_model;
// interleaving the same file twice would hold two copies.
void interleave_weights(const GgufFile& gguf, ModelWeights* weights);

}  // namespace hmllm
