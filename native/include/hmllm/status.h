// Error reporting shared by the whole runtime. Nothing in hmllm throws across its API: every
// fallible call returns a Status whose message is meant to be shown to the app developer as is.
#pragma once

#include <string>
#include <utility>

namespace hmllm {

enum class ErrorCode {
    Ok = 0,
    IoError,           // the file could not be opened, read or mapped
    InvalidModel,      // the file is malformed, truncated or not a model at all
    UnsupportedModel,  // a well-formed file using something this runtime does not implement
    OutOfMemory,
    InvalidArgument,
};

// Stable upper-case spellings, for logs and for error objects handed to app code.
inline const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::Ok: return "OK";
        case ErrorCode::IoError: return "IO_ERROR";
        case ErrorCode::InvalidModel: return "INVALID_MODEL";
        case ErrorCode::UnsupportedModel: return "UNSUPPORTED_MODEL";
        case ErrorCode::OutOfMemory: return "OUT_OF_MEMORY";
        case ErrorCode::InvalidArgument: return "INVALID_ARGUMENT";
    }
    return "UNKNOWN";
}

// The message is one sentence naming the file (or argument) and what is wrong with it,
// e.g. "model.gguf is not a GGUF file (bad magic)".
struct Status {
    ErrorCode code = ErrorCode::Ok;
    std::string message;

    bool ok() const { return code == ErrorCode::Ok; }

    static Status error(ErrorCode code, std::string message) {
        Status st;
        st.code = code;
        st.message = std::move(message);
        return st;
    }
};

}  // namespace hmllm
