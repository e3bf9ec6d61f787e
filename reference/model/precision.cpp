#include "reference/model/precision.hpp"

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"

namespace specdec {

void check_weight_precision(Dtype precision, const std::string& where) {
  if (precision != Dtype::F32 && precision != Dtype::BF16 && precision != Dtype::F16) {
    throw Error(where + ": unsupported weight precision " + dtype_name(precision) + "; expected F32, BF16 or F16");
  }
}

float round_to_precision(float v, Dtype precision) {
  switch (precision) {
    case Dtype::BF16: return bfloat16_to_float(float_to_bfloat16(v));
    case Dtype::F16: return half_to_float(float_to_half(v));
    default: return v;
  }
}

void round_to_precision(float* data, std::size_t n, Dtype precision) {
  for (std::size_t i = 0; i < n; ++i) data[i] = round_to_precision(data[i], precision);
}

Matrix round_to_precision(const Matrix& m, Dtype precision) {
  Matrix r = m;
  round_to_precision(r.data(), static_cast<std::size_t>(r.size()), precision);
  return r;
}

LlamaWeights round_weights(LlamaWeights w, Dtype precision) {
  check_weight_precision(precision, "round_weights");
  if (precision == Dtype::F32) return w;
  auto round = [precision](auto& t) { round_to_precision(t.data(), static_cast<std::size_t>(t.size()), precision); };
  round(w.embed_tokens);
  round(w.norm);
  round(w.lm_head);
  for (LayerWeights& l : w.layers) {
    for (Matrix* m : layer_matrices(l)) round(*m);
    for (Vector* v : layer_vectors(l)) round(*v);
  }
  return w;
}

Dtype lossless_precision(std::span<const Matrix* const> ms) {
  for (Dtype p : {Dtype::BF16, Dtype::F16}) {
    bool exact = true;
    for (const Matrix* m : ms) {
      const float* d = m->data();
      for (Eigen::Index i = 0; exact && i < m->size(); ++i) exact = round_to_precision(d[i], p) == d[i];
      if (!exact) break;
    }
    if (exact) return p;
  }
  return Dtype::F32;
}

}  // namespace specdec
