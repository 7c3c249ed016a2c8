// hmllm_run: runs one prompt through a model with the runtime, the way the app would. It is what
// `hmbuild run` executes on the target (under qemu-aarch64 for linux-arm64).
//
//   hmllm_run --model M.gguf (--prompt TEXT | --tokens 2,651,...) [--max-tokens N] [--threads N]
//             [--temperature X] [--top-k K] [--top-p P] [--seed S] [--ctx N] [--kv f16|q8_0]
//             [--kernels NAME] [--logits-out FILE] [--json]
//   hmllm_run --model M.gguf --classify alarm,weather,... --prompt TEXT [--example LABEL=TEXT ...]
//             [--calibrate] [--json]
//   hmllm_run --model M.gguf --chat MESSAGES.json [--chat-format FORMAT.json] [--print-prompt]
//             [--timeout-ms N] [sampling and context options as above] [--json]
//
// --chat runs a conversation ({"messages": [{"role", "content"}, ...]}) in a compiled chat format
// (the JSON of `hmbuild chat-template MODEL.gguf --json`, docs/chat.md) through Session::chat: it
// stops at the format's end-of-turn or EOS token. Without --chat-format the session uses the format
// the model file carries (hmbuild chat-template --embed), as an app's init() without chatFormat does.
// --print-prompt prints the rendered prompt (and,
// with --json, its token ids) instead of generating. --timeout-ms stops generation with what exists,
// reported as stop "timeout". With --json, "stop" says what ended it: the stop string, "eos",
// "max_tokens", "context_full" or "timeout".
//
// --classify routes the prompt text to one of the labels by label likelihood
// (Session::classify); each --example is a labelled few-shot example placed before the text.
// --calibrate subtracts each label's score on an empty text: a small base model leans towards the
// last example's label and towards common words, and the same lean shows on the empty text.
//
// Exit status: 0 on success, 2 on bad arguments, 1 when the model cannot be loaded or run; the
// error is one line on stderr (and {"ok": false, "error": ...} on stdout with --json).
#include <cerrno>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "hmllm/kernels.h"
#include "hmllm/session.h"

#include "tool_support.h"

namespace {

using hmllm::tools::json_escape;
using hmllm::tools::check;
using hmllm::tools::has_flag;
using hmllm::tools::Opt;
using hmllm::tools::parse_long;
using hmllm::tools::parse_options;

struct Args {
    std::string model, prompt, tokens, kv = "f16", kernels, logits_out, classify, chat, chat_format;
    std::vector<std::pair<std::string, std::string>> examples;  // (text, label)
    bool has_prompt = false, has_tokens = false, json = false, has_classify = false, calibrate = false;
    bool print_prompt = false;
    int max_tokens = 32, threads = 0, ctx = 2048, top_k = 40, timeout_ms = 0;
    float temperature = 0.0f, top_p = 0.95f;
    unsigned long long seed = 0;
};

int fail(const Args& a, int code, const std::string& msg) {
    return hmllm::tools::fail("hmllm_run", a.json, code, msg);
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
        if (!parse_long(s.substr(i, j - i).c_str(), 0, 0x7fffffff, &v)) return false;
        out->push_back(static_cast<int32_t>(v));
        i = j + 1;
    }
    return !out->empty();
}

