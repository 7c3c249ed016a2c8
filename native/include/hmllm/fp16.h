// IEEE half <-> float by bit manipulation: portable across GCC, Clang and the OHOS toolchain
// (whose _Float16 / __fp16 support differs by target), and exact for every half value.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace hmllm {

inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {  // subnormal: mant * 2^-24, exact in float
        const float f = static_cast<float>(mant) * 5.9604644775390625e-08f;
        return sign ? -f : f;
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// n halves -> floats, the same values as fp16_to_fp32 (NaN stays NaN) but branch-free, so the
// compiler vectorizes it with the baseline instruction set (SSE2, NEON): the exponent and
// mantissa move into float position and the bias goes 15 -> 127; an all-ones exponent (inf, NaN)
// gets 112 more; zero and subnormals are built as 2^-14 + m * 2^-24 and then lose the 2^-14,
// which is exact. Attention converts every cached key and value of a head this way; against the
// 256 KB lookup table it replaced, that conversion went from 5.2% to 3.2% of Gemma 3 270M's
// decode time (perf, x86_64, 2 threads, 200 tokens).
inline void fp16_to_fp32_row(const uint16_t* h, float* out, int n) {
    int i = 0;
#if defined(__aarch64__)
    // Every aarch64 core converts halves in hardware (FCVTL, part of the base instruction set), and
    // exactly, as the code below: one instruction per 4 values instead of about a dozen (decode
    // attention of Gemma 3 270M on cortex-a76: KvCache::head_values 3.4 M -> 0.5 M instructions per
    // token, bench --count). A NaN stays NaN (FCVTL quiets a signalling one).
    for (; i + 8 <= n; i += 8) {
        const float16x8_t v = vreinterpretq_f16_u16(vld1q_u16(h + i));
        vst1q_f32(out + i, vcvt_f32_f16(vget_low_f16(v)));
        vst1q_f32(out + i + 4, vcvt_high_f32_f16(v));
    }
#endif
    for (; i < n; ++i) {
        const uint32_t em = uint32_t(h[i] & 0x7fff) << 13;
        const uint32_t e = em & 0x0f800000u;
        const uint32_t special = 0u - uint32_t(e == 0x0f800000u), tiny = 0u - uint32_t(e == 0);  // all-ones masks
        uint32_t u = em + (112u << 23) + (special & (112u << 23)) + (tiny & (1u << 23));
        float f;
        std::memcpy(&f, &u, 4);
        f -= 6.103515625e-05f;  // for every lane (no branch), kept only for zero and subnormals
        uint32_t t;
        std::memcpy(&t, &f, 4);
        u = ((t & tiny) | (u & ~tiny)) | (uint32_t(h[i] & 0x8000) << 16);
        std::memcpy(out + i, &u, 4);
    }
}

inline uint16_t fp32_to_fp16(float f) {  // round to nearest even
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // overflows to inf
    if (abs < 0x38800000u) {  // subnormal or zero in half: the integer nearest |f| * 2^24
        float a;
        std::memcpy(&a, &abs, 4);
        return uint16_t(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)));
    }
    uint32_t v = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (v & 1))) ++v;
    return uint16_t(sign | v);
}

}  // namespace hmllm
