// Per-request metrics for the app's logs: sizes, timings, memory and degradation — never the
// text itself. hilog on OpenHarmony (on by default; HMLLM_LOG=0 turns it off), stderr elsewhere
// (off by default; HMLLM_LOG=1 turns it on, e.g. under Node.js).
#pragma once

#include <cstdint>
#include <string>

namespace hmllm {

struct RequestMetrics {
    const char* kind = "infer";  // infer | classify | warmup
    int input_tokens = 0;
    int output_tokens = 0;
    double ttft_ms = 0;
    double prefill_tps = 0;
    double decode_tps = 0;
    uint64_t peak_rss_bytes = 0;
    const char* degraded = "none";  // none | timeout | cancelled
    int degraded_count = 0;
};

bool request_logging_enabled();
std::string format_request_metrics(const RequestMetrics& m);  // one line, no user content
void log_request(const RequestMetrics& m);

// Peak resident set size of the process (VmHWM), 0 when unknown.
uint64_t peak_rss_bytes();

}  // namespace hmllm
