// The CUDA backend — its host code and the very kernels a GPU runs — on the device under test (the
// CPU grid emulator in the cpu tests, the GPU in tests/gpu), bitwise against the reference: every
// model family feature and precision, chains longer than one kernel launch takes, draft trees and
// their compaction, batch invariance, every launch under three thread schedules, greedy decoding of
// the bundled model, and the errors a user can hit.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/cuda_transformer.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/sampling/sampler.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/reference/batch_invariance.hpp"
#include "tests/optimized/device_under_test.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/gguf_writer.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reference/tree_fixtures.hpp"

namespace specdec {
namespace {

class CudaTransformer : public testing::DeviceTest {};
class CudaTransformerErrors : public testing::DeviceTest {};
class LaunchConfig : public testing::DeviceTest {};

using testing::bitwise_equal;
using testing::cpu_fixture_configs;
using testing::dense_cache;
using testing::random_tokens;

constexpr uint64_t kSeed = 4321;

std::string where(const std::string& config, Dtype p) { return config + " / " + dtype_name(p) + ", seed " + std::to_string(kSeed); }

const cuda::CudaKVCache& cuda_cache(const KVCache& c) { return dynamic_cast<const cuda::CudaKVCache&>(c); }

struct CudaTwin {
  CudaTwin(const ModelConfig& c, const LlamaWeights& w, Dtype p, std::shared_ptr<cuda::DeviceRuntime> rt)
      : reference(c, cpu::rounded_llama_weights(w, p)), cuda(std::move(rt), c, w, p) {}
  Transformer reference;
  cuda::CudaTransformer cuda;
};

std::unique_ptr<CudaTwin> make_twin(const ModelConfig& c, Dtype p, bool check_schedules = false) {
  return std::make_unique<CudaTwin>(c, testing::make_model(c, kSeed).weights(), p,
                                    check_schedules ? testing::schedule_checking_device() : testing::test_device());
}

TEST_F(CudaTransformer, EqualsReferenceBitwiseForEveryShapeAndPrecision) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    for (Dtype p : {Dtype::F32, Dtype::BF16, Dtype::F16}) {
      const auto twin = make_twin(cfg, p);
      auto rc = twin->reference.new_cache(96);
      auto cc = twin->cuda.new_cache(96);
      // 13 and 1 tokens: the general kernels and the one-token ones; in BF16 also 70 tokens, two
      // launches of the general ones.
      for (const int T : {13, 1, 70}) {
        if (T == 70 && p != Dtype::BF16) continue;
        ForwardRequest r = ForwardRequest::chain(random_tokens(T, cfg.vocab_size, kSeed + T));
        r.final_hidden = true;
        r.aux_layers = {cfg.num_hidden_layers, 0, 2};
        const ForwardResult expected = twin->reference.forward(*rc, r);
        const ForwardResult got = twin->cuda.forward(*cc, r);
        EXPECT_TRUE(bitwise_equal(got.logits, expected.logits)) << where(name, p) << ": logits, T " << T;
        EXPECT_TRUE(bitwise_equal(got.final_hidden, expected.final_hidden)) << where(name, p) << ": final hidden, T " << T;
        EXPECT_TRUE(bitwise_equal(got.aux_hidden, expected.aux_hidden)) << where(name, p) << ": aux hidden, T " << T;
        EXPECT_TRUE(cuda_cache(*cc).equals(dense_cache(*rc))) << where(name, p) << ": KV cache, T " << T;
      }
      const Matrix l = twin->cuda.forward(*cc, ForwardRequest::chain({5})).logits;
      EXPECT_GT(l.maxCoeff() - l.minCoeff(), 0.1f) << where(name, p) << ": the logits do not vary";
    }
  }
}

