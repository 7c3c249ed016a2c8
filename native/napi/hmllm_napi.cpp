// The NAPI surface of the runtime. It is total: every argument is validated here and every
// failure becomes a JS Error with a `code` (never an abort); ArkTS sees the same codes on a phone.
//
// Each session has a serial queue that lives on the JS thread: one request runs (as
// napi_create_async_work on the runtime's worker pool), at most maxPending wait, the surplus is
// refused at once with BUSY. Completion callbacks start the next request, so a session never
// occupies more than one worker. Streaming pieces and the final settlement travel through the same
// thread-safe function, so onToken calls arrive in order and before the promise settles.
#include "hmllm_napi.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hmllm/request_log.h"
#include "hmllm/session.h"
#include "hmllm/text_input.h"

namespace hmllm_napi {
namespace {

using Clock = std::chrono::steady_clock;

struct RequestStats {
    double ttft_ms = 0, prefill_tps = 0, decode_tps = 0;
    int input_tokens = 0, output_tokens = 0;
    uint64_t peak_rss = 0;
    const char* degraded = "none";
    int degraded_count = 0;
};

struct Job;

struct Slot {
    std::unique_ptr<hmllm::Session> session;
    int max_pending = 3;
    int timeout_ms = 15000;
    bool released = false;
    std::deque<Job*> queue;  // waiting requests (JS thread only)
    Job* running = nullptr;  // JS thread only
    RequestStats stats;      // JS thread only
    // The worker sets busy while it uses the session; release() waits for it to clear.
    std::mutex mu;
    std::condition_variable idle;
    bool busy = false;
};

std::map<int64_t, std::shared_ptr<Slot>> g_sessions;  // JS thread only
int64_t g_next_id = 1;

enum class Kind { Infer, Chat, Classify, Warmup };

struct Job {
    Kind kind = Kind::Infer;
    std::shared_ptr<Slot> slot;
    napi_async_work work = nullptr;
    napi_deferred deferred = nullptr;  // promise form
    napi_ref callback = nullptr;       // callback form
    napi_ref input_ref = nullptr;      // keeps the caller's ArrayBuffer alive while the worker reads it
    const char* input = nullptr;
    size_t input_len = 0;
    napi_threadsafe_function tsfn = nullptr;  // onToken pieces, then the settlement
    hmllm::InferRequest request;
    std::vector<std::string> labels;
    hmllm::ClassifyOptions classify_options;
    std::vector<hmllm::ChatMessage> messages;
    int chat_prompt_tokens = -1;  // set when a conversation was refused for not fitting the context
    int timeout_ms = 0;
    std::atomic<bool> cancel{false};
    bool timed_out = false;
    bool busy = false;  // refused: the queue was full
    // Results, written by the worker, read on the JS thread after it is done.
    hmllm::Status status;
    hmllm::InferResult infer;
    hmllm::ClassifyResult classify;
};

// ---- errors

napi_value make_error(napi_env env, const char* code, const std::string& msg, bool type_error = false) {
    napi_value js_code, js_msg, err;
    napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &js_code);
    napi_create_string_utf8(env, msg.c_str(), msg.size(), &js_msg);
    if (type_error) napi_create_type_error(env, js_code, js_msg, &err);
    else napi_create_error(env, js_code, js_msg, &err);
    return err;
}

void throw_type_error(napi_env env, const std::string& msg) { napi_throw_type_error(env, "INVALID_ARGUMENT", msg.c_str()); }

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

napi_value undefined(napi_env env) {
    napi_value u;
    napi_get_undefined(env, &u);
    return u;
}

// ---- argument reading: each returns false after throwing a TypeError

napi_valuetype type_of(napi_env env, napi_value v) {
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    return t;
}

bool get_session_id(napi_env env, napi_value v, int64_t* id) {
    double d = 0;
    if (type_of(env, v) != napi_number || napi_get_value_double(env, v, &d) != napi_ok ||
        d != static_cast<double>(static_cast<int64_t>(d)) || d < 1) {
        throw_type_error(env, "session must be a session id returned by init()");
        return false;
    }
    *id = static_cast<int64_t>(d);
    return true;
}

bool get_string(napi_env env, napi_value v, std::string* out) {
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok) return false;
    out->assign(len, '\0');
    napi_get_value_string_utf8(env, v, out->data(), len + 1, &len);
    return true;
}