std::vector<std::string> split_labels(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        out.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

int run_classify(const Args& a, hmllm::Session& session) {
    std::vector<std::string> labels = split_labels(a.classify);
    for (const std::string& l : labels)
        if (l.empty()) return fail(a, 2, "--classify takes comma-separated non-empty labels");
    const auto t0 = std::chrono::steady_clock::now();
    hmllm::ClassifyOptions options;
    options.examples = a.examples;
    options.calibrate = a.calibrate;
    hmllm::ClassifyResult r;
    hmllm::Status st = session.classify(a.prompt, labels, options, &r);
    if (!st.ok()) return fail(a, 1, st.message);
    const std::vector<double>& raw = r.raw_scores;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::string& best = labels[size_t(r.best)];
    if (!a.json) {
        std::printf("%s\n", best.c_str());
        for (size_t i = 0; i < labels.size(); ++i)
            std::fprintf(stderr, "hmllm_run: %-12s %.3f\n", labels[i].c_str(), r.scores[i]);
        return 0;
    }
    std::string ls, sc, rs;
    for (size_t i = 0; i < labels.size(); ++i) {
        char buf[64];
        ls += (i ? ", \"" : "\"") + json_escape(labels[i]) + "\"";
        std::snprintf(buf, sizeof buf, "%s%.4f", i ? ", " : "", r.scores[i]);
        sc += buf;
        std::snprintf(buf, sizeof buf, "%s%.4f", i ? ", " : "", raw[i]);
        rs += buf;
    }
    std::printf("{\"ok\": true, \"label\": \"%s\", \"best\": %d, \"labels\": [%s], \"scores\": [%s], "
                "\"raw_scores\": [%s], \"calibrated\": %s, \"examples\": %zu, \"ms\": %.3f, \"threads\": %d, "
                "\"kernels\": \"%s\"}\n",
                json_escape(best).c_str(), r.best, ls.c_str(), sc.c_str(), rs.c_str(), a.calibrate ? "true" : "false",
                a.examples.size(), ms,
                session.engine().threads(), hmllm::active_kernels());
    return 0;
}

bool read_text(const std::string& path, std::string* out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::stringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
    return !in.bad();
}

std::string ids_json(const std::vector<int32_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s;
}

int run_chat(const Args& a, hmllm::Session& session, const std::vector<hmllm::ChatMessage>& messages,
             const hmllm::InferRequest& base) {
    if (a.print_prompt) {
        std::string text;
        std::vector<int32_t> ids;
        hmllm::Status st = session.chat_prompt(messages, &text, &ids);
        if (!st.ok()) return fail(a, 1, st.message);
        if (a.json)
            std::printf("{\"ok\": true, \"prompt\": \"%s\", \"prompt_tokens\": [%s], \"n_prompt_tokens\": %zu}\n",
                        json_escape(text).c_str(), ids_json(ids).c_str(), ids.size());
        else
            std::printf("%s\n", text.c_str());
        return 0;
    }
    hmllm::InferRequest req = base;
    bool timed_out = false;
    if (a.timeout_ms > 0) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(a.timeout_ms);
        req.should_stop = [deadline, &timed_out] { return timed_out = std::chrono::steady_clock::now() >= deadline; };
    }
    hmllm::InferResult r;
    hmllm::Status st = session.chat(messages, req, &r);
    if (!st.ok()) return fail(a, 1, st.message);
    const std::string stop = timed_out ? "timeout" : r.stop;
    const hmllm::GenerateResult& g = r.generation;
    if (!a.json) {
        std::printf("\n");
        std::fprintf(stderr, "hmllm_run: %d prompt tokens (%d reused), %zu generated, stop %s, ttft %.1f ms, decode %.2f tok/s\n",
                     g.prompt_tokens, g.reused_tokens, g.tokens.size(), stop.c_str(), g.ttft_ms, g.decode_tps());
        return 0;
    }
    std::printf("{\"ok\": true, \"text\": \"%s\", \"tokens\": [%s], \"prompt_tokens\": [%s], \"n_prompt_tokens\": %d, "
                "\"stop\": \"%s\", \"ttft_ms\": %.3f, \"prefill_tps\": %.3f, \"decode_tps\": %.3f, \"threads\": %d, "
                "\"kernels\": \"%s\"}\n",
                json_escape(r.text).c_str(), ids_json(g.tokens).c_str(), ids_json(r.prompt_tokens).c_str(), g.prompt_tokens,
                json_escape(stop).c_str(), g.ttft_ms, g.prefill_tps(), g.decode_tps(), session.engine().threads(),
                hmllm::active_kernels());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    a.json = has_flag(argc, argv, "--json");
    const auto on_option = [&](const std::string& k, const char* v) {
        if (!v) {  // --json, --calibrate, --print-prompt
            a.calibrate |= k == "--calibrate";
            a.print_prompt |= k == "--print-prompt";
            return Opt::ok;
        }
        long n = 0;
        bool ok = true;
        if (k == "--model") a.model = v;
        else if (k == "--prompt") a.prompt = v, a.has_prompt = true;
        else if (k == "--tokens") a.tokens = v, a.has_tokens = true;
        else if (k == "--max-tokens") ok = parse_long(v, 0, 1 << 20, &n), a.max_tokens = int(n);
        else if (k == "--threads") ok = parse_long(v, 0, 256, &n), a.threads = int(n);
        else if (k == "--ctx") ok = parse_long(v, 1, 1 << 20, &n), a.ctx = int(n);
        else if (k == "--top-k") ok = parse_long(v, 0, 1 << 30, &n), a.top_k = int(n);
        // api.toml's InferOptions.seed: 0 .. 2^53 - 1, what a JS number holds exactly (hmbuild run checks it too).
        else if (k == "--seed") ok = parse_long(v, 0, 9007199254740991L, &n), a.seed = static_cast<unsigned long long>(n);
        else if (k == "--temperature") ok = parse_float(v, 0.0f, 100.0f, &a.temperature);
        else if (k == "--top-p") ok = parse_float(v, 0.0f, 1.0f, &a.top_p);
        else if (k == "--kv") a.kv = v, ok = a.kv == "f16" || a.kv == "q8_0";
        else if (k == "--kernels") a.kernels = v;
        else if (k == "--logits-out") a.logits_out = v;
        else if (k == "--classify") a.classify = v, a.has_classify = true;
        else if (k == "--chat") a.chat = v, ok = !a.chat.empty();
        else if (k == "--chat-format") a.chat_format = v, ok = !a.chat_format.empty();
        else if (k == "--timeout-ms") ok = parse_long(v, 1, 3600000, &n), a.timeout_ms = int(n);
        else if (k == "--example") {
            const char* eq = std::strchr(v, '=');
            ok = eq && eq != v && eq[1];
            if (ok) a.examples.emplace_back(std::string(eq + 1), std::string(v, size_t(eq - v)));
        }
        else return Opt::unknown;
        return check(ok);
    };
    const std::string bad = parse_options(argc, argv, {"--json", "--calibrate", "--print-prompt"}, on_option);
    if (!bad.empty()) return fail(a, 2, bad);
    if (a.model.empty()) return fail(a, 2, "--model is required");
    const bool chat = !a.chat.empty();
    if (chat && (a.has_prompt || a.has_tokens || a.has_classify || !a.logits_out.empty()))
        return fail(a, 2, "--chat takes the conversation from its file: no --prompt, --tokens, --classify or --logits-out");
    if (!chat && !a.chat_format.empty()) return fail(a, 2, "--chat-format only goes with --chat");
    if ((a.print_prompt || a.timeout_ms) && !chat) return fail(a, 2, "--print-prompt and --timeout-ms only go with --chat");
    if (!chat && a.has_prompt == a.has_tokens) return fail(a, 2, "give exactly one of --prompt and --tokens");
    if (a.has_classify && !a.has_prompt) return fail(a, 2, "--classify needs the text as --prompt");
    if ((!a.examples.empty() || a.calibrate) && !a.has_classify)
        return fail(a, 2, "--example and --calibrate only go with --classify");
    if (!a.kernels.empty() && !hmllm::select_kernels(a.kernels.c_str()))
        return fail(a, 2, "kernel set '" + a.kernels + "' is unknown or not supported by this CPU");

    // The conversation and its format are read before the model is mapped: a bad file fails fast.
    std::vector<hmllm::ChatMessage> messages;
    hmllm::SessionOptions so;
    if (chat) {
        std::string text;
        if (!a.chat_format.empty() && !read_text(a.chat_format, &so.chat_format)) return fail(a, 1, "cannot read the chat format " + a.chat_format);
        if (!read_text(a.chat, &text)) return fail(a, 1, "cannot read the conversation " + a.chat);
        hmllm::Status st = hmllm::parse_chat_messages(text, a.chat, &messages);
        if (!st.ok()) return fail(a, 1, st.message);
    }
    so.threads = a.threads;
    so.context_size = a.ctx;
    so.kv_type = a.kv == "q8_0" ? hmllm::KvType::Q8_0 : hmllm::KvType::F16;
    std::unique_ptr<hmllm::Session> session;
    hmllm::Status st = hmllm::Session::open(a.model, so, &session);
    if (!st.ok()) return fail(a, 1, st.message);
    if (a.has_classify) return run_classify(a, *session);

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
    if (chat) return run_chat(a, *session, messages, req);
    std::vector<int32_t> prompt;
    if (a.has_tokens) {
        if (!parse_tokens(a.tokens, &prompt)) return fail(a, 2, "--tokens must be comma-separated token ids");
    } else {
        prompt = session->tokenizer().encode(a.prompt, session->tokenizer().add_bos());
    }
    // --logits-out: one row of n_vocab floats per sampled token, the distribution it was sampled
    // from (row 0: the last prompt position). should_stop is asked right after each token is
    // sampled, while the engine still holds those logits.
    std::vector<float> rows;
    if (!a.logits_out.empty()) {
        req.should_stop = [&] {
            const std::vector<float>& lg = session->engine().logits();
            rows.insert(rows.end(), lg.begin(), lg.end());
            return false;
        };
    }
    hmllm::InferResult r;
    st = session->generate_tokens(prompt, req, &r);
    if (!st.ok()) return fail(a, 1, st.message);
    if (!a.logits_out.empty()) {
        if (r.generation.stop == hmllm::StopReason::EndOfGeneration) {  // the row that chose EOS
            const std::vector<float>& lg = session->engine().logits();
            rows.insert(rows.end(), lg.begin(), lg.end());
        }
        FILE* f = std::fopen(a.logits_out.c_str(), "wb");
        if (!f || std::fwrite(rows.data(), sizeof(float), rows.size(), f) != rows.size())
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
