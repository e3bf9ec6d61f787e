#include "reference/drafters/medusa_heads.hpp"

#include <cmath>

#include "reference/core/error.hpp"
#include "reference/core/exact_math.hpp"
#include "reference/core/normal_source.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/ops.hpp"

namespace specdec {

namespace {

std::string n(long long v) { return std::to_string(v); }

// Checkpoint names in c's layout (FORMATS.md).
std::string block_name(const MedusaConfig& c, int k, int l, const char* what) {
  return c.layout == MedusaLayout::medusa ? n(k) + "." + n(l) + ".linear." + what
                                          : "blocks." + n(k) + ".layers." + n(l) + "." + what;
}
std::string projection_name(const MedusaConfig& c, int k) {
  return c.layout == MedusaLayout::medusa ? n(k) + "." + n(c.num_layers) + ".weight" : "lm_heads." + n(k) + ".weight";
}

}  // namespace

std::string medusa_layout_name(MedusaLayout layout) { return layout == MedusaLayout::medusa ? "medusa" : "vllm"; }

MedusaLayout parse_medusa_layout(const std::string& name) {
  if (name == "medusa") return MedusaLayout::medusa;
  if (name == "vllm") return MedusaLayout::vllm;
  throw Error("unknown Medusa checkpoint layout '" + name + "'; expected medusa (FasterDecoding/Medusa) or vllm");
}

void validate_medusa_config(const MedusaConfig& c, const std::string& source) {
  const bool vllm = c.layout == MedusaLayout::vllm;
  const std::string heads = vllm ? "num_heads" : "medusa_num_heads";
  const std::string layers = vllm ? "num_hidden_layers" : "medusa_num_layers";
  if (c.num_heads < 1 || c.num_heads > kMaxMedusaHeads) {
    throw Error(source + ": " + heads + " is " + n(c.num_heads) + ", expected 1 to " + n(kMaxMedusaHeads) +
                " (one head per draft depth)");
  }
  if (c.num_layers < 0 || c.num_layers > kMaxMedusaLayers) {
    throw Error(source + ": " + layers + " is " + n(c.num_layers) + ", expected 0 to " + n(kMaxMedusaLayers) +
                " (residual blocks per head)");
  }
  if (c.hidden < 1) throw Error(source + ": hidden_size is " + n(c.hidden) + ", expected >= 1");
  if (c.vocab < 1) throw Error(source + ": vocab_size is " + n(c.vocab) + ", expected >= 1");
  if (!std::isfinite(c.logit_scale) || !(c.logit_scale > 0.0f)) {
    throw Error(source + ": logit_scale is " + std::to_string(c.logit_scale) + ", expected a finite number > 0");
  }
  if (!vllm) {
    // What FasterDecoding's module cannot express (nn.Linear with a bias, one head each, no scale).
    if (!c.fc_bias) throw Error(source + ": the FasterDecoding/Medusa layout always has block biases; save without them in the vllm layout");
    if (c.shared_lm_head) throw Error(source + ": the FasterDecoding/Medusa layout has one projection per head; a shared one needs the vllm layout (original_lm_head)");
    if (c.logit_scale != 1.0f) throw Error(source + ": the FasterDecoding/Medusa layout has no logit_scale; use the vllm layout");
  }
}

void check_medusa_config_against_target(const MedusaConfig& c, const ModelConfig& target, const std::string& source) {
  if (c.hidden != target.hidden_size) {
    throw Error(source + ": hidden_size " + n(c.hidden) + " differs from the target's " + n(target.hidden_size) +
                " (Medusa heads read the target's last hidden state)");
  }
  if (c.vocab != target.vocab_size) {
    throw Error(source + ": vocab_size " + n(c.vocab) + " differs from the target's " + n(target.vocab_size) +
                " (Medusa heads draft over the target's vocabulary)");
  }
}

MedusaWeights sized_medusa_weights(const MedusaConfig& c) {
  MedusaWeights w;
  w.blocks.assign(static_cast<std::size_t>(c.num_heads), std::vector<MedusaBlock>(static_cast<std::size_t>(c.num_layers)));
  w.lm_heads.resize(c.shared_lm_head ? 1 : static_cast<std::size_t>(c.num_heads));
  return w;
}

std::vector<MedusaTensor> medusa_tensors(const MedusaConfig& c, MedusaWeights& w) {
  std::vector<MedusaTensor> out;
  for (int k = 0; k < c.num_heads; ++k) {
    for (int l = 0; l < c.num_layers; ++l) {
      MedusaBlock& b = w.blocks[static_cast<std::size_t>(k)][static_cast<std::size_t>(l)];
      out.push_back({block_name(c, k, l, "weight"), &b.weight, nullptr, c.hidden, c.hidden});
      if (c.fc_bias) out.push_back({block_name(c, k, l, "bias"), nullptr, &b.bias, c.hidden, 0});
    }
    if (!c.shared_lm_head) out.push_back({projection_name(c, k), &w.lm_heads[static_cast<std::size_t>(k)], nullptr, c.vocab, c.hidden});
  }
  if (c.shared_lm_head) out.push_back({projection_name(c, 0), &w.lm_heads[0], nullptr, c.vocab, c.hidden});
  return out;
}

void check_medusa_weights(const MedusaConfig& c, const MedusaWeights& weights, const std::string& source) {
  const std::size_t K = static_cast<std::size_t>(c.num_heads);
  const std::size_t projections = c.shared_lm_head ? 1 : K;
  if (weights.blocks.size() != K || weights.lm_heads.size() != projections) {
    throw Error(source + ": weights hold " + n(static_cast<long long>(weights.blocks.size())) + " heads and " +
                n(static_cast<long long>(weights.lm_heads.size())) + " projections, the config calls for " + n(c.num_heads) +
                " and " + n(static_cast<long long>(projections)));
  }
  for (std::size_t k = 0; k < K; ++k) {
    if (weights.blocks[k].size() != static_cast<std::size_t>(c.num_layers)) {
      throw Error(source + ": head " + n(static_cast<long long>(k)) + " has " +
                  n(static_cast<long long>(weights.blocks[k].size())) + " blocks, the config calls for " + n(c.num_layers));
    }
    for (std::size_t l = 0; l < weights.blocks[k].size(); ++l) {
      if (!c.fc_bias && weights.blocks[k][l].bias.size() != 0) {
        throw Error(source + ": weights carry '" + block_name(c, static_cast<int>(k), static_cast<int>(l), "bias") +
                    "' but the config has no block biases" + (c.layout == MedusaLayout::vllm ? " (medusa_fc_bias)" : ""));
      }
    }
  }
  MedusaWeights& w = const_cast<MedusaWeights&>(weights);  // medusa_tensors only takes addresses
  for (const MedusaTensor& t : medusa_tensors(c, w)) {
    const std::vector<int64_t> actual = t.m ? std::vector<int64_t>{t.m->rows(), t.m->cols()} : std::vector<int64_t>{t.v->size()};
    const std::vector<int64_t> wanted = t.m ? std::vector<int64_t>{t.rows, t.cols} : std::vector<int64_t>{t.rows};
    if (actual != wanted) {
      throw Error(source + ": tensor '" + t.name + "' has shape " + shape_string(actual) + ", expected " + shape_string(wanted) +
                  (t.m && t.rows == c.vocab ? " [vocab, hidden]" : t.m ? " [hidden, hidden]" : " [hidden]"));
    }
  }
}

MedusaHeads::MedusaHeads(MedusaConfig config, MedusaWeights weights, const ModelConfig& target, const std::string& source)
    : config_(std::move(config)) {
  validate_medusa_config(config_, source);
  check_medusa_config_against_target(config_, target, source);
  check_medusa_weights(config_, weights, source);
  weights_ = std::make_shared<MedusaWeights>(std::move(weights));
}

MedusaWeights MedusaHeads::release_weights() {
  if (weights_released_) throw Error("release_weights: these Medusa heads' fp32 weights were already handed to an engine");
  // Sole owner: move. Another copy of the heads still computes with them: copy.
  MedusaWeights all = weights_.use_count() == 1 ? std::move(*weights_) : *weights_;
  MedusaWeights kept;
  for (const std::vector<MedusaBlock>& head : all.blocks) {
    std::vector<MedusaBlock> biases;
    for (const MedusaBlock& b : head) biases.push_back({Matrix(), b.bias});
    kept.blocks.push_back(std::move(biases));
  }
  weights_ = std::make_shared<MedusaWeights>(std::move(kept));
  weights_released_ = true;
  return all;
}

void MedusaHeads::require_weights(const std::string& what) const {
  if (weights_released_) {
    throw Error(what + ": these Medusa heads' fp32 weights were given to the engine they were bound to (release_weights); "
                "load them again to run them in the reference, save them or take their fingerprint");
  }
}

MedusaHeads MedusaHeads::with_engine(std::shared_ptr<const MedusaHeadsEngine> engine) const {
  MedusaHeads h = *this;
  h.engine_ = std::move(engine);
  return h;
}

const Matrix& MedusaHeads::lm_head(int k) const {
  if (k < 0 || k >= config_.num_heads) throw Error("medusa heads: head " + n(k) + " outside [0, " + n(config_.num_heads) + ")");
  require_weights("medusa heads lm_head");
  return weights_->lm_heads[config_.shared_lm_head ? 0 : static_cast<std::size_t>(k)];
}

std::vector<Matrix> MedusaHeads::forward(const Matrix& hidden, int heads) const {
  const std::string where = "medusa heads forward: ";
  if (hidden.rows() < 1) throw Error(where + "no hidden rows given");
  if (hidden.cols() != config_.hidden) {
    throw Error(where + "hidden rows are " + n(hidden.cols()) + " wide, expected the target's hidden size " + n(config_.hidden));
  }
  if (heads < 0 || heads > config_.num_heads) {
    throw Error(where + n(heads) + " heads asked for, the checkpoint has " + n(config_.num_heads) + " (0 = all)");
  }
  const int count = heads == 0 ? config_.num_heads : heads;
  return engine_ ? engine_->forward(hidden, count) : reference_forward(hidden, count);
}

std::vector<Matrix> MedusaHeads::reference_forward(const Matrix& hidden, int heads) const {
  require_weights("medusa heads forward in the reference");
  const MedusaWeights& w = *weights_;
  std::vector<Matrix> logits;
  logits.reserve(static_cast<std::size_t>(heads));
  for (int k = 0; k < heads; ++k) {
    Matrix x = hidden;  // x: (R, H) the head's residual stream
    for (const MedusaBlock& b : w.blocks[static_cast<std::size_t>(k)]) {
      const Matrix z = ops::linear(x, b.weight, b.bias);  // (R, H)
      for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = exact::add(x.data()[i], exact::silu(z.data()[i]));
    }
    Matrix y = ops::linear(x, lm_head(k));  // (R, V)
    if (config_.logit_scale != 1.0f) {
      for (Eigen::Index i = 0; i < y.size(); ++i) y.data()[i] = exact::mul(y.data()[i], config_.logit_scale);
    }
    logits.push_back(std::move(y));
  }
  return logits;
}

MedusaConfig medusa_config_for(const ModelConfig& target, int num_heads, int num_layers, MedusaLayout layout) {
  MedusaConfig c;
  c.layout = layout;
  c.num_heads = num_heads;
  c.num_layers = num_layers;
  c.hidden = target.hidden_size;
  c.vocab = target.vocab_size;
  c.fc_bias = layout == MedusaLayout::medusa;
  return c;
}

MedusaHeads random_medusa_heads(const MedusaConfig& config, const ModelConfig& target, uint64_t seed, float stddev) {
  const std::string source = "random_medusa_heads";
  validate_medusa_config(config, source);
  check_medusa_config_against_target(config, target, source);
  if (!std::isfinite(stddev) || stddev < 0.0f) {
    throw Error(source + ": stddev must be a non-negative number, got " + std::to_string(stddev));
  }
  NormalSource normal(seed);
  MedusaWeights w = sized_medusa_weights(config);
  // Drawn in medusa_tensors' order; changing the order changes every random head.
  for (const MedusaTensor& t : medusa_tensors(config, w)) {
    float* data;
    Eigen::Index size;
    if (t.m) {
      t.m->resize(t.rows, t.cols);
      data = t.m->data();
      size = t.m->size();
    } else {
      t.v->resize(t.rows);
      data = t.v->data();
      size = t.v->size();
    }
    for (Eigen::Index i = 0; i < size; ++i) data[i] = static_cast<float>(stddev * normal.next());
  }
  return MedusaHeads(config, std::move(w), target, source);
}

}  // namespace specdec