// An optional options argument: undefined or an object.
bool get_options(napi_env env, size_t argc, napi_value* argv, size_t index, const char* where, napi_value* options) {
    *options = nullptr;
    if (argc <= index) return true;
    const napi_valuetype t = type_of(env, argv[index]);
    if (t == napi_undefined || t == napi_null) return true;
    if (t != napi_object) {
        throw_type_error(env, std::string(where) + ": options must be an object");
        return false;
    }
    *options = argv[index];
    return true;
}

bool get_prop(napi_env env, napi_value obj, const char* name, napi_value* v) {
    bool has = false;
    if (!obj || napi_has_named_property(env, obj, name, &has) != napi_ok || !has) return false;
    napi_get_named_property(env, obj, name, v);
    return type_of(env, *v) != napi_undefined;
}

bool get_number_option(napi_env env, napi_value obj, const char* name, const OptionLimit& limit, double* out) {
    napi_value v;
    if (!get_prop(env, obj, name, &v)) return true;
    const double lo = limit.lo, hi = limit.hi;
    const bool integer = limit.integer;
    double d = 0;
    if (type_of(env, v) != napi_number || napi_get_value_double(env, v, &d) != napi_ok || !(d >= lo && d <= hi) ||
        (integer && d != static_cast<double>(static_cast<int64_t>(d)))) {
        throw_type_error(env, std::string("options.") + name + " must be " + (integer ? "an integer" : "a number") +
                                  " from " + std::to_string(static_cast<int64_t>(lo)) + " to " +
                                  std::to_string(static_cast<int64_t>(hi)));
        return false;
    }
    *out = d;
    return true;
}

template <typename T>
bool get_int_option(napi_env env, napi_value obj, const char* name, const OptionLimit& limit, T* out) {
    double d = static_cast<double>(*out);
    // Read into an integer: a whole number is required whatever api.toml says.
    if (!get_number_option(env, obj, name, {limit.lo, limit.hi, true}, &d)) return false;
    *out = static_cast<T>(d);
    return true;
}

bool get_bool_option(napi_env env, napi_value obj, const char* name, bool* out) {
    napi_value v;
    if (!get_prop(env, obj, name, &v)) return true;
    if (type_of(env, v) != napi_boolean) {
        throw_type_error(env, std::string("options.") + name + " must be a boolean");
        return false;
    }
    napi_get_value_bool(env, v, out);
    return true;
}

bool get_string_array(napi_env env, napi_value v, const char* what, size_t max, std::vector<std::string>* out) {
    bool is_array = false;
    napi_is_array(env, v, &is_array);
    uint32_t n = 0;
    if (is_array) napi_get_array_length(env, v, &n);
    if (!is_array || n > max) {
        throw_type_error(env, std::string(what) + " must be an array of at most " + std::to_string(max) + " strings");
        return false;
    }
    for (uint32_t i = 0; i < n; ++i) {
        napi_value e;
        napi_get_element(env, v, i, &e);
        std::string s;
        if (type_of(env, e) != napi_string || !get_string(env, e, &s) || s.empty() || s.size() > 256) {
            throw_type_error(env, std::string(what) + " must hold non-empty strings of at most 256 bytes");
            return false;
        }
        out->push_back(std::move(s));
    }
    return true;
}

// classifyAsync's options: examples [{text, label}] whose labels are among `labels`, calibrate.
bool get_classify_options(napi_env env, napi_value o, const std::vector<std::string>& labels, hmllm::ClassifyOptions* out) {
    if (!get_bool_option(env, o, "calibrate", &out->calibrate)) return false;
    napi_value examples;
    if (!get_prop(env, o, "examples", &examples)) return true;
    constexpr uint32_t kMaxExamples = 32;
    constexpr size_t kMaxExampleBytes = 4096;
    bool is_array = false;
    napi_is_array(env, examples, &is_array);
    uint32_t n = 0;
    if (is_array) napi_get_array_length(env, examples, &n);
    if (!is_array || n > kMaxExamples) {
        throw_type_error(env, "options.examples must be an array of at most " + std::to_string(kMaxExamples) +
                                  " {text, label} objects");
        return false;
    }
    for (uint32_t i = 0; i < n; ++i) {
        const std::string where = "options.examples[" + std::to_string(i) + "]";
        napi_value e, text_v, label_v;
        napi_get_element(env, examples, i, &e);
        std::string text, label;
        if (type_of(env, e) != napi_object || !get_prop(env, e, "text", &text_v) || !get_prop(env, e, "label", &label_v) ||
            type_of(env, text_v) != napi_string || type_of(env, label_v) != napi_string || !get_string(env, text_v, &text) ||
            !get_string(env, label_v, &label)) {
            throw_type_error(env, where + " must be an object with string text and label");
            return false;
        }
        if (text.empty() || text.size() > kMaxExampleBytes) {
            throw_type_error(env, where + ".text must be from 1 to " + std::to_string(kMaxExampleBytes) + " bytes");
            return false;
        }
        if (std::find(labels.begin(), labels.end(), label) == labels.end()) {
            throw_type_error(env, where + ".label '" + label.substr(0, 64) + "' is not one of the labels");
            return false;
        }
        // The example text is the app's, possibly typed by a user: cleaned like the input.
        out->examples.emplace_back(hmllm::clean_input_text(text), std::move(label));
    }
    return true;
}

