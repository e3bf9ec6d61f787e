#include "experiments/runtime/backend.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"

#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
#include "optimized/cpu/cpu_eagle_head.hpp"
#include "optimized/cpu/cpu_transformer.hpp"
#endif

namespace specdec {

namespace {

std::string available_list() {
  std::string s;
  for (const std::string& n : known_backends())
    if (backend_available(n)) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Bytes of every tensor one single-token forward reads, at `bytes_per_value` per weight.
double step_bytes(const LlamaWeights& w, double bytes_per_value) {
  double values = static_cast<double>(w.norm.size()) + static_cast<double>(w.output_head().size()) +
                  static_cast<double>(w.embed_tokens.cols());  // one embedding row
  for (const LayerWeights& l : w.layers) {
    for (const Matrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      values += static_cast<double>(m->size());
    for (const Vector* v : {&l.input_layernorm, &l.q_bias, &l.k_bias, &l.v_bias, &l.o_bias, &l.q_norm, &l.k_norm,
                            &l.post_attention_layernorm, &l.gate_bias, &l.up_bias, &l.down_bias})
      values += static_cast<double>(v->size());
  }
  return values * bytes_per_value;
}

void round_matrix(float* data, Eigen::Index n, Dtype precision) {
  for (Eigen::Index i = 0; i < n; ++i) {
    data[i] = precision == Dtype::BF16 ? bfloat16_to_float(float_to_bfloat16(data[i])) : half_to_float(float_to_half(data[i]));
  }
}

}  // namespace

const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> names = {"reference", "cpu"};
  return names;
}

bool backend_available(const std::string& name) {
  if (name == "reference") return true;
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return true;
#endif
  return false;
}

void check_backend(const std::string& name, const std::string& option) {
  const auto& known = known_backends();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw Error(option + " '" + name + "' is not a backend; available backends: " + available_list());
  }
  if (!backend_available(name)) {
    throw Error(option + " '" + name + "': this build has no " + name +
                " backend (the specdec_optimized_cpu library was not built); available backends: " + available_list());
  }
}

std::unique_ptr<LanguageModel> load_backend(const std::string& name, const std::filesystem::path& path) {
  check_backend(name, "backend");
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return cpu::load_cpu_transformer(path);
#endif
  LlamaModel m = load_llama_checkpoint(path);
  return std::make_unique<Transformer>(std::move(m.config), std::move(m.weights));
}

std::unique_ptr<LanguageModel> make_backend(const std::string& name, const ModelConfig& config, const LlamaWeights& weights,
                                            Dtype precision) {
  check_backend(name, "backend");
  if (precision != Dtype::F32 && precision != Dtype::BF16 && precision != Dtype::F16) {
    throw Error("backend " + name + ": weight precision " + dtype_name(precision) + " is not supported; expected F32, BF16 or F16");
  }
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return std::make_unique<cpu::CpuTransformer>(config, weights, precision);
#endif
  if (precision != Dtype::F32) {
    throw Error("backend reference computes in fp32 and stores F32 weights, not " + dtype_name(precision) +
                "; give it the rounded weights (round_weights) as F32");
  }
  return std::make_unique<Transformer>(config, weights);
}

LlamaWeights round_weights(LlamaWeights w, Dtype precision) {
  if (precision == Dtype::F32) return w;
  if (precision != Dtype::BF16 && precision != Dtype::F16) {
    throw Error("round_weights: precision " + dtype_name(precision) + " is not supported; expected F32, BF16 or F16");
  }
  auto round = [&](auto& t) { round_matrix(t.data(), t.size(), precision); };
  round(w.embed_tokens);
  round(w.norm);
  round(w.lm_head);
  for (LayerWeights& l : w.layers) {
    for (Matrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) round(*m);
    for (Vector* v : {&l.input_layernorm, &l.q_bias, &l.k_bias, &l.v_bias, &l.o_bias, &l.q_norm, &l.k_norm,
                      &l.post_attention_layernorm, &l.gate_bias, &l.up_bias, &l.down_bias})
      round(*v);
  }
  return w;
}

EagleHead bind_head(const std::string& name, const EagleHead& head) {
  check_backend(name, "backend");
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return cpu::cpu_eagle_head(head);
#endif
  return head.with_engine(nullptr);
}

EagleHead round_head(const EagleHead& head, Dtype precision) {
  if (precision == Dtype::F32) return head;
  if (precision != Dtype::BF16 && precision != Dtype::F16) {
    throw Error("round_head: precision " + dtype_name(precision) + " is not supported; expected F32, BF16 or F16");
  }
  EagleWeights w = head.weights();
  for (const EagleTensor& t : eagle_tensors(head.config(), w)) {
    if (t.m) round_matrix(t.m->data(), t.m->size(), precision);
    else round_matrix(t.v->data(), t.v->size(), precision);
  }
  return EagleHead(head.config(), std::move(w), head.target(), "rounded head");
}

double weight_bytes_per_step(const LanguageModel& model) {
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (const auto* c = dynamic_cast<const cpu::CpuTransformer*>(&model)) return static_cast<double>(c->weight_bytes_per_step());
#endif
  if (const auto* t = dynamic_cast<const Transformer*>(&model)) return step_bytes(t->weights(), sizeof(float));
  throw Error("weight_bytes_per_step: the model is neither the reference nor the cpu backend");
}

std::string backend_name(const LanguageModel& model) {
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (dynamic_cast<const cpu::CpuTransformer*>(&model)) return "cpu";
#endif
  if (dynamic_cast<const Transformer*>(&model)) return "reference";
  return "other";
}

}  // namespace specdec
