// hm_llama_count: llama.cpp's side of the instruction counts taken under qemu next to hmllm.
// It does what hmllm's counting run does, with llama.cpp: the same token ids in, 1 thread, the
// prompt decoded as one batch, then greedy sampling, one token per decode, exactly N_GEN tokens
// (no stop at end-of-generation). CPU only, mmap on, llama.cpp's default extra buffer types
// (so the CPU repack of the weights is on, as llama.cpp has it by default).
//
//   hm_llama_count MODEL.gguf TOKENS N_GEN     TOKENS: comma-separated token ids, e.g. 2,651,1234
//
// stdout: {"ok": true, "tokens": [ids...]}; on an error one line on stderr and exit 1.
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static void quiet(ggml_log_level, const char *, void *) {}

[[noreturn]] static void fail(const std::string & msg) {
    std::fprintf(stderr, "hm_llama_count: %s\n", msg.c_str());
    std::exit(1);
}

static long parse_int(const std::string & s, const char * what) {
    char * end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') fail(std::string("bad ") + what + ": '" + s + "'");
    return v;
}

static std::vector<llama_token> parse_tokens(const std::string & csv) {
    std::vector<llama_token> out;
    size_t start = 0;
    while (start <= csv.size()) {
        const size_t comma = csv.find(',', start);
        const size_t end = comma == std::string::npos ? csv.size() : comma;
        out.push_back((llama_token) parse_int(csv.substr(start, end - start), "token id"));
        start = end + 1;
    }
    return out;
}

// Fill the batch with tokens at positions pos_0.., logits for the last one only (as examples/simple).
static void set_tokens(llama_batch_ext * batch, const llama_token * tokens, int n, llama_pos pos_0) {
    llama_batch_ext_clear(batch);
    for (int i = 0; i < n; ++i) {
        const int32_t idx = llama_batch_ext_add_token(batch, 0, tokens[i]);
        const llama_pos pos = pos_0 + i;
        if (idx < 0 || !llama_batch_ext_set_pos(batch, idx, &pos)) fail("could not fill the batch");
    }
    llama_batch_ext_set_output_logits(batch, n - 1, true);
}

int main(int argc, char ** argv) {
    if (argc != 4) fail("usage: hm_llama_count MODEL.gguf TOKENS N_GEN (TOKENS comma-separated ids)");
    const std::vector<llama_token> prompt = parse_tokens(argv[2]);
    const long n_gen = parse_int(argv[3], "N_GEN");
    if (n_gen < 1) fail("N_GEN must be at least 1");
    const int n_prompt = (int) prompt.size();

    llama_log_set(quiet, nullptr);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    mparams.load_mode = LLAMA_LOAD_MODE_MMAP;
    mparams.use_extra_bufts = true;  // the default: CPU_REPACK buffers for the weights it can repack
    llama_model * model = llama_model_load_from_file(argv[1], mparams);
    if (!model) fail(std::string("could not load the model ") + argv[1]);

    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (llama_token t : prompt) {
        if (t < 0 || t >= n_vocab) fail("token id " + std::to_string(t) + " is outside the vocabulary");
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t) (n_prompt + n_gen + 8);
    cparams.n_batch = cparams.n_ubatch = (uint32_t) n_prompt;
    cparams.n_threads = cparams.n_threads_batch = 1;
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (!ctx) fail("could not create the llama_context");

    llama_sampler * smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());

    llama_batch_ext * batch = llama_batch_ext_init(ctx);
    if (!batch) fail("could not allocate the batch");
    set_tokens(batch, prompt.data(), n_prompt, 0);

    std::vector<llama_token> out;
    llama_pos pos = n_prompt;
    for (;;) {
        const int32_t rc = llama_process(ctx, LLAMA_PROCESS_TYPE_DECODE, batch);
        if (rc != 0) fail("llama_process failed with " + std::to_string(rc));
        const llama_token next = llama_sampler_sample(smpl, ctx, -1);
        out.push_back(next);
        if ((long) out.size() == n_gen) break;
        set_tokens(batch, &next, 1, pos++);
    }

    std::string json = "{\"ok\": true, \"tokens\": [";
    for (size_t i = 0; i < out.size(); ++i) json += (i ? ", " : "") + std::to_string(out[i]);
    std::printf("%s]}\n", json.c_str());

    llama_batch_ext_free(batch);
    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
