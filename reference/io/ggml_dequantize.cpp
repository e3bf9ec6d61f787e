#include "reference/io/ggml_dequantize.hpp"

#include <bit>
#include <cstring>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"

namespace specdec {

static_assert(std::endian::native == std::endian::little, "GGUF I/O assumes a little-endian host");

namespace {

constexpr uint32_t QK = 32;    // elements per block of the simple quants
constexpr uint32_t QK_K = 256;  // elements per block of the K-quants

constexpr GgmlTypeTraits kTypes[] = {
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", QK, 2 + QK / 2, true},
    {GgmlType::Q4_1, "Q4_1", QK, 2 + 2 + QK / 2, true},
    {GgmlType::Q5_0, "Q5_0", QK, 2 + 4 + QK / 2, true},
    {GgmlType::Q5_1, "Q5_1", QK, 2 + 2 + 4 + QK / 2, true},
    {GgmlType::Q8_0, "Q8_0", QK, 2 + QK, true},
    {GgmlType::Q8_1, "Q8_1", QK, 4 + 4 + QK, false},
    {GgmlType::Q2_K, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, false},
    {GgmlType::Q3_K, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, false},
    {GgmlType::Q4_K, "Q4_K", QK_K, 2 + 2 + 12 + QK_K / 2, true},
    {GgmlType::Q5_K, "Q5_K", QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2, true},
    {GgmlType::Q6_K, "Q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, true},
    {GgmlType::Q8_K, "Q8_K", QK_K, 4 + QK_K + QK_K / 8, false},
    {GgmlType::IQ2_XXS, "IQ2_XXS", QK_K, 2 + QK_K / 4, false},
    {GgmlType::IQ2_XS, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, false},
    {GgmlType::IQ3_XXS, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8, false},
    {GgmlType::IQ1_S, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, false},
    {GgmlType::IQ4_NL, "IQ4_NL", QK, 2 + QK / 2, false},
    {GgmlType::IQ3_S, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, false},
    {GgmlType::IQ2_S, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, false},
    {GgmlType::IQ4_XS, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::IQ1_M, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
    {GgmlType::TQ1_0, "TQ1_0", QK_K, 2 + 4 * 13, false},
    {GgmlType::TQ2_0, "TQ2_0", QK_K, 2 + 64, false},
    {GgmlType::MXFP4, "MXFP4", QK, 1 + QK / 2, false},
};

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

// One block of each type: `b` its bytes, `y` its outputs.
void block_q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (uint32_t j = 0; j < QK / 2; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    y[j + QK / 2] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void block_q4_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint8_t* qs = b + 4;
  for (uint32_t j = 0; j < QK / 2; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
    y[j + QK / 2] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

// Q5: the fifth bit of element j is bit j of the little-endian u32 qh.
void block_q5_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  const uint8_t* qs = b + 6;
  for (uint32_t j = 0; j < QK / 2; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + QK / 2)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + QK / 2] = d * static_cast<float>(hi - 16);
  }
}

void block_q5_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const uint8_t* qs = b + 8;
  for (uint32_t j = 0; j < QK / 2; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + QK / 2)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + QK / 2] = d * static_cast<float>(hi) + m;
  }
}

