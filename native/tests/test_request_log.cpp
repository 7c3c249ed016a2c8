// Request metrics: one line with sizes, timings, memory and degradation, and no way to log text.
#include <cstdlib>
#include <string>

#include "hmllm/request_log.h"
#include "test_main.h"

TEST_CASE(metrics_line_has_every_figure) {
    hmllm::RequestMetrics m;
    m.input_tokens = 17;
    m.output_tokens = 5;
    m.ttft_ms = 123.4;
    m.decode_tps = 9.5;
    m.peak_rss_bytes = 300000000;
    m.degraded = "timeout";
    m.degraded_count = 2;
    const std::string line = hmllm::format_request_metrics(m);
    for (const char* part : {"input_tokens=17", "output_tokens=5", "ttft_ms=123.4", "decode_tps=9.5", "peak_rss_mb=300.0",
                             "degraded=timeout", "degraded_count=2"})
        CHECK(line.find(part) != std::string::npos);
    CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE(logging_is_off_by_default_off_ohos_and_follows_hmllm_log) {
#if !defined(__OHOS__)
    unsetenv("HMLLM_LOG");
    CHECK(!hmllm::request_logging_enabled());
    setenv("HMLLM_LOG", "1", 1);
    CHECK(hmllm::request_logging_enabled());
    setenv("HMLLM_LOG", "0", 1);
    CHECK(!hmllm::request_logging_enabled());
#endif
}

TEST_CASE(peak_rss_is_reported_on_linux) {
    CHECK(hmllm::peak_rss_bytes() > 0);
}
