// hmllm_bench: end-to-end speed and memory of one model at one thread count, the way the app
// runs it. It is what `hmbuild bench` executes on the target (under qemu-aarch64 for
// linux-arm64; qemu timings are not device speed). Uses only the public API (session.h).
//
//   hmllm_bench --model M.gguf [--threads N] [--prompt-tokens 128] [--gen-tokens 64] [--repeat 3]
//               [--kv f16|q8_0] [--ctx 2048] [--kernels NAME] [--bw-mb 512] [--json]
//
// Each repeat:
//   cold  a fresh Session (map, parse, tokenizer, engine, KV cache, threads) and the first token
//         of the prompt: ttft_ms = open + prefill + first sample. The model file is in the page
//         cache (an untimed setup session ran first), so "cold" means a fresh session, not a cold
//         disk.
//   warm  Session::warmup() on that session, then the KV cache emptied (so the prompt is a real
//         prefill, not a reused prefix) and the same prompt run with greedy decoding for exactly
//         --gen-tokens tokens (end-of-generation is ignored): ttft_warm_ms, prefill_tps,
//         decode_tps.
// Figures are medians over the repeats. The prompt is fixed: BOS, then the token ids of a built-in
// English text repeated up to --prompt-tokens.
//
// Memory: peak_rss_bytes is VmHWM from /proc/self/status after the repeats (mapped weight pages
// count once touched; under qemu-user it is the qemu process), next to the model file size and
// the KV cache bytes. It is read before the bandwidth buffer below is allocated. One process
// measures one thread count, so VmHWM belongs to that configuration.
//
// Bandwidth: the memory read bandwidth is measured here too (see read_bandwidth()), with the same
// thread count, and bandwidth_fraction = decode bytes per token x decode_tps / bandwidth, where
// decode bytes per token are the weight bytes one decode step reads (every matrix incl. the output
// matrix, the norms and one embedding row) plus the KV cache read at the mean decode context.
//
// Exit status: 0 on success, 2 on bad arguments, 1 when the model cannot be loaded or run; the
// error is one line on stderr (and {"ok": false, "error": ...} on stdout with --json). Progress
// goes to stderr, one line per step, each starting with "hmllm_bench:".
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hmllm/kernels.h"
#include "hmllm/kv_cache.h"
#include "hmllm/model.h"
#include "hmllm/session.h"

#include "tool_support.h"

