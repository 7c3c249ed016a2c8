// hmllm_run: runs one prompt through a model with the runtime, the way the app would. It is what
// `hmbuild run` executes on the target (under qemu-aarch64 for linux-arm64).
//
//   hmllm_run --model M.gguf (--prompt TEXT | --tokens 2,651,...) [--max-tokens N] [--threads N]
//             [--temperature X] [--top-k K] [--top-p P] [--seed S] [--ctx N] [--kv f16|q8_0]
//             [--kernels NAME] [--logits-out FILE] [--json]
//
// Exit status: 0 on success, 2 on bad arguments, 1 when the model cannot be loaded or run; the
// error is one line on stderr (and {"ok": false, "error": ...} on stdout with --json).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hmllm/kernels.h"
#include "hmllm/session.h"

namespace {

struct Args {
    std::string model, prompt, tokens, kv = "f16", kernels, logits_out;
    bool has_prompt = false, has_tokens = false, json = false;
    int max_tokens = 32, threads = 0, ctx = 2048, top_k = 40;
    float temperature = 0.0f, top_p = 0.95f;
    unsigned long long seed = 0;
};

std::string json_escape(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);  // UTF-8 passes through (the decoder emits valid UTF-8)
                }
        }
    }
    return out;
}

int fail(const Args& a, int code, const std::string& msg) {
    std::fprintf(stderr, "hmllm_run: %s\n", msg.c_str());
    if (a.json) std::printf("{\"ok\": false, \"error\": \"%s\"}\n", json_escape(msg).c_str());
    return code;
}

bool parse_int(const char* s, long lo, long hi, long* out) {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool parse_float(const char* s, float lo, float hi, float* out) {
    char* end = nullptr;
    errno = 0;
    float v = std::strtof(s, &end);
    if (errno || !end || *end || end == s || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

bool parse_tokens(const std::string& s, std::vector<int32_t>* out) {
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        long v;
        if (!parse_int(s.substr(i, j - i).c_str(), 0, 0x7fffffff, &v)) return false;
        out->push_back(static_cast<int32_t>(v));
        i = j + 1;
    }
    return !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) a.json |= std::strcmp(argv[i], "--json") == 0;
    for (int i = 1; i < argc; ++i) {
        std::string k = argv[i];
        if (k == "--json") continue;
        if (i + 1 >= argc) return fail(a, 2, "option " + k + " needs a value (or is unknown)");
        const char* v = argv[++i];
        long n;
        bool ok = true;
        if (k == "--model") a.model = v;
        else if (k == "--prompt") a.prompt = v, a.has_prompt = true;
        else if (k == "--tokens") a.tokens = v, a.has_tokens = true;
        else if (k == "--max-tokens") ok = parse_int(v, 0, 1 << 20, &n), a.max_tokens = int(n);
        else if (k == "--threads") ok = parse_int(v, 0, 256, &n), a.threads = int(n);
        else if (k == "--ctx") ok = parse_int(v, 1, 1 << 20, &n), a.ctx = int(n);
        else if (k == "--top-k") ok = parse_int(v, 0, 1 << 30, &n), a.top_k = int(n);
        else if (k == "--seed") ok = parse_int(v, 0, 0x7fffffff, &n), a.seed = static_cast<unsigned long long>(n);
        else if (k == "--temperature") ok = parse_float(v, 0.0f, 100.0f, &a.temperature);
        else if (k == "--top-p") ok = parse_float(v, 0.0f, 1.0f, &a.top_p);
        else if (k == "--kv") a.kv = v, ok = a.kv == "f16" || a.kv == "q8_0";
        else if (k == "--kernels") a.kernels = v;
        else if (k == "--logits-out") a.logits_out = v;
        else return fail(a, 2, "unknown option " + k);
        if (!ok) return fail(a, 2, "bad value '" + std::string(v) + "' for " + k);
    }
    if (a.model.empty()) return fail(a, 2, "--model is required");
    if (a.has_prompt == a.has_tokens) return fail(a, 2, "give exactly one of --prompt and --tokens");
    if (!a.kernels.empty() && !hmllm::select_kernels(a.kernels.c_str()))
        return fail(a, 2, "kernel set '" + a.kernels + "' is unknown or not supported by this CPU");

    hmllm::SessionOptions so;
    so.threads = a.threads;
    so.context_size = a.ctx;
    so.kv_type = a.kv == "q8_0" ? hmllm::KvType::Q8_0 : hmllm::KvType::F16;
    std::unique_ptr<hmllm::Session> session;
    hmllm::Status st = hmllm::Session::open(a.model, so, &session);
    if (!st.ok()) return fail(a, 1, st.message);

    hmllm::InferRequest req;
    req.max_tokens = a.max_tokens;
    req.sampling.temperature = a.temperature;
    req.sampling.top_k = a.top_k;
    req.sampling.top_p = a.top_p;
    req.sampling.seed = a.seed;
    if (!a.json) {
        req.on_piece = [](const std::string& piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            return true;
        };
    }
    std::vector<int32_t> prompt;
    if (a.has_tokens) {
        if (!parse_tokens(a.tokens, &prompt)) return fail(a, 2, "--tokens must be comma-separated token ids");
    } else {
        prompt = session->tokenizer().encode(a.prompt, session->tokenizer().add_bos());
    }
    hmllm::InferResult r;
    st = session->generate_tokens(prompt, req, &r);
    if (!st.ok()) return fail(a, 1, st.message);
    if (!a.logits_out.empty()) {
        // Logits after the last generated token's predecessor: the distribution the final token
        // was sampled from (the last prompt position when max_tokens is 1).
        const std::vector<float>& lg = session->engine().logits();
        FILE* f = std::fopen(a.logits_out.c_str(), "wb");
        if (!f || std::fwrite(lg.data(), sizeof(float), lg.size(), f) != lg.size())
            return fail(a, 1, "cannot write " + a.logits_out);
        std::fclose(f);
    }
    const hmllm::GenerateResult& g = r.generation;
    if (!a.json) {
        std::printf("\n");
        std::fprintf(stderr, "hmllm_run: %d prompt tokens, %zu generated, ttft %.1f ms, decode %.2f tok/s, kernels %s\n",
                     g.prompt_tokens, g.tokens.size(), g.ttft_ms, g.decode_tps(), hmllm::active_kernels());
        return 0;
    }
    std::string toks, ptoks;
    for (size_t i = 0; i < g.tokens.size(); ++i) toks += (i ? ", " : "") + std::to_string(g.tokens[i]);
    for (size_t i = 0; i < r.prompt_tokens.size(); ++i) ptoks += (i ? ", " : "") + std::to_string(r.prompt_tokens[i]);
    std::printf("{\"ok\": true, \"text\": \"%s\", \"tokens\": [%s], \"prompt_tokens\": [%s], \"n_prompt_tokens\": %d, "
                "\"ttft_ms\": %.3f, \"prefill_tps\": %.3f, \"decode_tps\": %.3f, \"stop\": \"%s\", \"threads\": %d, "
                "\"kernels\": \"%s\", \"memory\": \"%s\"}\n",
                json_escape(r.text).c_str(), toks.c_str(), ptoks.c_str(), g.prompt_tokens, g.ttft_ms, g.prefill_tps(),
                g.decode_tps(), hmllm::stop_reason_name(g.stop), session->engine().threads(), hmllm::active_kernels(),
                json_escape(session->engine().memory_plan().describe()).c_str());
    return 0;
}
