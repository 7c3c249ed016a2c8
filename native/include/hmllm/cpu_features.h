// Instruction-set features of the CPU we run on, as the OS reports them (getauxval on aarch64,
// cpuid + xgetbv on x86_64), detected once.
#pragma once

namespace hmllm {

struct CpuFeatures {
    bool neon, dotprod, i8mm, avx2, fma, f16c;
};
const CpuFeatures& cpu_features();

}  // namespace hmllm