TEST_F(CudaTransformer, SelectedLogitRowsAndTheirArgmaxEqualReference) {
  const ModelConfig cfg = testing::tiny_llama();
  const auto twin = make_twin(cfg, Dtype::BF16);
  ForwardRequest r = ForwardRequest::chain(random_tokens(9, cfg.vocab_size, kSeed));
  r.logit_rows = {8, 2, 2, 0};
  auto full = twin->reference.new_cache(16);
  auto full_device = twin->cuda.new_cache(16);
  const Matrix logits = twin->reference.forward(*full, r).logits;
  EXPECT_TRUE(bitwise_equal(twin->cuda.forward(*full_device, r).logits, logits));
  // argmax_only: the device picks, and only the ids come back.
  r.argmax_only = true;
  auto rc = twin->reference.new_cache(16);
  auto cc = twin->cuda.new_cache(16);
  const ForwardResult want = twin->reference.forward(*rc, r);
  const ForwardResult got = twin->cuda.forward(*cc, r);
  EXPECT_EQ(got.argmax, want.argmax);
  EXPECT_EQ(got.logits.rows(), 0) << "only the ids come back";
  ASSERT_EQ(want.argmax.size(), 4u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(want.argmax[static_cast<std::size_t>(i)], argmax(logits.row(i).data(), cfg.vocab_size)) << "row " << i;
  EXPECT_TRUE(cuda_cache(*cc).equals(dense_cache(*rc)));
}

TEST_F(CudaTransformer, ArgmaxOnlyRefusesANaNLogitAsTheReferenceDoes) {
  const ModelConfig cfg = testing::tiny_llama();
  ForwardRequest r = ForwardRequest::chain(random_tokens(9, cfg.vocab_size, kSeed));
  r.logit_rows = {8, 2};
  r.argmax_only = true;
  // An LM head row of NaN: logit 5 is NaN in every row.
  LlamaWeights w = testing::make_model(cfg, kSeed).weights();
  Matrix& head = cfg.tie_word_embeddings ? w.embed_tokens : w.lm_head;
  head.row(5).setConstant(std::numeric_limits<float>::quiet_NaN());
  const Transformer bad_reference(cfg, w);
  const cuda::CudaTransformer bad_device(testing::test_device(), cfg, w, Dtype::F32);
  auto c1 = bad_reference.new_cache(16);
  auto c2 = bad_device.new_cache(16);
  const std::string expected = testing::error_of([&] { bad_reference.forward(*c1, r); });
  EXPECT_CONTAINS(expected, "argmax: logit of token 5 is NaN");
  EXPECT_EQ(testing::error_of([&] { bad_device.forward(*c2, r); }), expected);
}

TEST_F(CudaTransformer, TreeMaskEqualsChainForEveryPathAndCompactsOnTheDevice) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    const auto twin = make_twin(cfg, Dtype::F16);
    const auto prefix = random_tokens(6, cfg.vocab_size, kSeed + 7);
    const auto nodes = random_tokens(static_cast<int>(testing::kTreeParents.size()), cfg.vocab_size, kSeed + 8);
    const Matrix tree_logits = testing::expect_tree_equals_chains(
        twin->cuda, prefix, nodes, name, [](const KVCache& a, const KVCache& b) { return cuda_cache(a).equals(cuda_cache(b)); });
    auto rc = twin->reference.new_cache(32);
    twin->reference.forward(*rc, ForwardRequest::chain(prefix));
    EXPECT_TRUE(bitwise_equal(tree_logits, twin->reference.forward(*rc, testing::tree_request(nodes, 6)).logits)) << name;
  }
}

TEST_F(CudaTransformer, BatchInvariant) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    const auto twin = make_twin(cfg, Dtype::BF16);
    testing::expect_batch_invariant(twin->cuda, random_tokens(11, cfg.vocab_size, kSeed + 3), name,
                                    [](const KVCache& a, const KVCache& b) { return cuda_cache(a).equals(cuda_cache(b)); });
  }
}

TEST_F(CudaTransformer, EveryLaunchIsScheduleIndependent) {
  // Each kernel launch runs under the forward, reverse and a random thread schedule and must leave
  // device memory identical (the emulator throws otherwise).
  const ModelConfig cfg = testing::tiny_llama();
  const auto twin = make_twin(cfg, Dtype::F32, true);
  auto rc = twin->reference.new_cache(16);
  auto cc = twin->cuda.new_cache(16);
  const ForwardRequest r = ForwardRequest::chain(random_tokens(3, cfg.vocab_size, kSeed + 5));
  EXPECT_TRUE(bitwise_equal(twin->cuda.forward(*cc, r).logits, twin->reference.forward(*rc, r).logits));
}

