// Quantized block layouts, described once. The ggml layouts are byte-exact with the blocks
// llama.cpp writes into GGUF files (little-endian, packed, no padding), so tensors are used in
// place from the mapped file. The HM_Q4_* types are this project's own INT4 (docs/int4-format.md).
// Each block's size is checked against the type table (ggml_types.h) in src/ggml_types.cpp.
#pragma once

#include <cstdint>

#include "hmllm/fp16.h"
#include "hmllm/ggml_types.h"

namespace hmllm {

constexpr int kQK = 32;    // elements per Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 block
constexpr int kQKK = 256;  // elements per K-quant super-block

// Q4_0: 32 weights, x = (q - 8) * d. Byte j holds element j (low nibble) and j + 16 (high).
struct BlockQ4_0 {
    uint16_t d;      // fp16 scale
    uint8_t qs[16];
};

// Q5_0: 32 weights, x = (q - 16) * d with q = low nibble | (fifth bit << 4). Nibbles as Q4_0;
// bit i of the little-endian 32-bit qh is the fifth bit of element i.
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
};

// Q4_1: 32 weights, x = q * d + m, q in 0..15. Nibbles as Q4_0.
struct BlockQ4_1 {
    uint16_t d;  // fp16 scale
    uint16_t m;  // fp16 offset (the block's minimum)
    uint8_t qs[16];
};

// Q5_1: 32 weights, x = q * d + m, q in 0..31: nibbles and fifth bits as Q5_0.
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[16];
};

// Q8_0: 32 weights, x = q * d.
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[32];
};

// Q4_K: 256 weights in 8 sub-blocks of 32, x = d * sc[j] * q - dmin * m[j], q in 0..15.
// scales[12] packs eight 6-bit scales and eight 6-bit mins (see q4k_scale_min). The 128 bytes
// of qs come in 4 chunks of 32: chunk c's low nibbles are sub-block 2c, its high nibbles 2c+1.
struct BlockQ4_K {
    uint16_t d;     // fp16 scale of the scales
    uint16_t dmin;  // fp16 scale of the mins
    uint8_t scales[12];
    uint8_t qs[128];
};

// Sub-block j's 6-bit scale and min: j < 4 in the low 6 bits of bytes j / j+4; j >= 4 split
// between a nibble of byte j+4 and the top two bits of bytes j-4 / j.
inline void q4k_scale_min(int j, const uint8_t* s, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Q6_K: 256 weights in 16 sub-blocks of 16, x = d * scales[e / 16] * (q - 32), q in 0..63.
// Two halves of 128 elements; half h uses ql[64h..64h+63], qh[32h..32h+31]. Within a half, for
// l in 0..31: element l     = ql[l] low nibble    | (qh[l] bits 0-1) << 4
//             element l+32  = ql[l+32] low nibble | (qh[l] bits 2-3) << 4
//             element l+64  = ql[l] high nibble   | (qh[l] bits 4-5) << 4
//             element l+96  = ql[l+32] high nibble| (qh[l] bits 6-7) << 4
struct BlockQ6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
};

// Q5_K: 256 weights in 8 sub-blocks of 32, x = d * sc[j] * q - dmin * m[j], q in 0..31. Scales,
// mins and the nibbles of qs as Q4_K; bit j of qh[l] is the fifth bit of element 32j + l.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
};

// Q3_K: 256 weights in 16 sub-blocks of 16, x = d * (sc[e / 16] - 32) * q, q in -4..3: two low
// bits in qs and a high bit in hmask, q = low - (high bit clear ? 4 : 0). Two halves of 128; in
// half h, element 128h + 32j + l (j, shift 2j, in 0..3; l in 0..31) has its low bits at
// (qs[32h + l] >> 2j) & 3 and its high bit at bit 4h + j of hmask[l]. scales[12] packs sixteen
// 6-bit values (see q3k_scale).
struct BlockQ3_K {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint16_t d;
};

