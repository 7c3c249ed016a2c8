// Times matmul (GEMV by default) of each weight type with every kernel set this CPU can run,
// single-threaded, on two FFN-like shapes. Prints weight bandwidth and the speed-up over the
// scalar reference. A benchmark, not a test: nothing here passes or fails by time. Each figure
// is the best of --repeat timed runs of --min-time seconds (shared CI machines are noisy).
// All sets compute bitwise the same y (kernel_table.h), so only the time differs.
//
//   hmllm_bench_kernels [--batch N] [--min-time SECONDS] [--repeat N] [--type NAME]... [--json]
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hmllm/gguf_reader.h"
#include "hmllm/kernels.h"
#include "hmllm/quant_blocks.h"

using namespace hmllm;

namespace {

std::vector<uint8_t> random_weights(uint32_t type, int64_t rows, int64_t cols) {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<uint8_t> w(row_bytes(type, cols) * rows);
    for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
    const auto set_f16 = [&](size_t at, float v) {
        const uint16_t h = fp32_to_fp16(v);
        w[at] = static_cast<uint8_t>(h);
        w[at + 1] = static_cast<uint8_t>(h >> 8);
    };
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
            for (size_t i = 0; i < w.size(); i += 4) {
                const float v = (byte(rng) - 128) / 128.0f;
                std::memcpy(&w[i], &v, 4);
            }
            break;
        case GgmlType::F16:
            for (size_t i = 0; i < w.size(); i += 2) set_f16(i, (byte(rng) - 128) / 128.0f);
            break;
        case GgmlType::BF16:
            for (size_t i = 0; i < w.size(); i += 2) {
                const float v = (byte(rng) - 128) / 128.0f;  // exact in bf16
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                w[i] = static_cast<uint8_t>(bits >> 16);
                w[i + 1] = static_cast<uint8_t>(bits >> 24);
            }
            break;
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL:
            for (size_t i = 0; i < w.size(); i += type_info(type)->type_size) set_f16(i, 0.01f);
            break;
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:  // d, then the offset m
            for (size_t i = 0; i < w.size(); i += type_info(type)->type_size) set_f16(i, 0.01f), set_f16(i + 2, -0.08f);
            break;
        case GgmlType::Q4_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ4_K))
                set_f16(i + offsetof(BlockQ4_K, d), 0.002f), set_f16(i + offsetof(BlockQ4_K, dmin), 0.002f);
            break;
        case GgmlType::Q6_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ6_K)) set_f16(i + offsetof(BlockQ6_K, d), 0.001f);
            break;
        case GgmlType::Q5_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ5_K))
                set_f16(i + offsetof(BlockQ5_K, d), 0.001f), set_f16(i + offsetof(BlockQ5_K, dmin), 0.002f);
            break;
        case GgmlType::Q3_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ3_K)) set_f16(i + offsetof(BlockQ3_K, d), 0.002f);
            break;
        case GgmlType::Q2_K:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockQ2_K))
                set_f16(i + offsetof(BlockQ2_K, d), 0.01f), set_f16(i + offsetof(BlockQ2_K, dmin), 0.005f);
            break;
        case GgmlType::IQ4_XS:
            for (size_t i = 0; i < w.size(); i += sizeof(BlockIQ4_XS)) set_f16(i + offsetof(BlockIQ4_XS, d), 0.0005f);
            break;
        default: {  // HM_Q4: 4 scales per tile-group
            const size_t tgb = hm_tile_group_bytes(hm_group(type));
            for (size_t i = 0; i < w.size(); i += tgb)
                for (int r = 0; r < 4; ++r) set_f16(i + 2 * r, 0.01f);
        }
    }
    return w;
}

struct Result {
    std::string type, set;
    int64_t rows, cols;
    double us, gbps, speedup;
};

}  // namespace

