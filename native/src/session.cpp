#include "hmllm/session.h"

namespace hmllm {

Status Session::open(const std::string& model_path, const SessionOptions& options,
                     std::unique_ptr<Session>* out) {
    std::unique_ptr<Session> session(new Session());
    Status st = GgufFile::open(model_path, &session->model_);
    if (!st.ok()) return st;
    session->options_ = options;
    *out = std::move(session);
    return Status{};
}

Status Session::infer(std::string_view input, std::string* output) {
    if (released_) return Status::error(ErrorCode::InvalidArgument, "the session was released");
    output->assign(input.data(), input.size());
    return Status{};
}

void Session::release() {
    if (released_) return;
    released_ = true;
    model_.mapping().close();
}

}  // namespace hmllm
