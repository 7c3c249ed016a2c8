#include "hmllm/cpu_features.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#elif defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif

namespace hmllm {
namespace {

#if defined(__aarch64__)
// Linux uapi bit numbers (asm/hwcap.h); older headers lack some of them.
constexpr unsigned long kHwcapAsimd = 1UL << 1;
constexpr unsigned long kHwcapAsimdDp = 1UL << 20;
constexpr unsigned long kHwcap2I8mm = 1UL << 13;
#endif

CpuFeatures detect() {
    CpuFeatures f{};
#if defined(__aarch64__)
    const unsigned long hw = getauxval(AT_HWCAP);
    const unsigned long hw2 = getauxval(AT_HWCAP2);
    f.neon = (hw & kHwcapAsimd) != 0;
    f.dotprod = f.neon && (hw & kHwcapAsimdDp) != 0;
    f.i8mm = f.neon && (hw2 & kHwcap2I8mm) != 0;
#elif defined(__x86_64__) || defined(_M_X64)
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
        bool os_avx = false;
        if (osxsave && avx) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            os_avx = (lo & 6) == 6;  // the OS saves XMM and YMM state
        }
        f.fma = os_avx && ((c >> 12) & 1);
        f.f16c = os_avx && ((c >> 29) & 1);
        if (os_avx && __get_cpuid_count(7, 0, &a, &b, &c, &d)) f.avx2 = (b >> 5) & 1;
    }
#endif
    return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

}  // namespace hmllm