// Sub-block i's 6-bit scale (0..63; the weight uses it minus 32): low nibble from byte i (i < 8)
// or the high nibble of byte i - 8, top two bits from byte 8 + i % 4 at bit 2 * (i / 4).
inline int q3k_scale(int i, const uint8_t* s) {
    const int lo = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
    return lo | (((s[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
}

// All sixteen scales of q3k_scale, minus 32 (-32..31), four sub-blocks per 32-bit word (the SIMD
// kernels' unpacking; the same values as q3k_scale(i, s) - 32).
inline void q3k_scales16(const uint8_t* s, int8_t out[16]) {
    constexpr uint32_t m2 = 0x03030303, m4 = 0x0f0f0f0f, k32 = 0x20202020;
    uint32_t a[3], o[4];
    __builtin_memcpy(a, s, 12);
    o[0] = (a[0] & m4) | ((a[2] & m2) << 4);
    o[1] = (a[1] & m4) | (((a[2] >> 2) & m2) << 4);
    o[2] = ((a[0] >> 4) & m4) | (((a[2] >> 4) & m2) << 4);
    o[3] = ((a[1] >> 4) & m4) | (((a[2] >> 6) & m2) << 4);
    for (uint32_t& v : o) v = ((v | 0x80808080u) - k32) ^ 0x80808080u;  // bytewise v - 32, no borrow across bytes
    __builtin_memcpy(out, o, 16);
}

// Q2_K: 256 weights in 16 sub-blocks of 16, x = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4),
// s = e / 16, q in 0..3. Element 128h + 32j + l (as Q3_K) is (qs[32h + l] >> 2j) & 3.
struct BlockQ2_K {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d;
    uint16_t dmin;
};

// IQ4_NL and IQ4_XS: 4-bit indices into one non-linear table of int8 values (llama.cpp's
// kvalues_iq4nl), so a weight is d * kIq4Values[index].
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_NL: 32 weights, x = d * kIq4Values[index]; indices as Q4_0's nibbles (byte j: element j low,
// j + 16 high).
struct BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[16];
};

// IQ4_XS: 256 weights in 8 sub-blocks of 32, x = d * (ls_j - 32) * kIq4Values[index]; the 6-bit ls_j
// is the nibble j % 2 of scales_l[j / 2] with bits 2j, 2j+1 of scales_h above it. Sub-block j's
// indices are qs[16j .. 16j + 15] as IQ4_NL's.
struct BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[4];
    uint8_t qs[128];
};

inline int iq4xs_scale(int j, const BlockIQ4_XS& b) {
    return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4);
}

// ---- HM_Q4_G32 / HM_Q4_G64 / HM_Q4_G128: symmetric INT4, one fp16 scale per row and group of
// G = 32, 64 or 128 columns, value = (q - 8) * d, q in 0..15. Rows come in tiles of 4 (n_rows % 4 == 0, n_cols % G == 0).
// The tensor is tiles in row order; a tile is its groups in column order; a tile-group is
//   8 bytes:  fp16 d of rows 0, 1, 2, 3 of the tile
//   G/32 chunks of 64 bytes, chunk c covering columns 32c..32c+31 of the group:
//     byte j = 16*i + 4*r + e (i, r, e in 0..3) holds row r's columns
//       32c + 4i + e       in the low nibble and
//       32c + 16 + 4i + e  in the high nibble.
// So one 16-byte load gives 4 rows x 4 columns, the operand of vdotq_laneq_s32 that puts row r
// in lane r; a tile-group is 4 * (2 + G/2) bytes, the same 2 + G/2 bytes per row and group
// that the type table (ggml_types.h) gives.
constexpr int kHmTileRows = 4;
// Group size G of an HM type: its block size in the type table.
inline int hm_group(uint32_t type) { return static_cast<int>(type_info(type)->block_size); }
inline constexpr int64_t hm_tile_group_bytes(int group) { return 8 + 2 * group; }
// Byte offset and nibble shift of (row r of the tile, column col of the group) in a tile-group.
inline void hm_nibble_pos(int r, int col, int* byte, int* shift) {
    const int c = col / 32, k = col % 32, h = k / 16, i = (k % 16) / 4, e = k % 4;
    *byte = 8 + 64 * c + 16 * i + 4 * r + e;
    *shift = 4 * h;
}

// ---- Activation blocks (produced by Activations::quantize, never stored in files).
// Q8_32: per 32 values a float scale and the int sum of the quants (used for weight offsets).
// Q8_K : per 256 values a float scale, and per 16 the int sum of the quants (used for mins).
// Q8_1 : Q8_32 plus, per 32, fp16(d * sum of the quants) as a float (Q4_1 / Q5_1's offsets).
//
// ---- Dot products: integer sums per block are exact; the float steps follow one canonical
// order on every kernel set (full list in src/kernels/kernel_table.h), blocks in order, one
// accumulator per output:
//   32-blocks (Q4_0, Q5_0, Q8_0, HM_Q4 per row): acc = fma((float)isum, fp16(d_w) * d_a, acc)
//   Q4_1 / Q5_1: that step, then acc = fma(fp16(m_w), sd_a, acc), sd_a = fp16(d * s_a) (Q8_1)
//   Q4_K: acc = fma((float)isum, fp16(d) * d_a, acc); acc = fma((float)msum, -(fp16(dmin) * d_a), acc)
//   Q6_K, Q3_K, IQ4_XS: acc = fma((float)isum, fp16(d) * d_a, acc)
//   Q5_K, Q2_K: as Q4_K; IQ4_NL: as the 32-blocks; BF16: as F16

// fp16 <-> fp32 conversions (fp16_to_fp32 / fp32_to_fp16) come from hmllm/fp16.h; the SIMD
// files use hardware conversions instead.
inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace hmllm