// The single session argument of warmup / cancel / release / stats.
bool session_argument(napi_env env, napi_callback_info info, const char* fn, int64_t* id) {
    napi_value argv[1];
    size_t argc = 1;
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
    if (argc < 1) {
        throw_type_error(env, std::string(fn) + "(session): session is required");
        return false;
    }
    return get_session_id(env, argv[0], id);
}

std::shared_ptr<Slot> live_slot(napi_env env, int64_t id) {
    auto it = g_sessions.find(id);
    if (it == g_sessions.end() || it->second->released) {
        napi_value err = make_error(env, "RELEASED", "the session was released or never existed; call init() again");
        napi_throw(env, err);
        return nullptr;
    }
    return it->second;
}

// ---- the queue

void start_next(napi_env env, Slot* slot);

napi_value array_buffer_from(napi_env env, std::string&& text) {
    napi_value result = nullptr;
    if (!text.empty()) {
        // Zero copy out: the ArrayBuffer views the string, freed by its finalizer.
        auto* owned = new std::string(std::move(text));
        if (napi_create_external_arraybuffer(
                env, owned->data(), owned->size(), [](napi_env, void*, void* hint) { delete static_cast<std::string*>(hint); },
                owned, &result) == napi_ok)
            return result;
        text = std::move(*owned);  // the runtime forbids external buffers: copy instead
        delete owned;
    }
    void* bytes = nullptr;
    napi_create_arraybuffer(env, text.size(), &bytes, &result);
    if (!text.empty()) std::memcpy(bytes, text.data(), text.size());
    return result;
}

napi_value number_array(napi_env env, const std::vector<double>& values) {
    napi_value array;
    napi_create_array_with_length(env, values.size(), &array);
    for (size_t i = 0; i < values.size(); ++i) {
        napi_value v;
        napi_create_double(env, values[i], &v);
        napi_set_element(env, array, static_cast<uint32_t>(i), v);
    }
    return array;
}

napi_value classify_object(napi_env env, const Job& job) {
    napi_value obj, label, calibrated;
    napi_create_object(env, &obj);
    const std::string& best = job.labels[size_t(job.classify.best)];
    napi_create_string_utf8(env, best.data(), best.size(), &label);
    napi_get_boolean(env, job.classify.calibrated, &calibrated);
    napi_set_named_property(env, obj, "label", label);
    napi_set_named_property(env, obj, "scores", number_array(env, job.classify.scores));
    napi_set_named_property(env, obj, "rawScores", number_array(env, job.classify.raw_scores));
    napi_set_named_property(env, obj, "calibrated", calibrated);
    return obj;
}

napi_value chat_object(napi_env env, const Job& job) {
    napi_value obj, text, stop;
    const hmllm::InferResult& r = job.infer;
    napi_create_object(env, &obj);
    napi_create_string_utf8(env, r.text.data(), r.text.size(), &text);
    // The runtime says "stopped" when should_stop ended it; here that can only be the timeout
    // (a cancel settles as CANCELLED).
    const std::string s = job.timed_out ? "timeout" : r.stop;
    napi_create_string_utf8(env, s.data(), s.size(), &stop);
    napi_set_named_property(env, obj, "text", text);
    napi_set_named_property(env, obj, "stop", stop);
    auto num = [&](const char* k, double v) {
        napi_value x;
        napi_create_double(env, v, &x);
        napi_set_named_property(env, obj, k, x);
    };
    num("promptTokens", static_cast<double>(r.prompt_tokens.size()));
    num("reusedTokens", r.generation.reused_tokens);
    num("outputTokens", static_cast<double>(r.generation.tokens.size()));
    return obj;
}

