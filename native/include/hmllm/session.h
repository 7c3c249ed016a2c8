// A loaded model and what one app-facing session needs around it: the mapping, the tokenizer
// and the engine. The NAPI layer (napi/), the command-line tools and the native tests use only
// this header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hmllm/chat_format.h"
#include "hmllm/engine.h"
#include "hmllm/gguf_reader.h"
#include "hmllm/model.h"
#include "hmllm/status.h"
#include "hmllm/tokenizer.h"

namespace hmllm {

struct SessionOptions {
    int threads = 0;            // 0: the number of big cores (4 when unknown)
    int context_size = 2048;    // tokens; bounded by the model's training context
    KvType kv_type = KvType::F16;
    uint64_t memory_budget_bytes = 0;  // 0: no limit
    bool high_priority = true;         // raise the inference threads' priority where permitted
    // The compiled chat format (hmbuild-chat JSON, docs/chat.md) that chat() applies; "": none.
    std::string chat_format;
};

struct InferRequest {
    int max_tokens = 128;
    SamplingOptions sampling;
    // Each piece of text as it is decoded (whole UTF-8 characters only); return false to stop.
    std::function<bool(const std::string&)> on_piece;
    // Asked before every new token (cancel, timeout); true stops with what has been generated.
    std::function<bool()> should_stop;
    // Generation stops when the text ends with one of these (the stop string is not returned).
    std::vector<std::string> stop;
};

struct ClassifyOptions {
    // Labelled few-shot examples as (text, label), placed before the text; they help small base
    // models a lot.
    std::vector<std::pair<std::string, std::string>> examples;
    // Subtract each label's score on an empty text: a small base model leans towards the last
    // example's label and towards common words whatever the text says, and the same lean shows on
    // the empty text. Those scores are computed once per labels and examples and kept.
    bool calibrate = false;
};

struct ClassifyResult {
    int best = -1;                    // index into the labels, by `scores`
    std::vector<double> scores;       // log-probability of each label after the prompt, minus the
                                      // empty text's when calibrated
    std::vector<double> raw_scores;   // log-probability of each label after the prompt
    bool calibrated = false;
};

struct InferResult {
    std::string text;
    std::vector<int32_t> prompt_tokens;
    GenerateResult generation;
    // What ended generation: the stop string that matched (the format's or the request's),
    // "eos" (another end-of-generation token), "max_tokens", "context_full", or "stopped"
    // (should_stop or on_piece asked to stop: a cancel or timeout, which the caller knows).
    std::string stop;
};

class Session {
public:
    // Maps and validates the model, builds the tokenizer and the engine; refuses a configuration
    // over the memory budget before allocating. The weights stay views into the mapping.
    static Status open(const std::string& model_path, const SessionOptions& options,
                       std::unique_ptr<Session>* out);

    // Prompt text fed as-is after BOS; generation until end-of-generation or max_tokens.
    Status generate(std::string_view prompt, const InferRequest& request, InferResult* result);
    // The same with prompt token ids instead of text (evaluation, tests with tiny vocabularies).
    Status generate_tokens(const std::vector<int32_t>& prompt, const InferRequest& request, InferResult* result);

    // A conversation in the session's chat format: the messages validated and rendered with the
    // generation prompt, tokenized with special tokens recognised and no extra BOS, and generated
    // until an end-of-turn or end-of-generation token, a stop string, or max_tokens. The KV cache
    // keeps the longest common prefix with the previous request, so a conversation that grows by
    // a turn only prefills the new turns. Refused (InvalidArgument, one sentence): no chat format,
    // messages the format refuses, a prompt that leaves no room for max_tokens in the context.
    Status chat(const std::vector<ChatMessage>& messages, const InferRequest& request, InferResult* result);
    // The steps of chat() for callers that want the token count first (the NAPI layer reports it
    // with a refusal): whether a prompt of n tokens leaves max_tokens of room, and generation from
    // chat_prompt()'s tokens with the format's stops.
    Status check_chat_fits(size_t n_prompt, int max_tokens) const;
    Status chat_tokens(const std::vector<int32_t>& prompt, const InferRequest& request, InferResult* result);
    // The prompt chat() would feed: its text and token ids (validated as chat() does).
    Status chat_prompt(const std::vector<ChatMessage>& messages, std::string* text, std::vector<int32_t>* tokens) const;
    const ChatFormat* chat_format() const { return has_chat_format_ ? &chat_format_ : nullptr; }

    // Intent recognition by label likelihood: scores " <label>" after
    //   Text: "<text>"\nIntent (one of: a, b, c):
    // (optionally preceded by labelled examples, and calibrated: see ClassifyOptions).
    Status classify(std::string_view text, const std::vector<std::string>& labels, const ClassifyOptions& options,
                    ClassifyResult* result);

    // Touches every page of the mapped weights and runs one token, so the first request does not
    // pay for page faults; the BOS it leaves in the KV cache is reused by the next prompt.
    Status warmup();

    // Frees the engine and unmaps the model now; idempotent. Any later request fails.
    void release();
    bool released() const { return released_; }

    const GgufFile& model() const { return model_; }
    const Tokenizer& tokenizer() const { return tokenizer_; }
    // The bound weights (interleaved where the kernels prefer it: interleaved_bytes, interleave_ms).
    const ModelWeights& weights() const { return weights_; }
    Engine& engine() { return *engine_; }
    const SessionOptions& options() const { return options_; }
    int threads() const { return engine_ ? engine_->threads() : 0; }
    bool priority_raised() const { return priority_raised_; }

private:
    Session() = default;
    Status run(const std::vector<int32_t>& prompt, const InferRequest& request, const ChatStops* stops,
               InferResult* result);
    GgufFile model_;
    Tokenizer tokenizer_;
    ModelConfig config_;
    ModelWeights weights_;
    std::unique_ptr<Engine> engine_;
    SessionOptions options_;
    bool released_ = false;
    bool priority_raised_ = false;
    bool has_chat_format_ = false;
    ChatFormat chat_format_;
    ChatStops chat_stops_;  // the format's stop strings for this vocabulary
    // The empty text's label scores for calibration, and the labels and examples they are for.
    std::string calibration_key_;
    std::vector<double> calibration_scores_;
};

}  // namespace hmllm
