#include "hmllm/request_log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__OHOS__)
#include <hilog/log.h>
#endif

namespace hmllm {

bool request_logging_enabled() {
    const char* v = std::getenv("HMLLM_LOG");
#if defined(__OHOS__)
    return !(v && std::strcmp(v, "0") == 0);
#else
    return v && std::strcmp(v, "0") != 0;
#endif
}

std::string format_request_metrics(const RequestMetrics& m) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "hmllm request kind=%s input_tokens=%d output_tokens=%d ttft_ms=%.1f prefill_tps=%.1f "
                  "decode_tps=%.1f peak_rss_mb=%.1f degraded=%s degraded_count=%d",
                  m.kind, m.input_tokens, m.output_tokens, m.ttft_ms, m.prefill_tps, m.decode_tps,
                  m.peak_rss_bytes / 1e6, m.degraded, m.degraded_count);
    return buf;
}

void log_request(const RequestMetrics& m) {
    if (!request_logging_enabled()) return;
    const std::string line = format_request_metrics(m);
#if defined(__OHOS__)
    OH_LOG_Print(LOG_APP, LOG_INFO, 0x0D00, "hmllm", "%{public}s", line.c_str());
#else
    std::fprintf(stderr, "%s\n", line.c_str());
#endif
}

uint64_t peak_rss_bytes() {
    FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "VmHWM:", 6) == 0) {
            kb = std::strtoull(line + 6, nullptr, 10);
            break;
        }
    }
    std::fclose(f);
    return kb * 1024;
}

}  // namespace hmllm