// Settles the job's promise or calls its callback, records stats, frees the job.
void settle(napi_env env, Job* job, bool killed) {
    std::unique_ptr<Job> owner(job);
    Slot* slot = job->slot.get();
    napi_value err = nullptr, value = nullptr;
    const char* degraded = "none";
    if (killed) {
        err = make_error(env, "RELEASED", "the session was released before the request ran");
    } else if (job->busy) {
        err = make_error(env, "BUSY", "the session already has " + std::to_string(slot->queue.size()) +
                                          " requests waiting (maxPending); try again later");
    } else if (!job->status.ok()) {
        err = make_error(env, js_code_for(job->status), job->status.message, job->status.code == hmllm::ErrorCode::InvalidArgument);
        if (job->chat_prompt_tokens >= 0) {
            // A conversation over the context: the numbers an app needs to drop old turns.
            napi_value n;
            napi_create_int64(env, job->chat_prompt_tokens, &n);
            napi_set_named_property(env, err, "promptTokens", n);
            napi_create_int64(env, slot->session ? slot->session->engine().context_size() : 0, &n);
            napi_set_named_property(env, err, "contextSize", n);
        }
    } else if (job->cancel.load()) {
        degraded = "cancelled";
        err = make_error(env, "CANCELLED", slot->released ? "the session was released during the request"
                                                          : "the request was cancelled");
    } else {
        if (job->timed_out) degraded = "timeout";
        switch (job->kind) {
            case Kind::Infer: value = array_buffer_from(env, std::move(job->infer.text)); break;
            case Kind::Chat: value = chat_object(env, *job); break;
            case Kind::Classify: value = classify_object(env, *job); break;
            case Kind::Warmup: value = undefined(env); break;
        }
    }
    if (!killed && !job->busy && job->status.ok() && job->kind != Kind::Warmup) {
        RequestStats& s = slot->stats;
        const hmllm::GenerateResult& g = job->infer.generation;
        s.degraded = degraded;
        if (std::strcmp(degraded, "none") != 0) ++s.degraded_count;
        s.peak_rss = hmllm::peak_rss_bytes();
        if (job->kind == Kind::Infer || job->kind == Kind::Chat) {
            s.ttft_ms = g.ttft_ms;
            s.prefill_tps = g.prefill_tps();
            s.decode_tps = g.decode_tps();
            s.input_tokens = static_cast<int>(job->infer.prompt_tokens.size());
            s.output_tokens = static_cast<int>(g.tokens.size());
        }
        hmllm::RequestMetrics m;
        m.kind = job->kind == Kind::Infer ? "infer" : job->kind == Kind::Chat ? "chat" : "classify";
        m.input_tokens = s.input_tokens;
        m.output_tokens = s.output_tokens;
        m.ttft_ms = s.ttft_ms;
        m.prefill_tps = s.prefill_tps;
        m.decode_tps = s.decode_tps;
        m.peak_rss_bytes = s.peak_rss;
        m.degraded = degraded;
        m.degraded_count = s.degraded_count;
        hmllm::log_request(m);
    }
    if (job->input_ref) napi_delete_reference(env, job->input_ref);
    if (job->deferred) {
        if (err) napi_reject_deferred(env, job->deferred, err);
        else napi_resolve_deferred(env, job->deferred, value);
    } else if (job->callback) {
        napi_value cb, args[2];
        napi_get_reference_value(env, job->callback, &cb);
        args[0] = err ? array_buffer_from(env, std::string()) : value;
        args[1] = err ? err : undefined(env);
        napi_call_function(env, undefined(env), cb, err ? 2 : 1, args, nullptr);
        napi_delete_reference(env, job->callback);
    }
}

