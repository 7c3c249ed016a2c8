#include "hmllm/session.h"

#include <algorithm>
#include <atomic>

#include "hmllm/cpu_topology.h"

namespace hmllm {

Status Session::open(const std::string& model_path, const SessionOptions& options, std::unique_ptr<Session>* out) {
    std::unique_ptr<Session> s(new Session());
    // The chat format first: a bad one is refused before the model is mapped.
    if (!options.chat_format.empty()) {
        Status st = ChatFormat::parse(options.chat_format, &s->chat_format_);
        if (!st.ok()) return st;
        s->has_chat_format_ = true;
    }
    Status st = GgufFile::open(model_path, &s->model_);
    if (!st.ok()) return st;
    st = load_model(s->model_, &s->config_, &s->weights_);
    if (!st.ok()) return st;
    st = Tokenizer::load(s->model_, &s->tokenizer_);
    if (!st.ok()) return Status::error(st.code, model_path + ": " + st.message);
    // Token ids index the embedding rows and logits index the vocabulary: both must agree, or a
    // token would read past its tensor.
    if (s->tokenizer_.n_vocab() != s->config_.n_vocab)
        return Status::error(ErrorCode::InvalidModel, model_path + ": the vocabulary has " +
                                                          std::to_string(s->tokenizer_.n_vocab()) +
                                                          " tokens but token_embd.weight has " +
                                                          std::to_string(s->config_.n_vocab) + " rows");
    // No format given: the one `hmbuild chat-template MODEL.gguf --embed OUT.gguf` wrote into the
    // model's metadata, so the format travels (and is verified) with the model file.
    std::string embedded;
    if (!s->has_chat_format_ && s->model_.get_string("hmbuild.chat_format", &embedded)) {
        st = ChatFormat::parse(embedded, &s->chat_format_);
        if (!st.ok())
            return Status::error(ErrorCode::InvalidModel, model_path + ": its embedded hmbuild.chat_format is "
                                 "unreadable (" + st.message + "); embed it again with hmbuild chat-template --embed");
        s->has_chat_format_ = true;
    }
    s->options_ = options;
    // Last of the checks passed: now the one copy a load makes (interleaved matrices, if any).
    interleave_weights(s->model_, &s->weights_);
    if (s->has_chat_format_) s->chat_stops_ = resolve_chat_stops(s->chat_format_.stop, s->tokenizer_);
    // Threads = big cores (4 when unknown), owned by the engine's pool, pinned to the big cores
    // and given a raised priority where the system allows it.
    const CpuTopology topo = read_cpu_topology();
    EngineOptions eo;
    eo.threads = options.threads > 0 ? options.threads : default_thread_count(topo);
    eo.own_threads = true;
    eo.context_size = options.context_size;
    eo.kv_type = options.kv_type;
    eo.memory_budget_bytes = options.memory_budget_bytes;
    st = Engine::create(s->config_, s->weights_, eo, &s->engine_);
    if (!st.ok()) return st;
    std::atomic<int> raised{0};
    const bool high = options.high_priority;
    s->engine_->pool().on_each_thread([&](int) {
        if (place_inference_thread(topo.big_cores, high).priority_raised) raised++;
    });
    s->priority_raised_ = high && raised.load() == s->engine_->threads();
    *out = std::move(s);
    return Status{};
}

Status Session::generate_tokens(const std::vector<int32_t>& prompt, const InferRequest& request, InferResult* result) {
    return run(prompt, request, nullptr, result);
}

Status Session::run(const std::vector<int32_t>& prompt, const InferRequest& request, const ChatStops* stops,
                    InferResult* result) {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    InferResult r;
    r.prompt_tokens = prompt;
    TokenStreamDecoder decoder(tokenizer_);
    GenerateOptions go;
    go.max_tokens = request.max_tokens;
    go.sampling = request.sampling;
    int32_t end_token = -1;
    go.is_end = [&](int32_t id) {
        const bool stop_id = stops && std::find(stops->ids.begin(), stops->ids.end(), id) != stops->ids.end();
        if (!stop_id && !tokenizer_.is_end_of_generation(id)) return false;
        end_token = id;
        return true;
    };
    std::vector<std::string> texts = request.stop;
    if (stops) texts.insert(texts.end(), stops->texts.begin(), stops->texts.end());
    const std::string* matched = nullptr;
    go.on_token = [&](int32_t id) {
        if (request.should_stop && request.should_stop()) return false;
        std::string piece = decoder.push(id);
        const size_t before = r.text.size();
        r.text += piece;
        for (const std::string& stop : texts) {
            const size_t at = stop.empty() ? std::string::npos : r.text.find(stop, before >= stop.size() ? before - stop.size() + 1 : 0);
            if (at != std::string::npos) {
                // Emit only what precedes the stop string, then end.
                if (request.on_piece && at > before) request.on_piece(r.text.substr(before, at - before));
                r.text.resize(at);
                matched = &stop;
                return false;
            }
        }
        if (request.on_piece && !piece.empty()) return request.on_piece(piece);
        return true;
    };
    Status st = engine_->generate(prompt, go, &r.generation);
    if (!st.ok()) return st;
    if (!matched) {
        std::string tail = decoder.flush();
        r.text += tail;
        if (request.on_piece && !tail.empty()) request.on_piece(tail);
    } else {
        r.generation.stop = StopReason::EndOfGeneration;  // a stop string is a normal end
    }
    if (matched) {
        r.stop = *matched;
    } else if (r.generation.stop == StopReason::EndOfGeneration) {
        r.stop = "eos";
        if (stops)
            for (size_t i = 0; i < stops->ids.size(); ++i)
                if (stops->ids[i] == end_token) r.stop = stops->id_texts[i];
    } else {
        r.stop = r.generation.stop == StopReason::Callback ? "stopped" : stop_reason_name(r.generation.stop);
    }
    *result = std::move(r);
    return Status{};
}

namespace {
Status no_chat_format() {
    return Status::error(ErrorCode::InvalidArgument,
                         "this session has no chat format; open it with the compiled format "
                         "(InitOptions.chatFormat: the output of hmbuild chat-template MODEL.gguf --json), or "
                         "use a model file that carries one (hmbuild chat-template MODEL.gguf --embed OUT.gguf)");
}
}  // namespace

Status Session::chat_prompt(const std::vector<ChatMessage>& messages, std::string* text, std::vector<int32_t>* tokens) const {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    if (!has_chat_format_) return no_chat_format();
    std::string prompt;
    Status st = chat_format_.render(messages, true, &prompt);
    if (!st.ok()) return st;
    *tokens = tokenize_chat_prompt(tokenizer_, prompt);
    *text = std::move(prompt);
    return Status{};
}

Status Session::check_chat_fits(size_t n_prompt, int max_tokens) const {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    const int n_ctx = engine_->context_size();
    if (static_cast<int64_t>(n_prompt) + max_tokens <= n_ctx) return Status{};
    return Status::error(ErrorCode::InvalidArgument,
                         "the conversation has " + std::to_string(n_prompt) + " tokens, and with " +
                             std::to_string(max_tokens) + " for the answer it does not fit the context of " +
                             std::to_string(n_ctx) + " tokens; drop the oldest turns or raise the context size");
}

Status Session::chat_tokens(const std::vector<int32_t>& prompt, const InferRequest& request, InferResult* result) {
    if (!has_chat_format_) return no_chat_format();
    Status st = check_chat_fits(prompt.size(), request.max_tokens);
    if (!st.ok()) return st;
    return run(prompt, request, &chat_stops_, result);
}

Status Session::chat(const std::vector<ChatMessage>& messages, const InferRequest& request, InferResult* result) {
    std::string text;
    std::vector<int32_t> prompt;
    Status st = chat_prompt(messages, &text, &prompt);
    if (!st.ok()) return st;
    return chat_tokens(prompt, request, result);
}

Status Session::generate(std::string_view prompt, const InferRequest& request, InferResult* result) {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    return generate_tokens(tokenizer_.encode(prompt, tokenizer_.add_bos()), request, result);
}

Status Session::classify(std::string_view text, const std::vector<std::string>& labels, const ClassifyOptions& options,
                         ClassifyResult* result) {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    if (labels.empty()) return Status::error(ErrorCode::InvalidArgument, "labels must not be empty");
    std::string joined;
    for (size_t i = 0; i < labels.size(); ++i) joined += (i ? ", " : "") + labels[i];
    std::string examples;
    for (const auto& [example, label] : options.examples)
        examples += "Text: \"" + example + "\"\nIntent (one of: " + joined + "): " + label + "\n\n";
    const auto prompt_for = [&](std::string_view t) {
        return examples + "Text: \"" + std::string(t) + "\"\nIntent (one of: " + joined + "):";
    };
    std::vector<std::vector<int32_t>> conts;
    for (const std::string& label : labels) conts.push_back(tokenizer_.encode(" " + label, false));
    ClassifyResult r;
    if (options.calibrate) {
        // The key: the empty text's prompt (examples and label list), then each label with its length.
        const std::string empty = prompt_for("");
        std::string key = empty;
        for (const std::string& label : labels) key += "\n" + std::to_string(label.size()) + ":" + label;
        if (key != calibration_key_) {
            calibration_key_.clear();
            Status st = engine_->score(tokenizer_.encode(empty, tokenizer_.add_bos()), conts, &calibration_scores_);
            if (!st.ok()) return st;
            calibration_key_ = std::move(key);
        }
    }
    Status st = engine_->score(tokenizer_.encode(prompt_for(text), tokenizer_.add_bos()), conts, &r.raw_scores);
    if (!st.ok()) return st;
    r.scores = r.raw_scores;
    if (options.calibrate) {
        for (size_t i = 0; i < r.scores.size(); ++i) r.scores[i] -= calibration_scores_[i];
        r.calibrated = true;
    }
    r.best = 0;
    for (size_t i = 1; i < r.scores.size(); ++i)
        if (r.scores[i] > r.scores[size_t(r.best)]) r.best = static_cast<int>(i);
    *result = std::move(r);
    return Status{};
}

Status Session::warmup() {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    model_.mapping().prefault();
    const int32_t first = tokenizer_.bos_id() >= 0 ? tokenizer_.bos_id() : 0;
    engine_->truncate_cache(0);
    return engine_->forward(&first, 1, 0);
}

void Session::release() {
    if (released_) return;
    released_ = true;
    engine_.reset();
    model_.mapping().close();
}

}  // namespace hmllm
