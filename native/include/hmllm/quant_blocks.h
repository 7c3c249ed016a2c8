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
//   Q6_K: acc = fma((float)isum, fp16(d) * d_a, acc)

// fp16 <-> fp32 conversions (fp16_to_fp32 / fp32_to_fp16) come from hmllm/fp16.h; the SIMD
// files use hardware conversions instead.
inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace hmllm