void execute(napi_env, void* data) {
    auto* job = static_cast<Job*>(data);
    Slot* slot = job->slot.get();
    {
        std::lock_guard<std::mutex> lock(slot->mu);
        if (slot->released || !slot->session) {
            job->cancel.store(true);  // released before it started: settles as CANCELLED
            return;
        }
        slot->busy = true;
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(job->timeout_ms);
    job->request.should_stop = [job, deadline] {
        if (job->cancel.load()) return true;
        if (Clock::now() >= deadline) return job->timed_out = true;
        return false;
    };
    if (job->tsfn) {
        job->request.on_piece = [job](const std::string& piece) {
            napi_call_threadsafe_function(job->tsfn, new std::string(piece), napi_tsfn_nonblocking);
            return true;
        };
    }
    const std::string text = hmllm::clean_input_text(std::string_view(job->input, job->input_len));
    hmllm::Session& session = *slot->session;
    switch (job->kind) {
        case Kind::Infer: job->status = session.generate(text, job->request, &job->infer); break;
        case Kind::Chat: {
            std::string prompt;
            std::vector<int32_t> ids;
            job->status = session.chat_prompt(job->messages, &prompt, &ids);
            if (job->status.ok()) {
                job->status = session.check_chat_fits(ids.size(), job->request.max_tokens);
                if (!job->status.ok()) job->chat_prompt_tokens = static_cast<int>(ids.size());
            }
            if (job->status.ok()) job->status = session.chat_tokens(ids, job->request, &job->infer);
            break;
        }
        case Kind::Classify: job->status = session.classify(text, job->labels, job->classify_options, &job->classify); break;
        case Kind::Warmup: job->status = session.warmup(); break;
    }
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->busy = false;
    slot->idle.notify_all();
}

// Runs on the JS thread for every onToken piece (data = the piece) and, last, for the settlement
// (data = nullptr), so the final onToken call always precedes the promise settling.
void call_js(napi_env env, napi_value on_token, void* context, void* data) {
    auto* job = static_cast<Job*>(context);
    if (data == nullptr) {
        if (env) settle(env, job, false);
        else delete job;
        return;
    }
    std::unique_ptr<std::string> piece(static_cast<std::string*>(data));
    if (!env || job->cancel.load()) return;
    napi_value str;
    napi_create_string_utf8(env, piece->data(), piece->size(), &str);
    napi_call_function(env, undefined(env), on_token, 1, &str, nullptr);
}

void complete(napi_env env, napi_status, void* data) {
    auto* job = static_cast<Job*>(data);
    std::shared_ptr<Slot> slot = job->slot;  // the job may be freed below
    napi_delete_async_work(env, job->work);
    slot->running = nullptr;
    if (job->tsfn) {
        napi_threadsafe_function tsfn = job->tsfn;
        napi_call_threadsafe_function(tsfn, nullptr, napi_tsfn_blocking);  // settlement after the pieces
        napi_release_threadsafe_function(tsfn, napi_tsfn_release);
    } else {
        settle(env, job, false);
    }
    start_next(env, slot.get());
}

void start_next(napi_env env, Slot* slot) {
    if (slot->running || slot->queue.empty()) return;
    Job* job = slot->queue.front();
    slot->queue.pop_front();
    slot->running = job;
    napi_value name;
    napi_create_string_utf8(env, "hmllm.request", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, nullptr, name, execute, complete, job, &job->work) != napi_ok ||
        napi_queue_async_work(env, job->work) != napi_ok) {
        slot->running = nullptr;
        job->status = hmllm::Status::error(hmllm::ErrorCode::InvalidArgument, "could not queue the request");
        settle(env, job, false);
    }
}

// Validates the shared part of a request, queues it or refuses BUSY; returns the promise (or
// undefined in callback form). `job` is consumed.
napi_value submit(napi_env env, std::shared_ptr<Slot> slot, std::unique_ptr<Job> job, napi_value callback) {
    job->slot = slot;
    napi_value result = undefined(env);
    if (callback) napi_create_reference(env, callback, 1, &job->callback);
    else napi_create_promise(env, &job->deferred, &result);
    if (slot->running && static_cast<int>(slot->queue.size()) >= slot->max_pending) {
        // Refused at once: the promise is already rejected (the callback already called) on return.
        if (job->tsfn) napi_release_threadsafe_function(job->tsfn, napi_tsfn_abort);  // nothing was queued on it
        job->tsfn = nullptr;
        job->status = hmllm::Status{};
        job->busy = true;
        settle(env, job.release(), false);
        return result;
    }
    slot->queue.push_back(job.release());
    start_next(env, slot.get());
    return result;
}

bool read_input(napi_env env, napi_value v, Job* job, const char* where) {
    bool is_ab = false;
    napi_is_arraybuffer(env, v, &is_ab);
    if (!is_ab) {
        throw_type_error(env, std::string(where) + ": input must be an ArrayBuffer of UTF-8 text");
        return false;
    }
    void* bytes = nullptr;
    napi_get_arraybuffer_info(env, v, &bytes, &job->input_len);  // read in place, no copy
    job->input = static_cast<const char*>(bytes);
    napi_create_reference(env, v, 1, &job->input_ref);
    return true;
}

