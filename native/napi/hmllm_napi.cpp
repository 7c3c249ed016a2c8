// Every argument is validated here and every failure becomes a JS Error with a `code`
// (never an abort): the ArkTS side sees the same codes on a phone.
#include "hmllm_napi.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hmllm/session.h"

namespace hmllm_napi {
namespace {

struct Slot {
    std::mutex mu;  // one request at a time per session
    std::unique_ptr<hmllm::Session> session;
};

std::mutex g_registry_mu;
std::map<int64_t, std::shared_ptr<Slot>> g_sessions;
int64_t g_next_id = 1;

void throw_type_error(napi_env env, const std::string& msg) {
    napi_throw_type_error(env, "INVALID_ARGUMENT", msg.c_str());
}

napi_value make_error(napi_env env, const char* code, const std::string& msg) {
    napi_value js_code, js_msg, err;
    napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &js_code);
    napi_create_string_utf8(env, msg.c_str(), msg.size(), &js_msg);
    napi_create_error(env, js_code, js_msg, &err);
    return err;
}

const char* js_code_for(const hmllm::Status& st) {
    switch (st.code) {
        case hmllm::ErrorCode::IoError:
        case hmllm::ErrorCode::InvalidModel:
        case hmllm::ErrorCode::UnsupportedModel: return "MODEL_LOAD_FAILED";
        case hmllm::ErrorCode::OutOfMemory: return "OUT_OF_MEMORY";
        case hmllm::ErrorCode::InvalidArgument: return "INVALID_ARGUMENT";
        default: return "INTERNAL";
    }
}

bool get_args(napi_env env, napi_callback_info info, size_t want, napi_value* argv, size_t* argc) {
    *argc = want;
    return napi_get_cb_info(env, info, argc, argv, nullptr, nullptr) == napi_ok;
}

// Reads a session id argument; throws and returns false on anything but an integral number.
bool get_session_id(napi_env env, napi_value v, int64_t* id) {
    napi_valuetype t;
    napi_typeof(env, v, &t);
    double d = 0;
    if (t != napi_number || napi_get_value_double(env, v, &d) != napi_ok || d != static_cast<double>(static_cast<int64_t>(d)) || d < 1) {
        throw_type_error(env, "session must be a session id returned by init()");
        return false;
    }
    *id = static_cast<int64_t>(d);
    return true;
}

// Reads options.<name> when present: an integer in [lo, hi]. Throws and returns false otherwise.
bool get_int_option(napi_env env, napi_value options, const char* name, int32_t lo, int32_t hi, int32_t* out) {
    bool has = false;
    napi_has_named_property(env, options, name, &has);
    if (!has) return true;
    napi_value v;
    napi_get_named_property(env, options, name, &v);
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (t == napi_undefined) return true;
    double d = 0;
    if (t != napi_number || napi_get_value_double(env, v, &d) != napi_ok || d != static_cast<double>(static_cast<int64_t>(d)) ||
        d < lo || d > hi) {
        throw_type_error(env, std::string("options.") + name + " must be an integer from " + std::to_string(lo) + " to " +
                                  std::to_string(hi));
        return false;
    }
    *out = static_cast<int32_t>(d);
    return true;
}

// An optional options argument: undefined or an object; anything else throws.
bool get_options_object(napi_env env, napi_value v, const char* where, bool* present) {
    napi_valuetype t;
    napi_typeof(env, v, &t);
    *present = t == napi_object;
    if (t != napi_undefined && t != napi_object) {
        throw_type_error(env, std::string(where) + ": options must be an object");
        return false;
    }
    return true;
}

std::shared_ptr<Slot> find_slot(int64_t id) {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    auto it = g_sessions.find(id);
    return it == g_sessions.end() ? nullptr : it->second;
}

struct InferJob {
    napi_async_work work = nullptr;
    napi_deferred deferred = nullptr;
    napi_ref input_ref = nullptr;  // keeps the caller's ArrayBuffer alive while the worker reads it
    const char* input = nullptr;
    size_t input_len = 0;
    std::shared_ptr<Slot> slot;
    hmllm::InferRequest request;
    hmllm::Status status;
    std::string* output = nullptr;  // handed to the result ArrayBuffer's finalizer
};

void infer_execute(napi_env, void* data) {
    auto* job = static_cast<InferJob*>(data);
    std::lock_guard<std::mutex> lock(job->slot->mu);
    if (!job->slot->session || job->slot->session->released()) {
        job->status = hmllm::Status::error(hmllm::ErrorCode::InvalidArgument, "the session was released");
        return;
    }
    hmllm::InferResult result;
    job->status = job->slot->session->generate(std::string_view(job->input, job->input_len), job->request, &result);
    if (job->status.ok()) job->output = new std::string(std::move(result.text));
}

void free_output(napi_env, void*, void* hint) { delete static_cast<std::string*>(hint); }

void infer_complete(napi_env env, napi_status status, void* data) {
    std::unique_ptr<InferJob> job(static_cast<InferJob*>(data));
    napi_delete_reference(env, job->input_ref);
    napi_value result = nullptr;
    if (status != napi_ok) {
        napi_reject_deferred(env, job->deferred, make_error(env, "CANCELLED", "the request was cancelled"));
    } else if (!job->status.ok()) {
        const char* code = job->slot->session && job->slot->session->released() ? "RELEASED" : js_code_for(job->status);
        napi_reject_deferred(env, job->deferred, make_error(env, code, job->status.message));
    } else {
        std::string* out = job->output ? job->output : new std::string();
        job->output = nullptr;
        // Zero copy out: the ArrayBuffer views the string, freed by its finalizer. Runtimes that
        // forbid external buffers get a copy instead.
        napi_status s = out->empty() ? napi_generic_failure
                                     : napi_create_external_arraybuffer(env, out->data(), out->size(), free_output, out, &result);
        if (s != napi_ok) {
            void* bytes = nullptr;
            napi_create_arraybuffer(env, out->size(), &bytes, &result);
            if (!out->empty()) std::memcpy(bytes, out->data(), out->size());
            delete out;
        }
        napi_resolve_deferred(env, job->deferred, result);
    }
    delete job->output;
    napi_delete_async_work(env, job->work);
}

}  // namespace

