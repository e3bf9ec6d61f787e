#pragma once
// The tensor types of ggml (llama.cpp's tensor library), as GGUF files store them, and their
// dequantization to float32. A quantized tensor is a sequence of blocks; each block holds
// `block_size` consecutive elements of one row in `type_size` bytes (scales, then packed codes).
//
// Dequantization is bit for bit that of the `gguf` Python package (gguf/quants.py), which
// matches ggml's reference C code: each output is the same short chain of float32 roundings, in
// the same order, with no fused multiply-add (the project compiles with -ffp-contract=off).
// Terms (one block):
//   d, dmin  float16 scales            q   the unsigned code of one element
//   sc, m    6-bit sub-block scale and minimum (K-quants, 8 sub-blocks of 32)
//   y        the float32 output        Q4_0: y = d·(q−8)   Q4_1: y = d·q + m   Q8_0: y = q·d
//   Q5_0: y = d·(q−16)   Q5_1: y = d·q + m   Q4_K/Q5_K: y = (d·sc)·q − dmin·m   Q6_K: y = (d·sc)·(q−32)
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace specdec {

// ggml_type's values (ggml.h), which GGUF stores per tensor.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct GgmlTypeTraits {
  GgmlType type;
  const char* name;         // "Q4_K"
  uint32_t block_size;      // elements per block
  uint32_t type_size;       // bytes per block
  bool dequantizable;       // specdec reads it (see ggml_dequantize)
};

// The traits of a ggml type id, or nullopt for an id ggml does not define.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t id);
// "Q4_K", or "type 77" for an unknown id.
std::string ggml_type_name(uint32_t id);
// The types ggml_dequantize reads, for error messages: "F32, F16, BF16, Q8_0, ...".
std::string ggml_dequantizable_types();

// Dequantizes `n` elements (a whole number of blocks) stored as `type` in `src` (exactly
// n / block_size · type_size bytes) into `out` (n floats). Throws specdec::Error for a type it does
// not read or sizes that do not fit.
void ggml_dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> out);

}  // namespace specdec