int main(int argc, char** argv) {
    bool json = false;
    int64_t batch = 1;
    double min_time = 0.2;
    int repeat = 3;
    std::vector<std::string> only;  // --type: type names to run (all when empty)
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
            batch = std::atoll(argv[++i]);
        } else if (std::strcmp(argv[i], "--min-time") == 0 && i + 1 < argc) {
            min_time = std::atof(argv[++i]);
        } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            only.push_back(argv[++i]);
        } else {
            std::fprintf(stderr,
                         "usage: %s [--batch N] [--min-time SECONDS] [--repeat N] [--type NAME]... [--json]\n",
                         argv[0]);
            return 2;
        }
    }
    if (batch < 1) batch = 1;
    if (repeat < 1) repeat = 1;

    const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::Q8_0,
                              GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_1,
                              GgmlType::Q5_1, GgmlType::Q4_K,
                              GgmlType::Q6_K, GgmlType::HM_Q4_G32, GgmlType::HM_Q4_G64,
                              GgmlType::HM_Q4_G128, GgmlType::Q5_K, GgmlType::Q3_K,
                              GgmlType::Q2_K, GgmlType::IQ4_XS, GgmlType::IQ4_NL,
                              GgmlType::BF16};
    std::vector<Result> results;
    for (GgmlType gt : types) {
        const uint32_t type = static_cast<uint32_t>(gt);
        bool wanted = only.empty();
        for (const std::string& name : only) wanted = wanted || name == type_info(type)->name;
        if (!wanted) continue;
        const int64_t bs = type_info(type)->block_size;
        // FFN up (2048 x 640) and down (640 x 2048); K-quants need 256-multiples: 768 then.
        const int64_t narrow = 640 % bs == 0 ? 640 : 768;
        const int64_t shapes[2][2] = {{2048, narrow}, {narrow, 2048}};
        for (const auto& shape : shapes) {
            const int64_t rows = shape[0], cols = shape[1];
            const std::vector<uint8_t> w = random_weights(type, rows, cols);
            const MatView mv{type, w.data(), cols, rows};
            std::vector<float> x(cols * batch), y(rows * batch);
            std::mt19937 rng(7);
            std::normal_distribution<float> normal;
            for (auto& v : x) v = normal(rng);
            Activations act;
            act.quantize(type, x.data(), cols, batch);
            double scalar_us = 0;
            for (const char* set : available_kernels()) {
                select_kernels(set);
                matmul(mv, act, y.data(), rows, 0, rows);  // warm caches
                double us = 0;
                for (int rep = 0; rep < repeat; ++rep) {
                    int64_t iters = 0;
                    const auto t0 = std::chrono::steady_clock::now();
                    double elapsed = 0;
                    do {
                        matmul(mv, act, y.data(), rows, 0, rows);
                        ++iters;
                        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    } while (elapsed < min_time);
                    const double t = elapsed / iters * 1e6;
                    if (rep == 0 || t < us) us = t;
                }
                if (std::strcmp(set, "scalar") == 0) scalar_us = us;
                results.push_back({type_info(type)->name, set, rows, cols, us,
                                   w.size() / (us * 1e-6) / 1e9, scalar_us / us});
                if (!json) {
                    const Result& r = results.back();
                    std::printf("%-11s %5lld x %-5lld %-13s %9.1f us %7.2f GB/s  x%.1f vs scalar\n",
                                r.type.c_str(), (long long)rows, (long long)cols, set, r.us, r.gbps,
                                r.speedup);
                    std::fflush(stdout);
                }
            }
        }
    }
    select_kernels("auto");
    if (json) {
        std::printf("{\"batch\": %lld, \"threads\": 1, \"repeat\": %d, \"auto\": \"%s\", \"results\": [",
                    (long long)batch, repeat, active_kernels());
        for (size_t i = 0; i < results.size(); ++i) {
            const Result& r = results[i];
            std::printf("%s{\"type\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"kernels\": \"%s\", "
                        "\"us\": %.2f, \"weight_gbps\": %.3f, \"speedup_vs_scalar\": %.2f}",
                        i ? ", " : "", r.type.c_str(), (long long)r.rows, (long long)r.cols,
                        r.set.c_str(), r.us, r.gbps, r.speedup);
        }
        std::printf("]}\n");
    }
    return 0;
}