void block_q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (uint32_t j = 0; j < QK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// The 6-bit scale and minimum of sub-block j (0..7) from the 12 packed bytes of a K-quant block.
void scale_min_k4(uint32_t j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q4_K: d, dmin, scales[12], qs[128]. Q5_K: d, dmin, scales[12], qh[32], qs[128]. Sub-blocks 2k
// and 2k+1 are the low and high nibbles of qs[32k .. 32k+31]; Q5_K's fifth bit of sub-block j is
// bit j of qh[l].
template <bool kFifthBit>
void block_q45_k(const uint8_t* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = kFifthBit ? b + 48 : b + 16;
  for (uint32_t j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, scales, sc, m);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (j / 2);
    const int shift = (j % 2) * 4;
    for (uint32_t l = 0; l < 32; ++l) {
      int code = (q[l] >> shift) & 0x0F;
      if constexpr (kFifthBit) code |= ((qh[l] >> j) & 1) << 4;
      y[32 * j + l] = dl * static_cast<float>(code) - ml;
    }
  }
}

// Q6_K: ql[128], qh[64], scales[16] (int8), d. Each half of 128 elements takes 64 bytes of ql
// (low nibbles, then high) and 32 of qh (2 bits per element); element k has scale k / 16.
void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + QK_K / 2;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + QK_K / 2 + QK_K / 4);
  const float d = f16_at(b + QK_K / 2 + QK_K / 4 + QK_K / 16);
  for (uint32_t half = 0; half < 2; ++half) {
    const uint8_t* l4 = ql + 64 * half;
    const uint8_t* h2 = qh + 32 * half;
    for (uint32_t c = 0; c < 4; ++c) {  // 4 chunks of 32: ql low 0..31, low 32..63, high 0..31, high 32..63
      const uint8_t* lo = l4 + 32 * (c % 2);
      const int shift = (c / 2) * 4;
      for (uint32_t l = 0; l < 32; ++l) {
        const uint32_t k = 128 * half + 32 * c + l;
        const int code = ((lo[l] >> shift) & 0x0F) | (((h2[l] >> (2 * c)) & 3) << 4);
        const float dl = d * static_cast<float>(sc[k / 16]);
        y[k] = dl * static_cast<float>(code - 32);
      }
    }
  }
}

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t id) {
  for (const GgmlTypeTraits& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

std::string ggml_type_name(uint32_t id) {
  const auto t = ggml_type_traits(id);
  return t ? t->name : "type " + std::to_string(id);
}

std::string ggml_dequantizable_types() {
  std::string s;
  for (const GgmlTypeTraits& t : kTypes) {
    if (!t.dequantizable) continue;
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

void ggml_dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> out) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits || !traits->dequantizable) {
    throw Error("cannot dequantize ggml tensor type " + ggml_type_name(static_cast<uint32_t>(type)) +
                " (specdec reads " + ggml_dequantizable_types() + ")");
  }
  const std::size_t n = out.size();
  if (n % traits->block_size != 0 || src.size() != n / traits->block_size * traits->type_size) {
    throw Error(std::string("ggml ") + traits->name + ": " + std::to_string(n) + " elements need " +
                std::to_string(n / traits->block_size * traits->type_size) + " bytes in whole blocks of " +
                std::to_string(traits->block_size) + ", got " + std::to_string(src.size()));
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(src.data());
  float* y = out.data();
  const std::size_t blocks = n / traits->block_size;
  switch (type) {
    case GgmlType::F32:
      if (n) std::memcpy(y, p, n * 4);
      return;
    case GgmlType::F16:
      for (std::size_t i = 0; i < n; ++i) y[i] = f16_at(p + 2 * i);
      return;
    case GgmlType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        y[i] = bfloat16_to_float(h);
      }
      return;
    default:
      break;
  }
  void (*block)(const uint8_t*, float*) = nullptr;
  switch (type) {
    case GgmlType::Q4_0: block = block_q4_0; break;
    case GgmlType::Q4_1: block = block_q4_1; break;
    case GgmlType::Q5_0: block = block_q5_0; break;
    case GgmlType::Q5_1: block = block_q5_1; break;
    case GgmlType::Q8_0: block = block_q8_0; break;
    case GgmlType::Q4_K: block = block_q45_k<false>; break;
    case GgmlType::Q5_K: block = block_q45_k<true>; break;
    case GgmlType::Q6_K: block = block_q6_k; break;
    default: throw Error("internal: no block reader for " + std::string(traits->name));
  }
  for (std::size_t i = 0; i < blocks; ++i) block(p + i * traits->type_size, y + i * traits->block_size);
}

}  // namespace specdec