TEST_F(CudaTransformer, LaunchConfigurationsChangeNoBit) {
  // The threads per block of the linear kernels and of attention, at both ends of what they take,
  // over a chain (one-token and general forms) and a draft tree, against the default configuration.
  ModelConfig cfg;
  for (const auto& [name, c] : cpu_fixture_configs())
    if (name == "llama_all_biases_odd_widths") cfg = c;
  const LlamaWeights w = testing::make_model(cfg, kSeed).weights();
  const cuda::CudaTransformer base(testing::test_device(), cfg, w, Dtype::BF16);
  const kernels::LaunchConfig most = kernels::largest_launch_config(testing::test_device()->limits());
  for (const kernels::LaunchConfig lc : {kernels::LaunchConfig{64, 32}, most}) {
    const cuda::CudaTransformer other(testing::test_device(lc), cfg, w, Dtype::BF16);
    const std::string where = kernels::describe(lc) + ", seed " + std::to_string(kSeed);
    auto a = base.new_cache(40);
    auto b = other.new_cache(40);
    for (const ForwardRequest& r : {ForwardRequest::chain(random_tokens(13, cfg.vocab_size, kSeed)),
                                    ForwardRequest::chain({3}),
                                    testing::tree_request(random_tokens(static_cast<int>(testing::kTreeParents.size()),
                                                                        cfg.vocab_size, kSeed + 1), 14)}) {
      ForwardRequest q = r;
      q.final_hidden = true;
      const ForwardResult want = base.forward(*a, q);
      const ForwardResult got = other.forward(*b, q);
      EXPECT_TRUE(bitwise_equal(got.logits, want.logits)) << where << ": logits, T " << q.tokens.size();
      EXPECT_TRUE(bitwise_equal(got.final_hidden, want.final_hidden)) << where << ": hidden, T " << q.tokens.size();
    }
    EXPECT_TRUE(cuda_cache(*b).equals(cuda_cache(*a))) << where << ": KV cache";
  }
}

TEST_F(LaunchConfig, IsDerivedFromTheDeviceLimits) {
  kernels::DeviceLimits h200;  // sm_90: 132 SMs, 2048 threads in at most 32 blocks each
  h200.sm_count = 132;
  const kernels::LaunchConfig a = kernels::derive_launch_config(h200);
  EXPECT_EQ(a.linear_threads, 64) << "the smallest block that fills an SM";
  EXPECT_EQ(a.attention_threads, 128);
  kernels::DeviceLimits ada;  // sm_89: 1536 threads in at most 24 blocks
  ada.max_threads_per_sm = 1536;
  ada.max_blocks_per_sm = 24;
  EXPECT_EQ(kernels::derive_launch_config(ada).linear_threads, 64);
  ada.max_blocks_per_sm = 16;  // sm_86
  EXPECT_EQ(kernels::derive_launch_config(ada).linear_threads, 128);
  kernels::DeviceLimits tiny;  // a device that takes at most 64 threads a block
  tiny.max_blocks_per_sm = 4;
  tiny.max_threads_per_block = 64;
  const kernels::LaunchConfig t = kernels::derive_launch_config(tiny);
  EXPECT_EQ(t.linear_threads, 64);
  EXPECT_EQ(t.attention_threads, 64);
  EXPECT_EQ(cuda::emulator_runtime()->launch_config().linear_threads,
            kernels::derive_launch_config(cuda::emulated_device_limits()).linear_threads);
  // Registers can cap a compiled kernel below the device's 1024 threads (BF16 Linear on sm_90).
  kernels::DeviceLimits capped = h200;
  capped.max_linear_threads = 640;
  capped.max_attention_threads = 200;
  EXPECT_EQ(kernels::derive_launch_config(capped).linear_threads, 64);
  EXPECT_EQ(kernels::derive_launch_config(capped).attention_threads, 128);
  EXPECT_EQ(kernels::largest_launch_config(capped).linear_threads, 512) << "the largest power of two under 640";
  EXPECT_EQ(kernels::largest_launch_config(capped).attention_threads, 192) << "the largest multiple of 32 under 200";
  capped.max_attention_threads = 100;
  EXPECT_EQ(kernels::derive_launch_config(capped).attention_threads, 64);
  EXPECT_EQ(kernels::largest_launch_config(h200).linear_threads, 1024);
  EXPECT_EQ(kernels::largest_launch_config(h200).attention_threads, 1024);
  EXPECT_EQ(kernels::largest_launch_config(tiny).linear_threads, 64);
  EXPECT_EQ(kernels::largest_launch_config(tiny).attention_threads, 64);
}

