// hmllm_calibrate: the second moments of every weight matrix's input over a text, what
// `hmbuild quantize --calibrate` needs to quantize each matrix for the inputs it really sees
// (error-compensating rounding: the error of a rounded column is pushed onto the columns after it,
// weighted by how the inputs co-vary, so the matrix's outputs move least).
//
//   hmllm_calibrate --model M.gguf (--text-file FILE | --tokens ID,ID,...) --out DIR [--ctx N]
//                   [--max-tokens N] [--threads N] [--json]
//
// The text is tokenized with the model's tokenizer and cut into windows of at most --ctx tokens
// (BOS first when the vocabulary wants one); every window position runs through the model with all
// logits, so the output projection sees every position too. --tokens gives the ids themselves (no
// BOS added; what the tests compare against a NumPy forward pass). For each input site (Q/K/V share one
// per layer, as do gate/up; the attention output; the FFN's inner activation; the output
// projection's input) the tool accumulates X^T X in double and writes it, divided by the number of
// positions, as a float32 NumPy file DIR/<site>.npy (n_cols x n_cols, symmetric) with
// DIR/manifest.json naming the GGUF tensors each file belongs to. Writes go to DIR.partial first
// and are renamed into place at the end, so an interrupted run leaves no half-written DIR.
//
// Progress goes to stderr as "hmllm_calibrate: progress DONE/TOTAL"; the summary is one JSON object
// on stdout (--json). Exit status: 0, 2 on bad arguments or input, 1 when the model cannot be
// loaded or run, with the error as one line on stderr (and {"ok": false, "error": ...} with --json).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
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

namespace fs = std::filesystem;
constexpr int kChunk = 32;  // positions per forward step

struct Args {
    std::string model, text_file, out, tokens;
    int ctx = 512, threads = 0;
    long max_tokens = 0;  // 0: the whole text
    bool json = false;
};

int fail(const Args& a, int code, const std::string& msg) {
    return hmllm::tools::fail("hmllm_calibrate", a.json, code, msg);
}

// X^T X of one input site, upper triangle, in double.
struct Moments {
    int n = 0;
    long long rows = 0;
    std::vector<double> xtx;  // n x n, row-major, j >= i filled
};

// Adds the n_tokens rows of x to m, rows of the result split over the engine's threads (each
// task owns its output rows, so no two threads write the same double).
void accumulate(hmllm::ThreadPool& pool, Moments* m, const float* x, int n_cols, int n_tokens) {
    if (m->n == 0) {
        m->n = n_cols;
        m->xtx.assign(size_t(n_cols) * n_cols, 0.0);
    }
    pool.parallel_for(n_cols, [&](int64_t i) {
        thread_local std::vector<float> acc;
        acc.assign(size_t(n_cols), 0.0f);
        for (int t = 0; t < n_tokens; ++t) {
            const float* row = x + size_t(t) * n_cols;
            const float a = row[i];
            if (a == 0.0f) continue;
            for (int j = static_cast<int>(i); j < n_cols; ++j) acc[size_t(j)] += a * row[j];
        }
        double* out = &m->xtx[size_t(i) * n_cols];
        for (int j = static_cast<int>(i); j < n_cols; ++j) out[j] += acc[size_t(j)];
    });
    m->rows += n_tokens;
}

// NumPy .npy version 1.0, little-endian float32, C order (the format is a short text header).
bool write_npy(const fs::path& path, const Moments& m) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(m.n) + ", " +
                         std::to_string(m.n) + "), }";
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    if (!out) return false;
    const uint16_t hlen = static_cast<uint16_t>(header.size());
    out.write("\x93NUMPY\x01\x00", 8);
    const char len_bytes[2] = {static_cast<char>(hlen & 0xff), static_cast<char>(hlen >> 8)};
    out.write(len_bytes, 2);
    out << header;
    std::vector<float> row(size_t(m.n));
    const double scale = m.rows > 0 ? 1.0 / double(m.rows) : 0.0;
    for (int i = 0; i < m.n; ++i) {
        for (int j = 0; j < m.n; ++j) {
            const double v = j >= i ? m.xtx[size_t(i) * m.n + j] : m.xtx[size_t(j) * m.n + i];
            row[size_t(j)] = static_cast<float>(v * scale);
        }
        out.write(reinterpret_cast<const char*>(row.data()), std::streamsize(row.size() * sizeof(float)));
    }
    return static_cast<bool>(out);
}

