// The runtime's NAPI functions. A generated project's napi_init.cpp registers them under its
// module name; this header is the whole contract between the two.
#pragma once

#if defined(__OHOS__)
#include <napi/native_api.h>  // OpenHarmony's ArkTS runtime (includes node_api.h)
#else
#include <node_api.h>  // Node.js, used to test the same code here
#endif

namespace hmllm_napi {

napi_value Init(napi_env env, napi_callback_info info);        // init(modelPath, options?) -> id
napi_value InferAsync(napi_env env, napi_callback_info info);  // inferAsync(id, ArrayBuffer, options?, callback?) -> Promise<ArrayBuffer>
napi_value ChatAsync(napi_env env, napi_callback_info info);  // chatAsync(id, messages, options?) -> Promise<ChatResult>
napi_value ClassifyAsync(napi_env env, napi_callback_info info);  // classifyAsync(id, ArrayBuffer, labels, {examples, calibrate}?) -> Promise<{label, scores, rawScores, calibrated}>
napi_value Warmup(napi_env env, napi_callback_info info);      // warmup(id) -> Promise<void>
napi_value Cancel(napi_env env, napi_callback_info info);      // cancel(id)
napi_value Release(napi_env env, napi_callback_info info);     // release(id)
napi_value Stats(napi_env env, napi_callback_info info);       // stats(id) -> SessionStats

// The range a number option accepts. The values are the `min`, `max` and `integer` of the field
// in the project's api.toml, defined in the generated napi_init.cpp: k<Interface><Field>.
struct OptionLimit {
    double lo, hi;
    bool integer;
};
extern const OptionLimit kInitOptionsThreads, kInitOptionsContextSize, kInitOptionsMaxPending, kInitOptionsTimeoutMs,
    kInitOptionsMemoryBudgetBytes;
extern const OptionLimit kInferOptionsMaxTokens, kInferOptionsTemperature, kInferOptionsTopK, kInferOptionsTopP,
    kInferOptionsSeed, kInferOptionsTimeoutMs;

}  // namespace hmllm_napi
