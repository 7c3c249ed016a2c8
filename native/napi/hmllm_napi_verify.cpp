// verifyModel(path, sha256) -> Promise<boolean>. The file is hashed on the worker pool
// (napi_create_async_work); the promise resolves true or false, and rejects with
// INVALID_ARGUMENT (a TypeError) for a bad argument or MODEL_LOAD_FAILED when the file cannot be
// read. Bad arguments reject rather than throw so that callers handle one failure path.
#include "hmllm_napi_verify.h"

#include <string>

#include "hmllm/sha256.h"

namespace hmllm_napi {
namespace {

struct VerifyJob {
    std::string path;
    hmllm::Sha256Digest expected{};
    hmllm::Sha256Digest actual{};
    hmllm::Status status;
    napi_deferred deferred = nullptr;
    napi_async_work work = nullptr;
};

napi_value error_value(napi_env env, const char* code, const std::string& msg, bool type_error) {
    napi_value js_code, js_msg, err;
    napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &js_code);
    napi_create_string_utf8(env, msg.data(), msg.size(), &js_msg);
    if (type_error) napi_create_type_error(env, js_code, js_msg, &err);
    else napi_create_error(env, js_code, js_msg, &err);
    return err;
}

bool read_string(napi_env env, napi_value v, std::string* out) {
    napi_valuetype t = napi_undefined;
    size_t len = 0;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_string ||
        napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok)
        return false;
    out->assign(len, '\0');
    napi_get_value_string_utf8(env, v, out->data(), len + 1, &len);
    return true;
}

void execute(napi_env, void* data) {
    auto* job = static_cast<VerifyJob*>(data);
    job->status = hmllm::sha256_file(job->path, &job->actual);
}

void complete(napi_env env, napi_status status, void* data) {
    auto* job = static_cast<VerifyJob*>(data);
    if (status != napi_ok) {
        napi_reject_deferred(env, job->deferred,
                             error_value(env, "CANCELLED", "verifyModel was cancelled before it ran", false));
    } else if (!job->status.ok()) {
        napi_reject_deferred(env, job->deferred, error_value(env, "MODEL_LOAD_FAILED", job->status.message, false));
    } else {
        napi_value result;
        napi_get_boolean(env, job->actual == job->expected, &result);
        napi_resolve_deferred(env, job->deferred, result);
    }
    napi_delete_async_work(env, job->work);
    delete job;
}

}  // namespace

napi_value VerifyModelAsync(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2] = {nullptr, nullptr};
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);

    auto* job = new VerifyJob;
    napi_value promise;
    if (napi_create_promise(env, &job->deferred, &promise) != napi_ok) {
        delete job;
        napi_throw_error(env, "INTERNAL", "verifyModel could not create a promise");
        return nullptr;
    }
    auto reject = [&](const std::string& msg) {
        napi_reject_deferred(env, job->deferred, error_value(env, "INVALID_ARGUMENT", msg, true));
        delete job;
        return promise;
    };
    std::string digest;
    if (argc < 1 || !read_string(env, argv[0], &job->path) || job->path.empty())
        return reject("verifyModel: path must be a non-empty string");
    if (argc < 2 || !read_string(env, argv[1], &digest) || !hmllm::parse_sha256_hex(digest, &job->expected))
        return reject("verifyModel: sha256 must be a string of 64 hex characters");

    napi_value name;
    napi_create_string_utf8(env, "hmllm.verifyModel", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, nullptr, name, execute, complete, job, &job->work) != napi_ok ||
        napi_queue_async_work(env, job->work) != napi_ok) {
        if (job->work) napi_delete_async_work(env, job->work);
        napi_reject_deferred(env, job->deferred, error_value(env, "INTERNAL", "verifyModel could not start its work", false));
        delete job;
    }
    return promise;
}

}  // namespace hmllm_napi