void tsfn_finalize(napi_env, void*, void*) {}

// inferAsync's and chatAsync's options (InferOptions in api.toml) into the job's request.
bool get_infer_options(napi_env env, napi_value o, Job* job, napi_value* on_token) {
    hmllm::InferRequest& r = job->request;
    double temperature = 0, top_p = r.sampling.top_p;
    if (o) {
        if (!get_int_option(env, o, "maxTokens", kInferOptionsMaxTokens, &r.max_tokens) ||
            !get_number_option(env, o, "temperature", kInferOptionsTemperature, &temperature) ||
            !get_int_option(env, o, "topK", kInferOptionsTopK, &r.sampling.top_k) ||
            !get_number_option(env, o, "topP", kInferOptionsTopP, &top_p) ||
            !get_int_option(env, o, "seed", kInferOptionsSeed, &r.sampling.seed) ||
            !get_int_option(env, o, "timeoutMs", kInferOptionsTimeoutMs, &job->timeout_ms))
            return false;
        napi_value stop;
        if (get_prop(env, o, "stop", &stop) && !get_string_array(env, stop, "options.stop", 16, &r.stop)) return false;
        if (get_prop(env, o, "onToken", on_token) && type_of(env, *on_token) != napi_function) {
            throw_type_error(env, "options.onToken must be a function");
            return false;
        }
    }
    r.sampling.temperature = static_cast<float>(temperature);
    r.sampling.top_p = static_cast<float>(top_p);
    return true;
}

// onToken pieces of the job through a thread-safe function (none: no streaming).
void stream_to(napi_env env, napi_value on_token, Job* job) {
    if (!on_token) return;
    napi_value name;
    napi_create_string_utf8(env, "hmllm.onToken", NAPI_AUTO_LENGTH, &name);
    napi_create_threadsafe_function(env, on_token, nullptr, name, 0, 1, nullptr, tsfn_finalize, job, call_js, &job->tsfn);
}

// chatAsync's messages: an array of {role, content} with string values. The roles and their order
// are the chat format's business (checked on the worker, rejecting with INVALID_ARGUMENT); the
// contents are cleaned like every other text an app passes in.
bool get_chat_messages(napi_env env, napi_value v, std::vector<hmllm::ChatMessage>* out) {
    constexpr uint32_t kMaxMessages = 4096;
    bool is_array = false;
    napi_is_array(env, v, &is_array);
    uint32_t n = 0;
    if (is_array) napi_get_array_length(env, v, &n);
    if (!is_array || n > kMaxMessages) {
        throw_type_error(env, "messages must be an array of at most " + std::to_string(kMaxMessages) +
                                  " {role, content} objects");
        return false;
    }
    for (uint32_t i = 0; i < n; ++i) {
        const std::string where = "messages[" + std::to_string(i) + "]";
        napi_value m, role_v, content_v;
        napi_get_element(env, v, i, &m);
        if (type_of(env, m) != napi_object || !get_prop(env, m, "role", &role_v) || !get_prop(env, m, "content", &content_v)) {
            throw_type_error(env, where + " must be an object with a role and a content");
            return false;
        }
        hmllm::ChatMessage msg;
        if (type_of(env, role_v) != napi_string || !get_string(env, role_v, &msg.role)) {
            throw_type_error(env, where + ".role must be a string: 'system', 'user' or 'assistant'");
            return false;
        }
        std::string content;
        if (type_of(env, content_v) != napi_string || !get_string(env, content_v, &content)) {
            throw_type_error(env, where + ".content must be a string");
            return false;
        }
        msg.content = hmllm::clean_input_text(content);
        out->push_back(std::move(msg));
    }
    return true;
}

}  // namespace

