// Memory near the weights: `specdec generate` on a 34M-parameter checkpoint, run as a user runs
// it, must peak at most 1.2 × the weights its backend holds (the reference: fp32; the cpu backend:
// the stored precision, fp32 for a quantized GGUF file) above what the same command needs for the
// bundled 3M-parameter model. Before the loaders streamed tensor by tensor, the cpu backend held the
// fp32 model twice beside its packed copy (about 5× the packed weights).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/random_weights.hpp"
#include "tests/reference/gguf_writer.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

// Peak RSS in MB of `specdec ARGS...`, run as a user runs it; -1 if it failed.
double peak_mb(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(SPECDEC_BINARY)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execv(SPECDEC_BINARY, argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return static_cast<double>(usage.ru_maxrss) * 1024 / 1e6;  // ru_maxrss is in KiB
}

// Peak RSS in MB of one generated token from `model` on `backend` (with a drafter when
// `method` is given).
double generate_peak_mb(const std::string& model, const std::string& backend, const std::string& method = "",
                        const std::string& drafter = "") {
  std::vector<std::string> args{"generate", "--model", model, "--backend", backend, "--prompt-ids", "1,2,3",
                                "--max-new-tokens", "1", "--threads", "1"};
  if (!method.empty()) args.insert(args.end(), {"--method", method, "--drafter", drafter});
  return peak_mb(args);
}

ModelConfig shape() {
  ModelConfig c;
  c.hidden_size = 512;
  c.intermediate_size = 1408;
  c.num_hidden_layers = 6;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 64;
  c.vocab_size = 16000;
  c.max_position_embeddings = 256;
  c.tie_word_embeddings = false;
  return c;
}

TEST(LoadFootprint, PeakMemoryStaysNearTheWeightsOnEveryBackend) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine make RSS meaningless";
#endif
  const ModelConfig c = shape();
  testing::ScratchDir dir("load-footprint");
  double params = 0;
  {
    const LlamaModel m{c, random_llama_weights(c, 5)};
    params = static_cast<double>(c.vocab_size) * c.hidden_size * 2;
    for (const LayerWeights& l : m.weights.layers)
      for (const Matrix* x : layer_matrices(l)) params += static_cast<double>(x->size());
    save_llama_checkpoint(dir / "bf16", c, m.weights, Dtype::BF16);
    testing::write_gguf_model(dir / "q8.gguf", m, "llama", testing::GgufStorage::q8_0);
  }
  const std::string bundled = std::string(SPECDEC_SOURCE_DIR) + "/models/target";
  struct Case {
    std::string model, backend;
    double bytes_per_param;  // what the backend holds
  };
  for (const Case& k : std::vector<Case>{{(dir / "bf16").string(), "cpu", 2},
                                         {(dir / "bf16").string(), "reference", 4},
                                         {(dir / "q8.gguf").string(), "cpu", 4},
                                         {(dir / "q8.gguf").string(), "reference", 4}}) {
    const double base = generate_peak_mb(bundled, k.backend);
    const double peak = generate_peak_mb(k.model, k.backend);
    const double weights = params * k.bytes_per_param / 1e6;
    const std::string where = k.model + " on " + k.backend + " (seed 5, " + std::to_string(params / 1e6) + "M parameters)";
    ASSERT_GT(base, 0) << "specdec generate failed on the bundled target, " << k.backend;
    ASSERT_GT(peak, 0) << "specdec generate failed on " << where;
    EXPECT_LE(peak - base, 1.2 * weights) << where << ": peak " << peak << " MB, bundled model " << base << " MB, weights "
                                          << weights << " MB";
  }
}

// With a drafter head, the cpu backend holds one packed copy of the head and no fp32 copy of the
// target's embeddings and LM head (the head reads the target's packed ones): at most 1.2 × target
// plus head above the bundled target alone. Before, the head's fp32 weights stayed beside the
// packed copy and the target's embeddings and LM head were loaded in fp32 for it (about 1.6×).
TEST(LoadFootprint, DrafterHeadsOnTheCpuBackendHoldOneCopy) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine make RSS meaningless";
#endif
  const ModelConfig c = shape();
  testing::ScratchDir dir("load-footprint-heads");
  {
    const LlamaModel m{c, random_llama_weights(c, 5)};
    save_llama_checkpoint(dir / "bf16", c, m.weights, Dtype::BF16);
  }
  const double target_mb = std::filesystem::file_size(dir / "bf16" / "model.safetensors") / 1e6;  // BF16, as packed
  const std::string bundled = std::string(SPECDEC_SOURCE_DIR) + "/models/target";
  const double base = generate_peak_mb(bundled, "cpu");
  ASSERT_GT(base, 0) << "specdec generate failed on the bundled target";
  for (const auto& [kind, method] : std::vector<std::pair<std::string, std::string>>{{"eagle3", "eagle3"}, {"medusa", "medusa"}}) {
    const std::string head = (dir / kind).string();
    std::vector<std::string> init{"init-model", "--head", kind, "--target", (dir / "bf16").string(), "--seed", "2", "--out", head};
    if (kind == "eagle3") init.insert(init.end(), {"--aux-layers", "1,3,4"});  // 6 layers: the default {2, 3, 3} repeats one
    ASSERT_GT(peak_mb(init), 0) << "specdec init-model --head " << kind << " failed";
    double head_mb = 0;  // F32 random weights: packed in F32 too
    for (const auto& e : std::filesystem::directory_iterator(head))
      if (e.path().extension() == ".safetensors") head_mb += static_cast<double>(e.file_size()) / 1e6;
    const double peak = generate_peak_mb((dir / "bf16").string(), "cpu", method, head);
    const std::string where = method + " head (seed 2) on the 34M BF16 target (seed 5), cpu backend";
    ASSERT_GT(peak, 0) << "specdec generate failed: " << where;
    EXPECT_LE(peak - base, 1.2 * (target_mb + head_mb)) << where << ": peak " << peak << " MB, bundled model " << base
                                                        << " MB, target " << target_mb << " MB, head " << head_mb << " MB";
  }
}

}  // namespace
}  // namespace specdec
