// A loaded model and what one app-facing session needs around it. The NAPI layer (napi/) and
// the native tests use only this header; the inference engine plugs in behind infer().
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hmllm/gguf_reader.h"
#include "hmllm/status.h"

namespace hmllm {

struct SessionOptions {
    int threads = 0;  // 0: the number of big cores (decided by the engine)
};

class Session {
public:
    // Maps and validates the model; the weights stay views into the read-only mapping.
    static Status open(const std::string& model_path, const SessionOptions& options,
                       std::unique_ptr<Session>* out);

    // Runs one request. Until the engine lands (issue 3) this echoes the input bytes: it proves
    // the request path (worker thread, zero-copy buffers, result ownership), not generation.
    Status infer(std::string_view input, std::string* output);

    // Unmaps the model now; idempotent. Any later infer() fails with InvalidArgument.
    void release();
    bool released() const { return released_; }

    const GgufFile& model() const { return model_; }
    const SessionOptions& options() const { return options_; }

private:
    Session() = default;
    GgufFile model_;
    SessionOptions options_;
    bool released_ = false;
};

}  // namespace hmllm