TEST_F(LaunchConfig, ThreadCountsAKernelCannotTakeAreRefused) {
  const ModelConfig cfg = testing::tiny_llama();
  const LlamaWeights w = testing::make_model(cfg, kSeed).weights();
  const cuda::CudaTransformer bad_linear(testing::test_device({96, 128}), cfg, w, Dtype::F32);
  auto c1 = bad_linear.new_cache(4);
  EXPECT_CONTAINS(testing::error_of([&] { bad_linear.forward(*c1, ForwardRequest::chain({1})); }),
                  "96 threads per block; expected a power of two from 64 to 1024");
  const cuda::CudaTransformer bad_attention(testing::test_device({128, 48}), cfg, w, Dtype::F32);
  auto c2 = bad_attention.new_cache(4);
  EXPECT_CONTAINS(testing::error_of([&] { bad_attention.forward(*c2, ForwardRequest::chain({1})); }),
                  "48 threads per block; expected a multiple of 32 up to 1024");
  // A block the compiled kernel cannot take on this device (its registers) is refused by name,
  // where the device caps it (a GPU; the emulator takes 1024).
  const kernels::DeviceLimits limits = testing::test_device()->limits();
  if (limits.max_linear_threads < 1024) {
    int refused = 0;
    for (const Dtype d : {Dtype::F32, Dtype::BF16, Dtype::F16}) {
      const cuda::CudaTransformer too_many(testing::test_device({1024, 128}), cfg, w, d);
      for (const int T : {2, 13}) {  // the few-token and the general form
        auto c = too_many.new_cache(16);
        const std::string e = testing::error_of([&] { too_many.forward(*c, ForwardRequest::chain(std::vector<int32_t>(T, 1))); });
        if (e.empty()) continue;
        ++refused;
        EXPECT_CONTAINS(e, "1024 threads per block; as compiled for this device it takes at most ");
      }
    }
    EXPECT_GT(refused, 0) << "the device caps the linear kernels at " << limits.max_linear_threads
                          << " threads, yet every form took 1024";
  }
}

// A checkpoint (safetensors in each precision, sharded or not, or a GGUF file) loads tensor by
// tensor onto the device in its stored precision and computes bitwise what the reference loaded
// from the same files computes.
TEST_F(CudaTransformer, LoadedCheckpointsEqualTheReference) {
  const LlamaModel target = load_llama_checkpoint(std::string(SPECDEC_SOURCE_DIR) + "/models/target");
  testing::ScratchDir dir("cuda-load");
  save_llama_checkpoint(dir / "F32", target.config, target.weights, Dtype::F32, 200000);  // sharded
  save_llama_checkpoint(dir / "BF16", target.config, target.weights, Dtype::BF16);
  testing::write_gguf_model(dir / "q8.gguf", target, "llama", testing::GgufStorage::q8_0);
  for (const auto& [name, precision] : {std::pair{std::string("F32"), Dtype::F32}, std::pair{std::string("BF16"), Dtype::BF16},
                                        std::pair{std::string("q8.gguf"), Dtype::F32}}) {
    const auto model = cuda::load_cuda_transformer(testing::test_device(), dir / name);
    EXPECT_EQ(model->precision(), precision) << name;
    const LlamaModel loaded = load_llama_checkpoint(dir / name);
    const Transformer reference(loaded.config, loaded.weights);
    const auto tokens = random_tokens(6, loaded.config.vocab_size, kSeed + 9);
    auto rc = reference.new_cache(8);
    auto cc = model->new_cache(8);
    EXPECT_TRUE(bitwise_equal(model->forward(*cc, ForwardRequest::chain(tokens)).logits,
                              reference.forward(*rc, ForwardRequest::chain(tokens)).logits))
        << name << ", seed " << kSeed + 9;
  }
}