napi_value Init(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    size_t argc = 2;
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
    std::string path;
    if (argc < 1 || type_of(env, argv[0]) != napi_string || !get_string(env, argv[0], &path)) {
        throw_type_error(env, "init(modelPath, options?): modelPath must be a string");
        return nullptr;
    }
    napi_value o;
    if (!get_options(env, argc, argv, 1, "init(modelPath, options?)", &o)) return nullptr;
    hmllm::SessionOptions so;
    int max_pending = 3, timeout_ms = 15000;
    double budget = 0;
    bool high_priority = true;
    if (o) {
        if (!get_int_option(env, o, "threads", kInitOptionsThreads, &so.threads) ||
            !get_int_option(env, o, "contextSize", kInitOptionsContextSize, &so.context_size) ||
            !get_int_option(env, o, "maxPending", kInitOptionsMaxPending, &max_pending) ||
            !get_int_option(env, o, "timeoutMs", kInitOptionsTimeoutMs, &timeout_ms) ||
            !get_number_option(env, o, "memoryBudgetBytes", kInitOptionsMemoryBudgetBytes, &budget) ||
            !get_bool_option(env, o, "highPriority", &high_priority))
            return nullptr;
        napi_value chat_format;
        if (get_prop(env, o, "chatFormat", &chat_format) &&
            (type_of(env, chat_format) != napi_string || !get_string(env, chat_format, &so.chat_format) ||
             so.chat_format.empty())) {
            throw_type_error(env, "options.chatFormat must be the compiled chat format's JSON text "
                                  "(hmbuild chat-template MODEL.gguf --json)");
            return nullptr;
        }
        napi_value kv;
        if (get_prop(env, o, "kvCacheType", &kv)) {
            std::string s;
            if (type_of(env, kv) != napi_string || !get_string(env, kv, &s) || (s != "f16" && s != "q8_0")) {
                throw_type_error(env, "options.kvCacheType must be 'f16' or 'q8_0'");
                return nullptr;
            }
            so.kv_type = s == "q8_0" ? hmllm::KvType::Q8_0 : hmllm::KvType::F16;
        }
    }
    so.memory_budget_bytes = static_cast<uint64_t>(budget);
    so.high_priority = high_priority;
    std::unique_ptr<hmllm::Session> session;
    hmllm::Status st = hmllm::Session::open(path, so, &session);
    if (!st.ok()) {
        napi_throw(env, make_error(env, js_code_for(st), st.message, st.code == hmllm::ErrorCode::InvalidArgument));
        return nullptr;
    }
    auto slot = std::make_shared<Slot>();
    slot->session = std::move(session);
    slot->max_pending = max_pending;
    slot->timeout_ms = timeout_ms;
    const int64_t id = g_next_id++;
    g_sessions[id] = slot;
    napi_value result;
    napi_create_int64(env, id, &result);
    return result;
}

napi_value InferAsync(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    size_t argc = 4;
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
    const char* where = "inferAsync(session, input, options?, callback?)";
    if (argc < 2) {
        throw_type_error(env, std::string(where) + ": session and input are required");
        return nullptr;
    }
    int64_t id;
    if (!get_session_id(env, argv[0], &id)) return nullptr;
    napi_value o, callback = nullptr, on_token = nullptr;
    if (!get_options(env, argc, argv, 2, where, &o)) return nullptr;
    if (argc >= 4 && type_of(env, argv[3]) != napi_undefined) {
        if (type_of(env, argv[3]) != napi_function) {
            throw_type_error(env, std::string(where) + ": callback must be a function");
            return nullptr;
        }
        callback = argv[3];
    }
    auto job = std::make_unique<Job>();
    job->kind = Kind::Infer;
    if (!get_infer_options(env, o, job.get(), &on_token)) return nullptr;
    std::shared_ptr<Slot> slot = live_slot(env, id);
    if (!slot) return nullptr;
    if (job->timeout_ms == 0) job->timeout_ms = slot->timeout_ms;
    if (!read_input(env, argv[1], job.get(), where)) return nullptr;
    stream_to(env, on_token, job.get());
    return submit(env, slot, std::move(job), callback);
}

napi_value ChatAsync(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    size_t argc = 3;
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
    const char* where = "chatAsync(session, messages, options?)";
    if (argc < 2) {
        throw_type_error(env, std::string(where) + ": session and messages are required");
        return nullptr;
    }
    int64_t id;
    if (!get_session_id(env, argv[0], &id)) return nullptr;
    auto job = std::make_unique<Job>();
    job->kind = Kind::Chat;
    if (!get_chat_messages(env, argv[1], &job->messages)) return nullptr;
    napi_value o, on_token = nullptr;
    if (!get_options(env, argc, argv, 2, where, &o)) return nullptr;
    if (!get_infer_options(env, o, job.get(), &on_token)) return nullptr;
    std::shared_ptr<Slot> slot = live_slot(env, id);
    if (!slot) return nullptr;
    if (job->timeout_ms == 0) job->timeout_ms = slot->timeout_ms;
    stream_to(env, on_token, job.get());
    return submit(env, slot, std::move(job), nullptr);
}

