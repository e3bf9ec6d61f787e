// Memory near the weights: `specdec generate` on a 34M-parameter checkpoint, run as a user runs
// it, must peak at most 1.2 × the weights its backend holds (the reference: fp32; the cpu backend:
// the stored precision, fp32 for a quantized GGUF file) above what the same command needs for the
// bundled 3M-parameter model. Before the loaders streamed tensor by tensor, the cpu backend held the
// fp32 model twice beside its packed copy (about 5× the packed weights).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/random_weights.hpp"
#include "tests/reference/gguf_writer.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

// Peak RSS in MB of `specdec generate` on `model` with `backend`; -1 if it failed.
double peak_mb(const std::string& model, const std::string& backend) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execl(SPECDEC_BINARY, SPECDEC_BINARY, "generate", "--model", model.c_str(), "--backend", backend.c_str(), "--prompt-ids",
          "1,2,3", "--max-new-tokens", "1", "--threads", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return static_cast<double>(usage.ru_maxrss) * 1024 / 1e6;  // ru_maxrss is in KiB
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
    const double base = peak_mb(bundled, k.backend);
    const double peak = peak_mb(k.model, k.backend);
    const double weights = params * k.bytes_per_param / 1e6;
    const std::string where = k.model + " on " + k.backend + " (seed 5, " + std::to_string(params / 1e6) + "M parameters)";
    ASSERT_GT(base, 0) << "specdec generate failed on the bundled target, " << k.backend;
    ASSERT_GT(peak, 0) << "specdec generate failed on " << where;
    EXPECT_LE(peak - base, 1.2 * weights) << where << ": peak " << peak << " MB, bundled model " << base << " MB, weights "
                                          << weights << " MB";
  }
}

}  // namespace
}  // namespace specdec