namespace {

using hmllm::tools::check;
using hmllm::tools::has_flag;
using hmllm::tools::Opt;
using hmllm::tools::parse_long;
using hmllm::tools::parse_options;

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Args {
    std::string model, kv = "f16", kernels;
    int threads = 0, prompt_tokens = 128, gen_tokens = 64, repeat = 3, ctx = 2048, bw_mb = 512, bw_passes = 3;
    bool json = false;
};

int fail(const Args& a, int code, const std::string& msg) {
    return hmllm::tools::fail("hmllm_bench", a.json, code, msg);
}

// Any fixed English text will do; it only has to tokenize to ordinary words.
constexpr const char* kPromptText =
    "The old lighthouse keeper climbed the spiral stairs every evening, long after the ships had "
    "stopped needing his lamp. He polished the brass, wound the clockwork, and wrote in his log "
    "what the sea had done that day: the colour of the water, the direction of the wind, the birds "
    "that rested on the gallery rail. Nobody read the log, but he kept it anyway, because a record "
    "of small things is how a place remembers itself.";

std::vector<int32_t> bench_prompt(const hmllm::Tokenizer& tok, int n) {
    std::vector<int32_t> text = tok.encode(kPromptText, false);
    std::vector<int32_t> out;
    if (tok.bos_id() >= 0) out.push_back(tok.bos_id());
    for (size_t i = 0; static_cast<int>(out.size()) < n; ++i) out.push_back(text[i % text.size()]);
    out.resize(static_cast<size_t>(n));
    return out;
}

uint64_t mat_bytes(const hmllm::MatView& m) {
    return m.data ? uint64_t(hmllm::row_bytes(m.type, m.n_cols)) * uint64_t(m.n_rows) : 0;
}

struct DecodeBytes {
    uint64_t weights = 0;  // per decode step
    double kv = 0;         // per decode step, mean over the run's decode steps
};

// What one decode step reads: every matrix once (the output matrix too; with a tied output that is
// the whole token embedding), the norm vectors, one embedding row, and K and V of every attended
// position in every layer (sliding-window layers attend at most the window).
DecodeBytes decode_bytes(const hmllm::ModelConfig& c, const hmllm::ModelWeights& w, hmllm::KvType kv,
                         int prompt_tokens, int gen_tokens) {
    DecodeBytes d;
    const uint64_t vec = uint64_t(c.d_model) * sizeof(float);
    for (const hmllm::LayerWeights& l : w.layers) {
        d.weights += mat_bytes(l.wq) + mat_bytes(l.wk) + mat_bytes(l.wv) + mat_bytes(l.wo) + mat_bytes(l.w_gate) +
                     mat_bytes(l.w_up) + mat_bytes(l.w_down);
        d.weights += 2 * vec + (l.post_attn_norm ? 2 * vec : 0) + (l.q_norm ? 2 * c.head_dim * sizeof(float) : 0);
    }
    d.weights += mat_bytes(w.output) + vec;
    d.weights += hmllm::row_bytes(w.tok_embd.type, w.tok_embd.n_cols);
    // The first generated token comes from the prefill; decode steps run the previous token at
    // positions prompt_tokens .. prompt_tokens + gen_tokens - 2 and attend pos + 1 positions.
    const uint64_t per_pos = hmllm::KvCache::bytes_for(1, 1, c.n_kv_heads * c.head_dim, kv);  // K + V
    const int steps = std::max(1, gen_tokens - 1);
    double total = 0;
    for (int s = 0; s < steps; ++s) {
        const int attended = prompt_tokens + s + 1;
        for (const hmllm::LayerWeights& l : w.layers) {
            const int n = l.sliding && c.sliding_window > 0 ? std::min(attended, c.sliding_window) : attended;
            total += double(n) * double(per_pos);
        }
    }
    d.kv = total / steps;
    return d;
}

// Memory read bandwidth, measured by hand: there is no STREAM / mbw / sysbench on a phone or in
// the aarch64 sysroot, and the figure has to come from the same process, the same binary
// (compiler, flags, qemu for linux-arm64) and the same thread count as the decode it is compared
// with. Decode is bound by reading weights, so this is a pure read (STREAM's copy/triad also
// write): each thread sums its own contiguous slice of a buffer far larger than any cache with
// four independent accumulators (the compiler vectorises it); best of a few passes, as the
// machine may be shared. The buffer is written first so its pages are real, not the shared zero
// page.
double read_bandwidth(int threads, size_t bytes, int passes) {
    const size_t n = bytes / sizeof(uint64_t);
    std::unique_ptr<uint64_t[]> buf(new uint64_t[n]);
    for (size_t i = 0; i < n; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;
    std::atomic<uint64_t> sink{0};
    double best = 0;
    for (int p = 0; p < passes; ++p) {
        std::vector<std::thread> pool;
        const auto t0 = Clock::now();
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                const size_t lo = n * size_t(t) / size_t(threads), hi = n * size_t(t + 1) / size_t(threads);
                const uint64_t* x = buf.get();
                uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                size_t i = lo;
                for (; i + 4 <= hi; i += 4) s0 += x[i], s1 += x[i + 1], s2 += x[i + 2], s3 += x[i + 3];
                for (; i < hi; ++i) s0 += x[i];
                sink += s0 + s1 + s2 + s3;
            });
        }
        for (std::thread& th : pool) th.join();
        const double s = ms_between(t0, Clock::now()) / 1000.0;
        if (s > 0) best = std::max(best, double(n * sizeof(uint64_t)) / s);
    }
    if (sink.load() == 42) std::fprintf(stderr, " ");  // keeps the sums alive
    return best;
}

