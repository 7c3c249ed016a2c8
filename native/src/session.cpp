#include "hmllm/session.h"

#include <algorithm>
#include <thread>

namespace hmllm {

int default_thread_count() {
    // Until big-core detection from sysfs lands, all cores up to 4 (DESIGN: 4 when unknown).
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 4 : static_cast<int>(std::min(n, 4u));
}

Status Session::open(const std::string& model_path, const SessionOptions& options, std::unique_ptr<Session>* out) {
    std::unique_ptr<Session> s(new Session());
    Status st = GgufFile::open(model_path, &s->model_);
    if (!st.ok()) return st;
    st = load_model(s->model_, &s->config_, &s->weights_);
    if (!st.ok()) return st;
    st = Tokenizer::load(s->model_, &s->tokenizer_);
    if (!st.ok()) return st;
    s->options_ = options;
    EngineOptions eo;
    eo.threads = options.threads > 0 ? options.threads : default_thread_count();
    eo.context_size = options.context_size;
    eo.kv_type = options.kv_type;
    eo.memory_budget_bytes = options.memory_budget_bytes;
    st = Engine::create(s->config_, s->weights_, eo, &s->engine_);
    if (!st.ok()) return st;
    *out = std::move(s);
    return Status{};
}

Status Session::generate_tokens(const std::vector<int32_t>& prompt, const InferRequest& request, InferResult* result) {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    InferResult r;
    r.prompt_tokens = prompt;
    TokenStreamDecoder decoder(tokenizer_);
    GenerateOptions go;
    go.max_tokens = request.max_tokens;
    go.sampling = request.sampling;
    go.is_end = [this](int32_t id) { return tokenizer_.is_end_of_generation(id); };
    go.on_token = [&](int32_t id) {
        std::string piece = decoder.push(id);
        r.text += piece;
        if (request.on_piece && !piece.empty()) return request.on_piece(piece);
        return true;
    };
    Status st = engine_->generate(prompt, go, &r.generation);
    if (!st.ok()) return st;
    std::string tail = decoder.flush();
    r.text += tail;
    if (request.on_piece && !tail.empty()) request.on_piece(tail);
    *result = std::move(r);
    return Status{};
}

Status Session::generate(std::string_view prompt, const InferRequest& request, InferResult* result) {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    return generate_tokens(tokenizer_.encode(prompt, tokenizer_.add_bos()), request, result);
}

void Session::release() {
    if (released_) return;
    released_ = true;
    engine_.reset();
    model_.mapping().close();
}

}  // namespace hmllm
