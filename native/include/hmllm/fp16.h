// IEEE half <-> float by bit manipulation: portable across GCC, Clang and the OHOS toolchain
// (whose _Float16 / __fp16 support differs by target), and exact for every half value.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

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
