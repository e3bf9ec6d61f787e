#include "optimized/cpu/cpu_medusa_heads.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_decoder_layer.hpp"
#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/fused_linear.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "optimized/cpu/vector_exp.hpp"
#include "reference/core/exact_math.hpp"
#include "reference/model/precision.hpp"

namespace specdec::cpu {

namespace {

PackedMatrix pack_exact(const Matrix& m, const std::string& name) {
  const Matrix* one[] = {&m};
  return PackedMatrix(m, lossless_precision(one), name);
}

class CpuMedusaEngine final : public MedusaHeadsEngine {
 public:
  // Packs `owned` (handed over by release_weights; each matrix freed once packed) or, when null,
  // the heads' own weights, which they keep.
  CpuMedusaEngine(const MedusaHeads& heads, MedusaWeights* owned);

  std::string name() const override { return "cpu"; }
  std::vector<Matrix> forward(const Matrix& hidden, int heads) const override;

 private:
  struct Block {
    PackedMatrix weight;     // [H, H]
    std::vector<float> bias;  // (H) or empty
  };
  MedusaConfig config_;
  std::vector<std::vector<Block>> blocks_;  // [K][L]
  std::vector<PackedMatrix> lm_heads_;      // K of [V, H]; one when shared
};

CpuMedusaEngine::CpuMedusaEngine(const MedusaHeads& heads, MedusaWeights* owned) : config_(heads.config()) {
  // `w` is *owned (not const) whenever a matrix is freed.
  const MedusaWeights& w = owned ? *owned : heads.weights();
  auto release = [owned](const Matrix& m) {
    if (owned) const_cast<Matrix&>(m).resize(0, 0);
  };
  for (std::size_t k = 0; k < w.blocks.size(); ++k) {
    std::vector<Block> head;
    for (std::size_t l = 0; l < w.blocks[k].size(); ++l) {
      const MedusaBlock& b = w.blocks[k][l];
      head.push_back({pack_exact(b.weight, "medusa head " + std::to_string(k) + " block " + std::to_string(l)),
                      to_vector(b.bias)});
      release(b.weight);
    }
    blocks_.push_back(std::move(head));
  }
  for (std::size_t k = 0; k < w.lm_heads.size(); ++k) {
    lm_heads_.push_back(pack_exact(w.lm_heads[k], "medusa head " + std::to_string(k) + " projection"));
    release(w.lm_heads[k]);
  }
}

std::vector<Matrix> CpuMedusaEngine::forward(const Matrix& hidden, int heads) const {
  const int R = static_cast<int>(hidden.rows());
  const int H = config_.hidden;
  const int V = config_.vocab;
  const std::size_t n = static_cast<std::size_t>(R) * H;
  std::vector<float> x(n), z(n), e(n);  // (R, H): residual stream, block pre-activation, e^(−z)
  std::vector<Matrix> logits;
  logits.reserve(static_cast<std::size_t>(heads));
  for (int k = 0; k < heads; ++k) {
    std::memcpy(x.data(), hidden.data(), sizeof(float) * n);
    for (const Block& b : blocks_[static_cast<std::size_t>(k)]) {
      linear(b.weight, or_null(b.bias), x.data(), H, R, z.data(), H, false);  // z = W x + b, the reference's dot order
      // x += silu(z) = z / (1 + e^(−z)), exactly exact::silu: −z is exact, and exp(−z − 0) = exp(−z).
      for (std::size_t i = 0; i < n; ++i) e[i] = -z[i];
      exp_shifted(e.data(), 0.0f, static_cast<int>(n), e.data());
      for (std::size_t i = 0; i < n; ++i) x[i] = exact::add(x[i], exact::div(z[i], exact::add(1.0f, e[i])));
    }
    Matrix y(R, V);  // (R, V)
    const PackedMatrix& head = lm_heads_[config_.shared_lm_head ? 0 : static_cast<std::size_t>(k)];
    linear(head, nullptr, x.data(), H, R, y.data(), V, false);
    if (config_.logit_scale != 1.0f) {
      for (Eigen::Index i = 0; i < y.size(); ++i) y.data()[i] = exact::mul(y.data()[i], config_.logit_scale);
    }
    logits.push_back(std::move(y));
  }
  return logits;
}

}  // namespace

MedusaHeads cpu_medusa_heads(const MedusaHeads& heads) {
  active_isa();  // an invalid SPECDEC_CPU_ISA is reported here, before any kernel runs
  heads.require_weights("cpu_medusa_heads");
  return heads.with_engine(std::make_shared<const CpuMedusaEngine>(heads, nullptr));
}

MedusaHeads cpu_medusa_heads(MedusaHeads&& heads) {
  active_isa();
  heads.require_weights("cpu_medusa_heads");
  MedusaWeights weights = heads.release_weights();
  auto engine = std::make_shared<const CpuMedusaEngine>(heads, &weights);
  return heads.with_engine(std::move(engine));
}

}  // namespace specdec::cpu