napi_value Init(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    size_t argc;
    if (!get_args(env, info, 2, argv, &argc)) return nullptr;
    napi_valuetype t = napi_undefined;
    if (argc >= 1) napi_typeof(env, argv[0], &t);
    if (t != napi_string) {
        throw_type_error(env, "init(modelPath, options?): modelPath must be a string");
        return nullptr;
    }
    size_t len = 0;
    napi_get_value_string_utf8(env, argv[0], nullptr, 0, &len);
    std::string path(len, '\0');
    napi_get_value_string_utf8(env, argv[0], path.data(), len + 1, &len);
    hmllm::SessionOptions options;
    bool has_options = false;
    if (argc >= 2 && !get_options_object(env, argv[1], "init(modelPath, options?)", &has_options)) return nullptr;
    if (has_options) {
        int32_t threads = options.threads, ctx = options.context_size;
        if (!get_int_option(env, argv[1], "threads", 0, 64, &threads)) return nullptr;
        if (!get_int_option(env, argv[1], "contextSize", 16, 1 << 17, &ctx)) return nullptr;
        options.threads = threads;
        options.context_size = ctx;
    }
    std::unique_ptr<hmllm::Session> session;
    hmllm::Status st = hmllm::Session::open(path, options, &session);
    if (!st.ok()) {
        napi_throw_error(env, js_code_for(st), st.message.c_str());
        return nullptr;
    }
    auto slot = std::make_shared<Slot>();
    slot->session = std::move(session);
    int64_t id;
    {
        std::lock_guard<std::mutex> lock(g_registry_mu);
        id = g_next_id++;
        g_sessions[id] = slot;
    }
    napi_value result;
    napi_create_int64(env, id, &result);
    return result;
}

napi_value InferAsync(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    size_t argc;
    if (!get_args(env, info, 3, argv, &argc)) return nullptr;
    if (argc < 2) {
        throw_type_error(env, "inferAsync(session, input): both arguments are required");
        return nullptr;
    }
    int64_t id;
    if (!get_session_id(env, argv[0], &id)) return nullptr;
    bool is_ab = false;
    napi_is_arraybuffer(env, argv[1], &is_ab);
    if (!is_ab) {
        throw_type_error(env, "inferAsync(session, input): input must be an ArrayBuffer of UTF-8 text");
        return nullptr;
    }
    std::shared_ptr<Slot> slot = find_slot(id);
    if (!slot) {
        napi_throw_error(env, "RELEASED", "the session was released or never existed; call init() again");
        return nullptr;
    }
    auto job = std::make_unique<InferJob>();
    bool has_options = false;
    if (argc >= 3 && !get_options_object(env, argv[2], "inferAsync(session, input, options?)", &has_options)) return nullptr;
    if (has_options && !get_int_option(env, argv[2], "maxTokens", 1, 1 << 16, &job->request.max_tokens)) return nullptr;
    void* bytes = nullptr;
    napi_get_arraybuffer_info(env, argv[1], &bytes, &job->input_len);  // read in place, no copy
    job->input = static_cast<const char*>(bytes);
    napi_create_reference(env, argv[1], 1, &job->input_ref);
    job->slot = slot;
    napi_value promise, name;
    napi_create_promise(env, &job->deferred, &promise);
    napi_create_string_utf8(env, "hmllm.infer", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, nullptr, name, infer_execute, infer_complete, job.get(), &job->work) != napi_ok ||
        napi_queue_async_work(env, job->work) != napi_ok) {
        napi_delete_reference(env, job->input_ref);
        napi_throw_error(env, "INTERNAL", "could not queue the request");
        return nullptr;
    }
    job.release();  // owned by infer_complete now
    return promise;
}

napi_value Release(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    size_t argc;
    if (!get_args(env, info, 1, argv, &argc)) return nullptr;
    if (argc < 1) {
        throw_type_error(env, "release(session): session is required");
        return nullptr;
    }
    int64_t id;
    if (!get_session_id(env, argv[0], &id)) return nullptr;
    std::shared_ptr<Slot> slot;
    {
        std::lock_guard<std::mutex> lock(g_registry_mu);
        auto it = g_sessions.find(id);
        if (it != g_sessions.end()) {
            slot = it->second;
            g_sessions.erase(it);
        }
    }
    if (slot) {
        // Waits for a running request to finish, then unmaps; a queued one sees RELEASED.
        std::lock_guard<std::mutex> lock(slot->mu);
        if (slot->session) slot->session->release();
    }
    napi_value undef;
    napi_get_undefined(env, &undef);
    return undef;  // releasing twice, or an unknown id, is fine
}

}  // namespace hmllm_napi