napi_value ClassifyAsync(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    size_t argc = 4;
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
    const char* where = "classifyAsync(session, input, labels, options?)";
    if (argc < 3) {
        throw_type_error(env, std::string(where) + ": session, input and labels are required");
        return nullptr;
    }
    int64_t id;
    if (!get_session_id(env, argv[0], &id)) return nullptr;
    auto job = std::make_unique<Job>();
    job->kind = Kind::Classify;
    if (!get_string_array(env, argv[2], "labels", 64, &job->labels)) return nullptr;
    if (job->labels.empty()) {
        throw_type_error(env, "labels must hold at least one label");
        return nullptr;
    }
    napi_value o;
    if (!get_options(env, argc, argv, 3, where, &o)) return nullptr;
    if (o && !get_classify_options(env, o, job->labels, &job->classify_options)) return nullptr;
    std::shared_ptr<Slot> slot = live_slot(env, id);
    if (!slot) return nullptr;
    job->timeout_ms = slot->timeout_ms;
    if (!read_input(env, argv[1], job.get(), where)) return nullptr;
    return submit(env, slot, std::move(job), nullptr);
}

napi_value Warmup(napi_env env, napi_callback_info info) {
    int64_t id;
    if (!session_argument(env, info, "warmup", &id)) return nullptr;
    std::shared_ptr<Slot> slot = live_slot(env, id);
    if (!slot) return nullptr;
    auto job = std::make_unique<Job>();
    job->kind = Kind::Warmup;
    job->timeout_ms = slot->timeout_ms;
    return submit(env, slot, std::move(job), nullptr);
}

napi_value Cancel(napi_env env, napi_callback_info info) {
    int64_t id;
    if (!session_argument(env, info, "cancel", &id)) return nullptr;
    auto it = g_sessions.find(id);
    if (it != g_sessions.end() && it->second->running) it->second->running->cancel.store(true);
    return undefined(env);  // nothing running, or an unknown id: nothing to do
}

napi_value Release(napi_env env, napi_callback_info info) {
    int64_t id;
    if (!session_argument(env, info, "release", &id)) return nullptr;
    auto it = g_sessions.find(id);
    if (it == g_sessions.end()) return undefined(env);  // releasing twice is fine
    std::shared_ptr<Slot> slot = it->second;
    g_sessions.erase(it);
    {
        std::lock_guard<std::mutex> lock(slot->mu);
        slot->released = true;
    }
    // Waiting requests never run: they settle with RELEASED now.
    while (!slot->queue.empty()) {
        Job* job = slot->queue.front();
        slot->queue.pop_front();
        if (job->tsfn) {
            job->status = hmllm::Status{};
            napi_release_threadsafe_function(job->tsfn, napi_tsfn_abort);
            job->tsfn = nullptr;
        }
        settle(env, job, true);
    }
    // The running one stops at its next token; wait for the worker to let go, then free.
    if (slot->running) slot->running->cancel.store(true);
    std::unique_lock<std::mutex> lock(slot->mu);
    slot->idle.wait(lock, [&] { return !slot->busy; });
    if (slot->session) slot->session->release();
    slot->session.reset();
    return undefined(env);
}

napi_value Stats(napi_env env, napi_callback_info info) {
    int64_t id;
    if (!session_argument(env, info, "stats", &id)) return nullptr;
    std::shared_ptr<Slot> slot = live_slot(env, id);
    if (!slot) return nullptr;
    const RequestStats& s = slot->stats;
    napi_value obj;
    napi_create_object(env, &obj);
    auto num = [&](const char* k, double v) {
        napi_value x;
        napi_create_double(env, v, &x);
        napi_set_named_property(env, obj, k, x);
    };
    num("ttftMs", s.ttft_ms);
    num("prefillTokensPerSec", s.prefill_tps);
    num("decodeTokensPerSec", s.decode_tps);
    num("inputTokens", s.input_tokens);
    num("outputTokens", s.output_tokens);
    num("peakRssBytes", static_cast<double>(s.peak_rss));
    num("degradedCount", s.degraded_count);
    num("threads", slot->session->threads());
    napi_value deg, pr;
    napi_create_string_utf8(env, s.degraded, NAPI_AUTO_LENGTH, &deg);
    napi_set_named_property(env, obj, "degraded", deg);
    napi_get_boolean(env, slot->session->priority_raised(), &pr);
    napi_set_named_property(env, obj, "priorityRaised", pr);
    return obj;
}

}  // namespace hmllm_napi
