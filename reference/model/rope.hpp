#pragma once
// Rotary position embedding in the Hugging Face convention (rotate_half: the two halves of each
// head are the pairs, not Meta's interleaved layout), with linear, dynamic (NTK) and llama3
// frequency scaling. Angles are computed in double precision and rounded once to float.
#include <vector>

#include "reference/model/model_config.hpp"

namespace specdec {

class Rope {
 public:
  explicit Rope(const ModelConfig& config);

  // Inverse frequencies (hd/2) used for a token at `position`. Only dynamic scaling depends on
  // the position: it uses the sequence length position + 1, which is what token-by-token decoding
  // in Hugging Face does, and which keeps a multi-token forward equal to one-token forwards.
  std::vector<double> inv_freq(int position) const;

  // Rotates n_heads heads of size head_dim, stored contiguously in x, for a token at `position`.
  void apply(float* x, int n_heads, int position) const;

  // cos/sin tables for one position (hd/2 each), shared by all heads and layers of a token.
  struct Angles {
    std::vector<float> cos, sin;
  };
  Angles angles(int position) const;
  void apply(float* x, int n_heads, const Angles& a) const;

 private:
  int head_dim_;
  double theta_;
  RopeScaling scaling_;
  int original_context_;
  std::vector<double> base_inv_freq_;  // after linear/llama3 scaling; dynamic recomputes
};

}  // namespace specdec
