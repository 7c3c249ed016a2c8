// Picks the kernel set at first use (HMLLM_KERNELS, else the best the CPU reports) and routes
// matmul calls through its table.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "hmllm/cpu_features.h"
#include "hmllm/ggml_types.h"
#include "kernel_table.h"

namespace hmllm {
namespace kern {

namespace {

enum SetId { kScalar, kNeon, kDotprod, kI8mm, kAvx2, kSetCount };
const char* const kNames[kSetCount] = {"scalar", "neon", "neon-dotprod", "neon-i8mm", "avx2"};

bool cpu_has(int id) {
    const CpuFeatures& f = cpu_features();
    switch (id) {
        case kScalar: return true;
#if defined(__aarch64__)
        case kNeon: return f.neon;
        case kDotprod: return f.neon && f.dotprod;
        case kI8mm: return f.neon && f.dotprod && f.i8mm;
#endif
#if defined(__x86_64__) || defined(_M_X64)
        case kAvx2: return f.avx2 && f.fma && f.f16c;
#endif
        default: (void)f; return false;
    }
}

KernelSet g_sets[kSetCount];
std::once_flag g_once;
std::atomic<const KernelSet*> g_active{nullptr};

int best_available() {
    for (int id : {kI8mm, kDotprod, kNeon, kAvx2})
        if (cpu_has(id)) return id;
    return kScalar;
}

int find_set(const char* name) {
    for (int i = 0; i < kSetCount; ++i)
        if (std::strcmp(name, kNames[i]) == 0) return i;
    return -1;
}

void init() {
    for (int i = 0; i < kSetCount; ++i) {
        g_sets[i].name = kNames[i];
        fill_scalar(&g_sets[i]);
    }
#if defined(__aarch64__)
    fill_neon(&g_sets[kNeon]);
    fill_neon(&g_sets[kDotprod]);
    fill_neon_dotprod(&g_sets[kDotprod]);
    fill_neon(&g_sets[kI8mm]);
    fill_neon_dotprod(&g_sets[kI8mm]);
    fill_neon_i8mm(&g_sets[kI8mm]);
#endif
#if defined(__x86_64__) || defined(_M_X64)
    fill_avx2(&g_sets[kAvx2]);
#endif
    int id = best_available();
    if (const char* env = std::getenv("HMLLM_KERNELS"); env != nullptr && *env != '\0' &&
                                                        std::strcmp(env, "auto") != 0) {
        const int want = find_set(env);
        if (want >= 0 && cpu_has(want)) {
            id = want;
        } else {
            std::fprintf(stderr, "hmllm: HMLLM_KERNELS=%s is not available on this CPU; using %s\n",
                         env, kNames[id]);
        }
    }
    g_active.store(&g_sets[id]);
}

const KernelSet& active() {
    std::call_once(g_once, init);
    return *g_active.load(std::memory_order_acquire);
}

}  // namespace
}  // namespace kern

using namespace kern;

namespace {
// The type's table entry if this runtime has kernels for it, else nullptr.
const TypeInfo* computable(uint32_t type) {
    const TypeInfo* t = type_info(type);
    return t != nullptr && t->kernel >= 0 ? t : nullptr;
}
}  // namespace

// The HM types are in the table as blocks of G columns of 2 + G/2 bytes per row, so one formula
// serves every type.
size_t row_bytes(uint32_t type, int64_t n_cols) {
    const TypeInfo* info = computable(type);
    if (info == nullptr || n_cols < 0 || n_cols % info->block_size != 0) return 0;
    return static_cast<size_t>(n_cols / info->block_size) * info->type_size;
}

int64_t row_granularity(uint32_t type) {
    const TypeInfo* info = type_info(type);
    return info ? info->tile_rows : 1;
}

bool kernel_supported(uint32_t type) { return computable(type) != nullptr; }

void matmul(const MatView& w, const Activations& act, float* y, int64_t y_stride, int64_t r0,
            int64_t r1) {
    const TypeInfo* info = computable(w.type);
    if (info == nullptr || act.kind() != info->vec_dot_type || act.n_cols() != w.n_cols) {
        std::fprintf(stderr, "hmllm: matmul of type %u with activations prepared for another type\n",
                     w.type);
        std::abort();
    }
    if (r1 <= r0) return;
    if (w.interleaved) active().mm_x4[info->kernel](w, act, y, y_stride, r0, r1);
    else active().mm[info->kernel](w, act, y, y_stride, r0, r1);
}

void dequantize_row(const MatView& w, int64_t row, float* dst) {
    const TypeInfo* info = computable(w.type);
    if (info == nullptr) return;
    if (!w.interleaved) {
        info->to_float(w.data, row, w.n_cols, dst);
        return;
    }
    // Block by block through one file-layout block on the stack: this is the embedding lookup of
    // every token, so no allocation.
    const size_t rb = row_bytes(w.type, w.n_cols), group_bytes = 4 * row_bytes(w.type, kQK);
    const uint8_t* groups = w.data + size_t(row / 4) * 4 * rb;
    uint8_t block[64];
    static_assert(sizeof block >= sizeof(BlockQ8_0) && sizeof block >= sizeof(BlockQ5_0));
    for (int64_t i = 0; i < w.n_cols / kQK; ++i) {
        deinterleave_block(w.type, groups + size_t(i) * group_bytes, static_cast<int>(row % 4), block);
        info->to_float(block, 0, kQK, dst + kQK * i);
    }
}

int64_t row_granularity(const MatView& w) { return w.interleaved ? 4 : row_granularity(w.type); }

bool interleave_pays(uint32_t type) {
    const TypeInfo* info = computable(type);
    return info != nullptr && active().x4_pays[info->kernel] && active().mm_x4[info->kernel] != nullptr;
}

void interleave_rows(uint32_t type, const uint8_t* src, int64_t n_cols, int64_t r0, int64_t r1, uint8_t* dst) {
    interleave_matrix(type, src, n_cols, r0, r1, dst);
}

void hadamard_rows(float* x, int64_t n_cols, int64_t batch) {
    // The butterflies of stages 1, 2 and 4 stay inside runs of 8 and are written out; from stage 8
    // on each butterfly pairs two contiguous runs, which the compiler vectorizes. Every element
    // sees the same operations in the same order as the textbook loop (each stage's butterflies
    // are independent), so the result is the same on every machine.
    constexpr int B = static_cast<int>(kRotationBlock);
    const float norm = 0.08838834764831845f;  // 1 / sqrt(128)
    for (int64_t r = 0; r < batch; ++r) {
        for (int64_t b0 = 0; b0 + B <= n_cols; b0 += B) {
            float* v = x + r * n_cols + b0;
            for (int i = 0; i < B; i += 8) {
                float* u = v + i;
                for (int j = 0; j < 8; j += 2) {
                    const float a = u[j], c = u[j + 1];
                    u[j] = a + c;
                    u[j + 1] = a - c;
                }
                for (int j = 0; j < 8; j += 4)
                    for (int k = j; k < j + 2; ++k) {
                        const float a = u[k], c = u[k + 2];
                        u[k] = a + c;
                        u[k + 2] = a - c;
                    }
                for (int k = 0; k < 4; ++k) {
                    const float a = u[k], c = u[k + 4];
                    u[k] = a + c;
                    u[k + 4] = a - c;
                }
            }
            for (int h = 8; h < B; h *= 2)
                for (int i = 0; i < B; i += 2 * h) {
                    float* lo = v + i;
                    float* hi = v + i + h;
                    for (int j = 0; j < h; ++j) {
                        const float a = lo[j], c = hi[j];
                        lo[j] = a + c;
                        hi[j] = a - c;
                    }
                }
            for (int j = 0; j < B; ++j) v[j] *= norm;
        }
    }
}

const char* active_kernels() { return active().name; }

bool select_kernels(const char* name) {
    active();
    if (name == nullptr) return false;
    const int id = std::strcmp(name, "auto") == 0 ? best_available() : find_set(name);
    if (id < 0 || !cpu_has(id)) return false;
    g_active.store(&g_sets[id], std::memory_order_release);
    return true;
}

std::vector<const char*> available_kernels() {
    std::vector<const char*> out;
    for (int i = 0; i < kSetCount; ++i)
        if (cpu_has(i)) out.push_back(kNames[i]);
    return out;
}

}  // namespace hmllm
