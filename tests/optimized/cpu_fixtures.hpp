#pragma once
// The cpu backend next to its reference twin: the same config and random weights, the reference
// given the weights rounded to the cpu model's precision (rounded_llama_weights), so that the two
// must agree bitwise. Configs: the reference fixtures plus the features they leave out.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/cpu_kv_cache.hpp"
#include "optimized/cpu/cpu_transformer.hpp"
#include "optimized/cpu/dot_kernels.hpp"
#include "reference/model/ops.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec::cpu {
// gtest prints a kernel path parameter by name.
inline void PrintTo(Isa isa, std::ostream* os) { *os << isa_name(isa); }
}  // namespace specdec::cpu

namespace specdec::testing {

// Restores the thread count, threshold and kernel path a test changes.
class SettingsGuard {
 public:
  SettingsGuard() : threads_(ops::num_threads()), threshold_(ops::parallel_work_threshold()), isa_(cpu::active_isa()) {}
  ~SettingsGuard() {
    ops::set_num_threads(threads_);
    ops::set_parallel_work_threshold(threshold_);
    cpu::set_isa(isa_);
  }

 private:
  int threads_;
  long long threshold_;
  cpu::Isa isa_;
};

// A test run once per cpu kernel path (cpu_isa.hpp), each instance named for its path, with the
// path set for the body: a path this machine cannot run is skipped with the reason, never passed.
class KernelPathTest : public ::testing::TestWithParam<cpu::Isa> {
 protected:
  void SetUp() override {
    if (!cpu::isa_supported(GetParam()))
      GTEST_SKIP() << cpu::isa_name(GetParam()) << " path not run: " << cpu::isa_unsupported_reason(GetParam());
    cpu::set_isa(GetParam());
  }
  // "path avx2", for failure messages.
  std::string path() const { return std::string("path ") + cpu::isa_name(GetParam()); }

 private:
  SettingsGuard guard_;
};

inline std::string kernel_path_name(const ::testing::TestParamInfo<cpu::Isa>& info) { return cpu::isa_name(info.param); }

#define SPECDEC_INSTANTIATE_KERNEL_PATHS(Suite) \
  INSTANTIATE_TEST_SUITE_P(Paths, Suite, ::testing::ValuesIn(::specdec::cpu::kAllIsas), ::specdec::testing::kernel_path_name)

inline const std::vector<Dtype>& cpu_precisions() {
  static const std::vector<Dtype> p = {Dtype::F32, Dtype::BF16, Dtype::F16};
  return p;
}

// fixture_configs() plus: every bias (attention, o_proj, MLP) with widths that leave tails in the
// 8-wide dot products and an odd intermediate size; Mistral's sliding window on every layer;
// Qwen2's on layers >= max_window_layers.
inline std::vector<NamedConfig> cpu_fixture_configs() {
  std::vector<NamedConfig> out = fixture_configs();
  ModelConfig biased = tiny_llama();
  biased.hidden_size = 52;        // 6·8 + 4
  biased.intermediate_size = 81;  // odd: the last gate/up block holds one feature
  biased.num_attention_heads = 4;
  biased.num_key_value_heads = 2;
  biased.head_dim = 10;  // 8 + 2
  biased.attention_bias = biased.o_proj_bias = biased.mlp_bias = true;
  out.push_back({"llama_all_biases_odd_widths", biased});
  ModelConfig mistral = tiny_llama();
  mistral.model_type = "mistral";
  mistral.architecture = "MistralForCausalLM";
  mistral.sliding_window = 3;
  out.push_back({"mistral_sliding_window", mistral});
  ModelConfig qwen2 = tiny_llama();
  qwen2.model_type = "qwen2";
  qwen2.architecture = "Qwen2ForCausalLM";
  qwen2.attention_bias = true;
  qwen2.sliding_window = 4;
  qwen2.max_window_layers = 1;
  out.push_back({"qwen2_window_from_layer_1", qwen2});
  return out;
}

struct CpuTwin {
  CpuTwin(const ModelConfig& c, const LlamaWeights& w, Dtype precision)
      : reference(c, cpu::rounded_llama_weights(w, precision)), cpu(c, w, precision) {}
  Transformer reference;
  cpu::CpuTransformer cpu;
};

inline std::unique_ptr<CpuTwin> make_twin(const ModelConfig& c, uint64_t seed, Dtype precision) {
  return std::make_unique<CpuTwin>(c, make_model(c, seed).weights(), precision);
}

inline cpu::CpuKVCache& cpu_cache(KVCache& c) { return dynamic_cast<cpu::CpuKVCache&>(c); }
inline const cpu::CpuKVCache& cpu_cache(const KVCache& c) { return dynamic_cast<const cpu::CpuKVCache&>(c); }

}  // namespace specdec::testing