uint64_t vm_hwm_bytes() {
    FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::strtoull(line + 6, nullptr, 10);
    std::fclose(f);
    return kb * 1024;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

std::string list(const std::vector<double>& v) {
    std::string s;
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.3f", i ? ", " : "", v[i]);
        s += buf;
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    a.json = has_flag(argc, argv, "--json");
    const std::string bad = parse_options(argc, argv, {"--json"}, [&](const std::string& k, const char* v) {
        if (!v) return Opt::ok;  // --json
        long n = 0;
        bool ok = true;
        if (k == "--model") a.model = v;
        else if (k == "--threads") ok = parse_long(v, 0, 256, &n), a.threads = int(n);
        else if (k == "--prompt-tokens") ok = parse_long(v, 1, 1 << 20, &n), a.prompt_tokens = int(n);
        else if (k == "--gen-tokens") ok = parse_long(v, 2, 1 << 20, &n), a.gen_tokens = int(n);
        else if (k == "--repeat") ok = parse_long(v, 1, 1000, &n), a.repeat = int(n);
        else if (k == "--ctx") ok = parse_long(v, 1, 1 << 20, &n), a.ctx = int(n);
        else if (k == "--bw-mb") ok = parse_long(v, 1, 1 << 16, &n), a.bw_mb = int(n);
        else if (k == "--kv") a.kv = v, ok = a.kv == "f16" || a.kv == "q8_0";
        else if (k == "--kernels") a.kernels = v;
        else return Opt::unknown;
        return check(ok);
    });
    if (!bad.empty()) return fail(a, 2, bad);
    if (a.model.empty()) return fail(a, 2, "--model is required");
    if (a.prompt_tokens + a.gen_tokens > a.ctx)
        return fail(a, 2, "--prompt-tokens + --gen-tokens (" + std::to_string(a.prompt_tokens + a.gen_tokens) +
                              ") is over the context size --ctx " + std::to_string(a.ctx));
    if (!a.kernels.empty() && !hmllm::select_kernels(a.kernels.c_str()))
        return fail(a, 2, "kernel set '" + a.kernels + "' is unknown or not supported by this CPU");
    struct stat sb {};
    if (::stat(a.model.c_str(), &sb) != 0) return fail(a, 1, "cannot open " + a.model + ": " + std::strerror(errno));
    const uint64_t model_bytes = static_cast<uint64_t>(sb.st_size);

    hmllm::SessionOptions so;
    so.threads = a.threads;
    so.context_size = a.ctx;
    so.kv_type = a.kv == "q8_0" ? hmllm::KvType::Q8_0 : hmllm::KvType::F16;

    // Untimed setup: the prompt, what a decode step reads, the KV size; also brings the file into
    // the page cache so every repeat's cold start is alike.
    std::vector<int32_t> prompt;
    DecodeBytes db;
    hmllm::MemoryPlan plan;
    int threads = 0, n_ctx = 0;
    uint64_t interleaved_bytes = 0;
    {
        std::unique_ptr<hmllm::Session> s;
        hmllm::Status st = hmllm::Session::open(a.model, so, &s);
        if (!st.ok()) return fail(a, 1, st.message);
        hmllm::ModelConfig cfg;
        hmllm::ModelWeights w;
        st = hmllm::load_model(s->model(), &cfg, &w);  // views into the mapping, nothing copied
        if (!st.ok()) return fail(a, 1, st.message);
        interleaved_bytes = s->weights().interleaved_bytes;
        plan = s->engine().memory_plan();
        threads = s->engine().threads();
        const uint64_t per_ctx = hmllm::KvCache::bytes_for(cfg.n_layers, 1, cfg.n_kv_heads * cfg.head_dim, so.kv_type);
        n_ctx = per_ctx ? static_cast<int>(plan.kv_cache / per_ctx) : a.ctx;
        if (a.prompt_tokens + a.gen_tokens > n_ctx)
            return fail(a, 2, "--prompt-tokens + --gen-tokens (" + std::to_string(a.prompt_tokens + a.gen_tokens) +
                                  ") is over the model's context size of " + std::to_string(n_ctx));
        prompt = bench_prompt(s->tokenizer(), a.prompt_tokens);
        db = decode_bytes(cfg, w, so.kv_type, a.prompt_tokens, a.gen_tokens);
    }
    std::fprintf(stderr, "hmllm_bench: %d threads, kernels %s, %s\n", threads, hmllm::active_kernels(),
                 plan.describe().c_str());

    std::vector<double> cold, warm, prefill, decode, interleave;
    for (int r = 0; r < a.repeat; ++r) {
        std::unique_ptr<hmllm::Session> s;
        const auto t0 = Clock::now();
        hmllm::Status st = hmllm::Session::open(a.model, so, &s);
        if (!st.ok()) return fail(a, 1, st.message);
        Clock::time_point first{};
        hmllm::GenerateOptions go;  // greedy (temperature 0), no end-of-generation test
        go.max_tokens = 1;
        go.on_token = [&](int32_t) {
            if (first == Clock::time_point{}) first = Clock::now();
            return true;
        };
        hmllm::GenerateResult g;
        st = s->engine().generate(prompt, go, &g);
        if (!st.ok()) return fail(a, 1, st.message);
        cold.push_back(ms_between(t0, first));
        interleave.push_back(s->weights().interleave_ms);  // part of the cold time above

        st = s->warmup();
        if (!st.ok()) return fail(a, 1, st.message);
        s->engine().truncate_cache(0);  // a real prefill of the whole prompt, no reused prefix
        go.max_tokens = a.gen_tokens;
        first = Clock::time_point{};
        const auto t1 = Clock::now();
        st = s->engine().generate(prompt, go, &g);
        if (!st.ok()) return fail(a, 1, st.message);
        if (static_cast<int>(g.tokens.size()) != a.gen_tokens || g.reused_tokens != 0)
            return fail(a, 1, "generated " + std::to_string(g.tokens.size()) + " tokens instead of " +
                                  std::to_string(a.gen_tokens) + " (" + hmllm::stop_reason_name(g.stop) + ")");
        warm.push_back(ms_between(t1, first));
        prefill.push_back(g.prefill_tps());
        decode.push_back(g.decode_tps());
        std::fprintf(stderr, "hmllm_bench: repeat %d/%d: ttft cold %.1f ms, warm %.1f ms; prefill %.1f tok/s, decode %.2f tok/s\n",
                     r + 1, a.repeat, cold.back(), warm.back(), prefill.back(), decode.back());
    }
    const uint64_t peak_rss = vm_hwm_bytes();  // before the bandwidth buffer exists

    std::fprintf(stderr, "hmllm_bench: measuring read bandwidth over %d MB with %d threads\n", a.bw_mb, threads);
    const double bw = read_bandwidth(threads, size_t(a.bw_mb) << 20, a.bw_passes);
    const double decode_tps = median(decode);
    const double per_token = double(db.weights) + db.kv;
    const double fraction = bw > 0 ? per_token * decode_tps / bw : 0;

    if (!a.json) {
        std::printf("threads %d, kernels %s\n", threads, hmllm::active_kernels());
        std::printf("prefill %.1f tok/s, decode %.2f tok/s, ttft cold %.1f ms, warm %.1f ms\n", median(prefill),
                    decode_tps, median(cold), median(warm));
        std::printf("peak RSS %.1f MB (model file %.1f MB + KV cache %.1f MB)\n", peak_rss / 1048576.0,
                    model_bytes / 1048576.0, plan.kv_cache / 1048576.0);
        std::printf("interleaved at load %.1f MB in %.1f ms (in the cold ttft)\n", interleaved_bytes / 1048576.0,
                    median(interleave));
        std::printf("read bandwidth %.2f GB/s, decode reads %.1f MB/token: %.0f%% of it\n", bw / 1e9,
                    per_token / 1048576.0, fraction * 100);
        return 0;
    }
    std::printf("{\"ok\": true, \"prefill_tps\": %.3f, \"decode_tps\": %.3f, \"ttft_ms\": %.3f, \"ttft_warm_ms\": %.3f, "
                "\"peak_rss_bytes\": %llu, \"bandwidth_fraction\": %.4f, \"threads\": %d, \"kernels\": \"%s\", "
                "\"model_bytes\": %llu, \"kv_bytes\": %llu, \"scratch_bytes\": %llu, \"bandwidth_bytes_per_s\": %.0f, "
                "\"decode_bytes_per_token\": %.0f, \"decode_weight_bytes\": %llu, \"decode_kv_bytes\": %.0f, "
                "\"interleaved_bytes\": %llu, \"interleave_ms\": %.3f, "
                "\"repeats\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d, \"ctx\": %d, \"kv\": \"%s\", "
                "\"samples\": {\"prefill_tps\": [%s], \"decode_tps\": [%s], \"ttft_ms\": [%s], \"ttft_warm_ms\": [%s]}}\n",
                median(prefill), decode_tps, median(cold), median(warm), (unsigned long long)peak_rss, fraction, threads,
                hmllm::active_kernels(), (unsigned long long)model_bytes, (unsigned long long)plan.kv_cache,
                (unsigned long long)plan.scratch, bw, per_token, (unsigned long long)db.weights, db.kv,
                (unsigned long long)interleaved_bytes, median(interleave), a.repeat,
                a.prompt_tokens, a.gen_tokens, n_ctx, a.kv.c_str(), list(prefill).c_str(), list(decode).c_str(),
                list(cold).c_str(), list(warm).c_str());
    return 0;
}