TEST_F(CudaTransformer, GreedyDecodingOfTheBundledModelEqualsTheReference) {
  const LlamaModel model = load_llama_checkpoint(std::string(SPECDEC_SOURCE_DIR) + "/models/target");
  const Transformer reference(model.config, model.weights);
  const cuda::CudaTransformer device(testing::test_device(), model.config, model.weights, Dtype::F32);
  const std::vector<int32_t> prompt = {0, 'I', 'n', ' ', 't', 'h', 'e'};
  GenerationOptions opt;
  opt.max_new_tokens = 6;
  opt.stop_at_eos = false;
  const SamplingParams greedy;
  const GenerationResult want = decode_sequential(reference, prompt, greedy, opt);
  const GenerationResult got = decode_sequential(device, prompt, greedy, opt);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(static_cast<int>(got.tokens.size()), 6);
}

TEST_F(CudaTransformer, RandomWeightsOnTheDeviceAreDeterministicAndSizedAsUploadedOnes) {
  // The benchmark models: weights generated into their precision on the device.
  ModelConfig cfg = testing::tiny_llama();
  cfg.attention_bias = cfg.o_proj_bias = cfg.mlp_bias = true;
  const auto rt = testing::test_device();
  const auto a = cuda::CudaTransformer::random(rt, cfg, Dtype::BF16, 7);
  const auto b = cuda::CudaTransformer::random(rt, cfg, Dtype::BF16, 7);
  const auto other = cuda::CudaTransformer::random(rt, cfg, Dtype::BF16, 8);
  const cuda::CudaTransformer uploaded(rt, cfg, testing::make_model(cfg, kSeed).weights(), Dtype::BF16);
  EXPECT_EQ(a->weight_bytes_per_step(), uploaded.weight_bytes_per_step());
  const ForwardRequest r = ForwardRequest::chain(random_tokens(5, cfg.vocab_size, kSeed));
  auto ca = a->new_cache(8), cb = b->new_cache(8), co = other->new_cache(8);
  const Matrix la = a->forward(*ca, r).logits;
  EXPECT_TRUE(bitwise_equal(la, b->forward(*cb, r).logits)) << "seed 7 twice";
  EXPECT_FALSE(bitwise_equal(la, other->forward(*co, r).logits)) << "seeds 7 and 8";
  EXPECT_TRUE(la.allFinite());
  EXPECT_GT(la.maxCoeff() - la.minCoeff(), 0.01f);
  EXPECT_CONTAINS(testing::error_of([&] { cuda::CudaTransformer::random(rt, cfg, Dtype::F64, 1); }), "F64");
  EXPECT_CONTAINS(testing::error_of([&] { cuda::CudaTransformer::random(nullptr, cfg, Dtype::BF16, 1); }),
                  "no device runtime given");
}

TEST_F(CudaTransformerErrors, ReportWhatIsWrong) {
  const ModelConfig cfg = testing::tiny_llama();
  const auto twin = make_twin(cfg, Dtype::F32);
  auto reference_cache = twin->reference.new_cache(8);
  try {
    twin->cuda.forward(*reference_cache, ForwardRequest::chain({1}));
    ADD_FAILURE() << "a reference cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not created by the cuda backend"), std::string::npos) << e.what();
  }
  auto cc = twin->cuda.new_cache(8);
  try {
    twin->cuda.forward(*cc, ForwardRequest::chain({cfg.vocab_size}));
    ADD_FAILURE() << "a token outside the vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cc->length(), 0) << "a refused request must leave the cache as it was";
  const auto other = make_twin(cfg, Dtype::F32);  // another runtime
  auto foreign = other->cuda.new_cache(8);
  EXPECT_THROW(twin->cuda.forward(*foreign, ForwardRequest::chain({1})), Error);
  ModelConfig big = cfg;
  big.hidden_size = 40;  // weights of 48
  EXPECT_THROW(cuda::CudaTransformer(testing::test_device(), big, testing::make_model(cfg, kSeed).weights()), Error);
  if (!cuda::cuda_built()) {
    try {
      cuda::cuda_runtime();
      ADD_FAILURE() << "a build without CUDA made a CUDA runtime";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("-DSPECDEC_CUDA=ON"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace specdec