// The GGUF tensors that read each site's input.
std::vector<std::string> tensors_of(int layer, hmllm::InputSite site, bool tied) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    switch (site) {
        case hmllm::InputSite::AttnIn: return {b + "attn_q.weight", b + "attn_k.weight", b + "attn_v.weight"};
        case hmllm::InputSite::AttnOut: return {b + "attn_output.weight"};
        case hmllm::InputSite::FfnIn: return {b + "ffn_gate.weight", b + "ffn_up.weight"};
        case hmllm::InputSite::FfnMid: return {b + "ffn_down.weight"};
        case hmllm::InputSite::Output: return {tied ? "token_embd.weight" : "output.weight"};
    }
    return {};
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
        else if (k == "--text-file") a.text_file = v;
        else if (k == "--tokens") a.tokens = v;
        else if (k == "--out") a.out = v;
        else if (k == "--ctx") ok = parse_long(v, 2, 1 << 20, &n), a.ctx = int(n);
        else if (k == "--max-tokens") ok = parse_long(v, 0, 1L << 30, &n), a.max_tokens = n;
        else if (k == "--threads") ok = parse_long(v, 0, 256, &n), a.threads = int(n);
        else return Opt::unknown;
        return check(ok);
    });
    if (!bad.empty()) return fail(a, 2, bad);
    if (a.model.empty() || a.text_file.empty() == a.tokens.empty() || a.out.empty())
        return fail(a, 2, "--model, --out and one of --text-file or --tokens are required");
    const fs::path out_dir(a.out), partial(a.out + ".partial");
    std::error_code ec;
    if (fs::exists(out_dir, ec)) return fail(a, 2, "the output folder " + a.out + " already exists; remove it or pick another");

    std::string text;
    if (!a.text_file.empty()) {
        std::ifstream in(a.text_file, std::ios::binary);
        if (!in) return fail(a, 2, "cannot read the text file " + a.text_file);
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    if (a.tokens.empty() && text.find_first_not_of(" \t\r\n") == std::string::npos)
        return fail(a, 2, "the text file " + a.text_file + " is empty; give a calibration text");

    hmllm::SessionOptions so;
    so.threads = a.threads;
    so.context_size = a.ctx;
    std::unique_ptr<hmllm::Session> session;
    hmllm::Status st = hmllm::Session::open(a.model, so, &session);
    if (!st.ok()) return fail(a, 1, "the model " + a.model + " cannot be loaded: " + st.message);
    hmllm::Engine& engine = session->engine();
    const int ctx = std::min(a.ctx, engine.config().ctx_train);
    if (ctx < 2) return fail(a, 2, "the context must hold at least 2 tokens");

    const hmllm::Tokenizer& tok = session->tokenizer();
    std::vector<int32_t> seq;
    bool bos = tok.add_bos() && tok.bos_id() >= 0;
    if (!a.tokens.empty()) {
        bos = false;
        std::stringstream ss(a.tokens);
        std::string item;
        while (std::getline(ss, item, ',')) {
            long id = 0;
            if (!parse_long(item.c_str(), 0, engine.config().n_vocab - 1, &id))
                return fail(a, 2, "bad token id '" + item + "' in --tokens (the vocabulary has " +
                                      std::to_string(engine.config().n_vocab) + " tokens)");
            seq.push_back(static_cast<int32_t>(id));
        }
    } else {
        seq = tok.encode(text, false);
    }
    if (a.max_tokens > 0 && long(seq.size()) > a.max_tokens) seq.resize(size_t(a.max_tokens));
    std::vector<std::vector<int32_t>> windows;
    const size_t step = size_t(ctx) - (bos ? 1 : 0);
    for (size_t s = 0; s < seq.size(); s += step) {
        std::vector<int32_t> w;
        if (bos) w.push_back(tok.bos_id());
        w.insert(w.end(), seq.begin() + long(s), seq.begin() + long(std::min(seq.size(), s + step)));
        windows.push_back(std::move(w));
    }
    long long total = 0;
    for (const auto& w : windows) total += static_cast<long long>(w.size());
    if (seq.empty()) return fail(a, 2, "the text file " + a.text_file + " gives no tokens");

    std::map<std::pair<int, int>, Moments> sites;  // (layer, site) -> moments
    engine.set_input_observer([&](int layer, hmllm::InputSite site, const float* x, int n_cols, int n_tokens) {
        accumulate(engine.pool(), &sites[{layer, static_cast<int>(site)}], x, n_cols, n_tokens);
    });
    std::fprintf(stderr, "hmllm_calibrate: %zu text tokens, %zu window(s) of up to %d tokens, %d threads\n", seq.size(),
                 windows.size(), ctx, engine.threads());
    std::fprintf(stderr, "hmllm_calibrate: progress 0/%lld\n", total);
    std::fflush(stderr);
    long long done = 0;
    for (const auto& w : windows) {
        engine.truncate_cache(0);
        for (size_t p = 0; p < w.size(); p += kChunk) {
            const int n = static_cast<int>(std::min<size_t>(kChunk, w.size() - p));
            st = engine.forward(w.data() + p, n, static_cast<int>(p), /*all_logits=*/true);
            if (!st.ok()) return fail(a, 1, "the model failed: " + st.message);
            done += n;
            std::fprintf(stderr, "hmllm_calibrate: progress %lld/%lld\n", done, total);
            std::fflush(stderr);
        }
    }
    engine.set_input_observer(nullptr);

    fs::remove_all(partial, ec);
    if (!fs::create_directories(partial, ec))
        return fail(a, 2, "cannot create the folder " + partial.string() + ": " + ec.message());
    const bool tied = session->model().find_tensor("output.weight") == nullptr;
    std::string manifest = "{\n  \"tokens\": " + std::to_string(total) + ",\n  \"text_tokens\": " +
                           std::to_string(seq.size()) + ",\n  \"ctx\": " + std::to_string(ctx) + ",\n  \"tensors\": {";
    bool first = true;
    for (const auto& [key, m] : sites) {
        const auto site = static_cast<hmllm::InputSite>(key.second);
        const std::string file = (key.first >= 0 ? "blk." + std::to_string(key.first) + "." : std::string()) +
                                 hmllm::input_site_name(site) + ".npy";
        if (!write_npy(partial / file, m)) {
            fs::remove_all(partial, ec);
            return fail(a, 1, "cannot write " + (partial / file).string());
        }
        for (const std::string& t : tensors_of(key.first, site, tied)) {
            manifest += std::string(first ? "" : ",") + "\n    \"" + t + "\": \"" + file + "\"";
            first = false;
        }
    }
    manifest += "\n  }\n}\n";
    {
        std::ofstream mf(partial / "manifest.json", std::ios::binary);
        mf << manifest;
        if (!mf) {
            fs::remove_all(partial, ec);
            return fail(a, 1, "cannot write " + (partial / "manifest.json").string());
        }
    }
    fs::rename(partial, out_dir, ec);
    if (ec) return fail(a, 1, "cannot move " + partial.string() + " to " + a.out + ": " + ec.message());
    if (a.json)
        std::printf("{\"ok\": true, \"tokens\": %lld, \"text_tokens\": %zu, \"windows\": %zu, \"ctx\": %d, \"sites\": %zu, "
                    "\"out\": \"%s\"}\n",
                    total, seq.size(), windows.size(), ctx, sites.size(), json_escape(a.out).c_str());
    else
        std::printf("%lld positions in %zu window(s); %zu input sites written to %s\n", total, windows.size(), sites.size(),
                    a.out.c_str());
    return 0;
}
