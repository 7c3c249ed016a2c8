// hmllm_eval: how close a model's next-token distributions are to a reference model's on a text.
// It is what `hmbuild eval` executes on the target (under qemu-aarch64 for linux-arm64), e.g. to
// compare a re-quantized model against the original it came from.
//
//   hmllm_eval --model M.gguf --reference R.gguf --text-file FILE [--ctx N] [--threads N]
//              [--kv f16|q8_0] [--kernels NAME] [--json]
//
// The text is tokenized once with the model's tokenizer (both models must share the vocabulary)
// and cut into windows; each window is a fresh context (BOS first when the vocabulary wants one)
// of at most --ctx tokens. Both models run the window in lockstep chunks of kChunk positions with
// all logits, and each chunk is compared before the next is computed, so memory stays at
// kChunk x n_vocab floats per model whatever the context. Every token of the text after the
// first (with BOS: every token) is predicted exactly once. Per predicted position, in double:
//   top-1 agreement   argmax of the model == argmax of the reference; also counted apart over the
//                     positions where the reference is confident (its top token has p >= 0.5), as
//                     a flip at a near-tie says less about a model than a flip of a clear choice
//   KL(ref || model)  sum_v p_ref(v) (log p_ref(v) - log p_model(v))
//   NLL               -log p(next token), for each model; perplexity = exp(mean NLL)
//
// Progress goes to stderr as "hmllm_eval: progress DONE/TOTAL" lines; the result is one JSON object
// on stdout (--json) or a short report. Exit status: 0 on success, 2 on bad arguments or input,
// 1 when a model cannot be loaded or run; the error is one line on stderr (and
// {"ok": false, "error": ...} on stdout with --json).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hmllm/kernels.h"
#include "hmllm/session.h"

#include "tool_support.h"

namespace {

using hmllm::tools::check;
using hmllm::tools::has_flag;
using hmllm::tools::Opt;
using hmllm::tools::parse_long;
using hmllm::tools::parse_options;

constexpr int kChunk = 32;  // positions per forward step (the engine's batch size)
// A position where the reference's top token has at least this probability counts as confident.
constexpr double kConfident = 0.5;

struct Args {
    std::string model, reference, text_file, kv = "f16", kernels;
    int ctx = 512, threads = 0;
    bool json = false;
};

int fail(const Args& a, int code, const std::string& msg) {
    return hmllm::tools::fail("hmllm_eval", a.json, code, msg);
}

// Log-softmax of one logits row into out (double), and the row's argmax.
int log_softmax(const float* logits, int n, std::vector<double>* out) {
    int best = 0;
    float mx = logits[0];
    for (int i = 1; i < n; ++i)
        if (logits[i] > mx) mx = logits[i], best = i;
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
    const double lse = static_cast<double>(mx) + std::log(sum);
    out->resize(size_t(n));
    for (int i = 0; i < n; ++i) (*out)[size_t(i)] = static_cast<double>(logits[i]) - lse;
    return best;
}

// Both models must turn text into the same ids and mean the same thing by each id.
bool same_vocabulary(hmllm::Session& m, hmllm::Session& r, std::string* why) {
    const hmllm::Tokenizer& a = m.tokenizer();
    const hmllm::Tokenizer& b = r.tokenizer();
    const int va = m.engine().config().n_vocab, vb = r.engine().config().n_vocab;
    if (a.n_vocab() != b.n_vocab() || va != vb) {
        *why = "the model has " + std::to_string(va) + " tokens in its vocabulary and the reference " +
               std::to_string(vb) + ", so their next-token distributions cannot be compared; evaluate a model "
               "against a reference with the same tokenizer";
        return false;
    }
    if (a.kind() != b.kind() || a.bos_id() != b.bos_id() || a.eos_id() != b.eos_id() || a.add_bos() != b.add_bos()) {
        *why = "the model and the reference use different tokenizers (kind or BOS/EOS differ); evaluate a model "
               "against a reference with the same tokenizer";
        return false;
    }
    for (int32_t id = 0; id < a.n_vocab(); ++id) {
        if (a.token_text(id) != b.token_text(id)) {
            *why = "the model and the reference have different vocabularies (token " + std::to_string(id) +
                   " differs); evaluate a model against a reference with the same tokenizer";
            return false;
        }
    }
    return true;
}

struct Totals {
    long long positions = 0, agree = 0, correct = 0, correct_ref = 0;
    long long confident = 0, agree_confident = 0;  // positions where p_ref(top) >= kConfident
    double kl_sum = 0, kl_max = 0, nll = 0, nll_ref = 0;
};

}  // namespace

