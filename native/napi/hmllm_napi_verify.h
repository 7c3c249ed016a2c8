// verifyModel: the SHA-256 of a model file, computed natively off the JS thread (ModelManager
// checks a downloaded file before switching to it; hashing 250 MB in ArkTS would be slow).
#pragma once

#include "hmllm_napi.h"

namespace hmllm_napi {

napi_value VerifyModelAsync(napi_env env, napi_callback_info info);  // verifyModel(path, sha256) -> Promise<boolean>

}  // namespace hmllm_napi