int main(int argc, char** argv) {
    Args a;
    a.json = has_flag(argc, argv, "--json");
    const std::string bad = parse_options(argc, argv, {"--json"}, [&](const std::string& k, const char* v) {
        if (!v) return Opt::ok;  // --json
        long n = 0;
        bool ok = true;
        if (k == "--model") a.model = v;
        else if (k == "--reference") a.reference = v;
        else if (k == "--text-file") a.text_file = v;
        else if (k == "--ctx") ok = parse_long(v, 2, 1 << 20, &n), a.ctx = int(n);
        else if (k == "--threads") ok = parse_long(v, 0, 256, &n), a.threads = int(n);
        else if (k == "--kv") a.kv = v, ok = a.kv == "f16" || a.kv == "q8_0";
        else if (k == "--kernels") a.kernels = v;
        else return Opt::unknown;
        return check(ok);
    });
    if (!bad.empty()) return fail(a, 2, bad);
    if (a.model.empty() || a.reference.empty() || a.text_file.empty())
        return fail(a, 2, "--model, --reference and --text-file are required");
    if (!a.kernels.empty() && !hmllm::select_kernels(a.kernels.c_str()))
        return fail(a, 2, "kernel set '" + a.kernels + "' is unknown or not supported by this CPU");

    std::string text;
    {
        std::ifstream in(a.text_file, std::ios::binary);
        if (!in) return fail(a, 2, "cannot read the text file " + a.text_file);
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        return fail(a, 2, "the text file " + a.text_file + " is empty; give a text to evaluate on");

    const auto t0 = std::chrono::steady_clock::now();
    hmllm::SessionOptions so;
    so.threads = a.threads;
    so.context_size = a.ctx;
    so.kv_type = a.kv == "q8_0" ? hmllm::KvType::Q8_0 : hmllm::KvType::F16;
    std::unique_ptr<hmllm::Session> model, ref;
    hmllm::Status st = hmllm::Session::open(a.model, so, &model);
    if (!st.ok()) return fail(a, 1, "the model " + a.model + " cannot be loaded: " + st.message);
    st = hmllm::Session::open(a.reference, so, &ref);
    if (!st.ok()) return fail(a, 1, "the reference " + a.reference + " cannot be loaded: " + st.message);
    std::string why;
    if (!same_vocabulary(*model, *ref, &why)) return fail(a, 2, why);

    // The effective context: the engine clamps the requested one to each model's training context.
    const int ctx = std::min({a.ctx, model->engine().config().ctx_train, ref->engine().config().ctx_train});
    if (ctx < 2) return fail(a, 2, "the context must hold at least 2 tokens");
    const int n_vocab = model->engine().config().n_vocab;

    const hmllm::Tokenizer& tok = model->tokenizer();
    std::vector<int32_t> seq = tok.encode(text, tok.add_bos());
    const bool bos = tok.add_bos() && tok.bos_id() >= 0 && !seq.empty() && seq[0] == tok.bos_id();
    std::vector<int32_t> content(seq.begin() + (bos ? 1 : 0), seq.end());
    if (content.size() < 2)
        return fail(a, 2, "the text is " + std::to_string(content.size()) +
                              " token(s) long; it needs at least 2 tokens to evaluate next-token predictions");

    // Windows: with BOS, [BOS] + the next ctx-1 text tokens (every text token is predicted); without,
    // ctx text tokens overlapping the previous window by one (every token after the first is).
    std::vector<std::vector<int32_t>> windows;
    const size_t step = size_t(ctx) - 1;
    if (bos) {
        for (size_t s = 0; s < content.size(); s += step) {
            std::vector<int32_t> w{tok.bos_id()};
            w.insert(w.end(), content.begin() + long(s), content.begin() + long(std::min(content.size(), s + step)));
            windows.push_back(std::move(w));
        }
    } else {
        for (size_t s = 0; s + 1 < content.size(); s += step)
            windows.emplace_back(content.begin() + long(s), content.begin() + long(std::min(content.size(), s + ctx)));
    }
    long long total = 0;
    for (const auto& w : windows) total += static_cast<long long>(w.size()) - 1;
    std::fprintf(stderr, "hmllm_eval: %zu text tokens, %zu window(s) of up to %d tokens, %d threads, kernels %s\n",
                 content.size(), windows.size(), ctx, model->engine().threads(), hmllm::active_kernels());
    std::fprintf(stderr, "hmllm_eval: progress 0/%lld\n", total);
    std::fflush(stderr);

    Totals t;
    std::vector<double> lm, lr;
    hmllm::Engine& em = model->engine();
    hmllm::Engine& er = ref->engine();
    for (size_t wi = 0; wi < windows.size(); ++wi) {
        const std::vector<int32_t>& w = windows[wi];
        em.truncate_cache(0);
        er.truncate_cache(0);
        // Positions 0 .. len-2 predict tokens 1 .. len-1; the last token needs no forward.
        const int len = static_cast<int>(w.size());
        for (int p = 0; p < len - 1; p += kChunk) {
            const int n = std::min(kChunk, len - 1 - p);
            st = em.forward(w.data() + p, n, p, /*all_logits=*/true);
            if (!st.ok()) return fail(a, 1, "the model failed: " + st.message);
            st = er.forward(w.data() + p, n, p, /*all_logits=*/true);
            if (!st.ok()) return fail(a, 1, "the reference failed: " + st.message);
            const float* gm = em.logits().data();
            const float* gr = er.logits().data();
            for (int i = 0; i < n; ++i) {
                const int32_t next = w[size_t(p + i + 1)];
                const int am = log_softmax(gm + size_t(i) * n_vocab, n_vocab, &lm);
                const int ar = log_softmax(gr + size_t(i) * n_vocab, n_vocab, &lr);
                double kl = 0;
                for (int v = 0; v < n_vocab; ++v) {
                    const double pr = std::exp(lr[size_t(v)]);
                    if (pr > 0) kl += pr * (lr[size_t(v)] - lm[size_t(v)]);
                }
                kl = std::max(kl, 0.0);  // rounding can leave a tiny negative for equal distributions
                t.kl_sum += kl;
                t.kl_max = std::max(t.kl_max, kl);
                t.agree += am == ar;
                if (std::exp(lr[size_t(ar)]) >= kConfident) {
                    ++t.confident;
                    t.agree_confident += am == ar;
                }
                t.correct += am == next;
                t.correct_ref += ar == next;
                t.nll -= lm[size_t(next)];
                t.nll_ref -= lr[size_t(next)];
                ++t.positions;
            }
            std::fprintf(stderr, "hmllm_eval: progress %lld/%lld window %zu/%zu kl_mean %.6f\n", t.positions, total,
                         wi + 1, windows.size(), t.kl_sum / double(t.positions));
            std::fflush(stderr);
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double np = double(t.positions);
    const double ppl = std::exp(t.nll / np), ppl_ref = std::exp(t.nll_ref / np);
    const double top1 = double(t.agree) / np, kl_mean = t.kl_sum / np;
    // JSON null when the reference is never confident on this text.
    char top1_confident[32] = "null";
    if (t.confident)
        std::snprintf(top1_confident, sizeof top1_confident, "%.17g", double(t.agree_confident) / double(t.confident));
    if (!a.json) {
        std::printf("tokens %lld, windows %zu, ctx %d\n", t.positions, windows.size(), ctx);
        std::printf("top-1 agreement %.4f, KL(ref||model) mean %.6f max %.6f\n", top1, kl_mean, t.kl_max);
        if (t.confident)
            std::printf("top-1 agreement %.4f where the reference is confident (p >= %.1f, %lld positions)\n",
                        double(t.agree_confident) / double(t.confident), kConfident, t.confident);
        std::printf("perplexity %.4f (reference %.4f)\n", ppl, ppl_ref);
        return 0;
    }
    std::printf("{\"ok\": true, \"top1_agreement\": %.17g, \"kl_mean\": %.17g, \"ppl\": %.17g, \"ppl_reference\": %.17g, "
                "\"top1_agreement_confident\": %s, \"confident_share\": %.17g, "
                "\"kl_max\": %.17g, \"nll_mean\": %.17g, \"nll_mean_reference\": %.17g, \"accuracy\": %.17g, "
                "\"accuracy_reference\": %.17g, \"tokens\": %lld, \"text_tokens\": %zu, \"windows\": %zu, \"ctx\": %d, "
                "\"bos\": %s, \"n_vocab\": %d, \"threads\": %d, \"kernels\": \"%s\", \"kv\": \"%s\", \"seconds\": %.3f}\n",
                top1, kl_mean, ppl, ppl_ref, top1_confident, double(t.confident) / np, t.kl_max, t.nll / np,
                t.nll_ref / np, double(t.correct) / np, double(t.correct_ref) / np, t.positions, content.size(), windows.size(), ctx, bos ? "true" : "false",
                n_vocab, em.threads(), hmllm::active_kernels(), a.kv.c_str(), seconds);
    return 0;
}
