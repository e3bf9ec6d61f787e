// Batched decoding on the CUDA backend (the CPU grid emulator in the cpu tests, the GPU in
// tests/gpu): a batch mixing sequential, draft-model and EAGLE-family sequences, greedy, coupled
// and sampled, with continuous batching, decodes every sequence exactly as the device decodes it
// alone. The target's forward_batch and the draft LM's gathered forward_batch run on the device.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <tuple>
#include <string>

#include "optimized/cuda/cuda_eagle_head.hpp"
#include "optimized/cuda/cuda_transformer.hpp"
#include "reference/decoding/batched.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/drafting/medusa_proposer.hpp"
#include "reference/drafters/medusa_heads.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/registry.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/optimized/device_under_test.hpp"
#include "tests/reference/eagle_fixtures.hpp"
#include "tests/reference/speculative_fixtures.hpp"

namespace specdec {
namespace {

class CudaBatched : public testing::DeviceTest {};

constexpr uint64_t kModelSeed = testing::kExactnessModelSeed;
constexpr Dtype kPrecision = Dtype::BF16;

TEST_F(CudaBatched, EverySequenceDecodesAsAlone) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = testing::test_device();
  ModelConfig c = testing::fixture_configs()[0].config;
  c.eos_token_ids.clear();
  const LlamaWeights w = testing::make_model(c, kModelSeed).weights();
  const Transformer reference(c, cpu::rounded_llama_weights(w, kPrecision));  // the heads bind to it
  const cuda::CudaTransformer target(rt, c, w, kPrecision);
  ModelConfig small = c;
  small.num_hidden_layers = 1;
  small.intermediate_size = 32;
  const cuda::CudaTransformer drafter(rt, small, testing::make_model(small, 4242).weights(), kPrecision);
  testing::HeadPool pool;
  pool.bind = [rt](const EagleHead& h) { return cuda::cuda_eagle_head(rt, h); };
  std::vector<testing::EagleMethod> eagle;
  for (const testing::EagleMethod& m : testing::eagle_methods(pool))
    if (m.target == testing::EagleTarget::plain && (m.name.find("_chain") != std::string::npos || m.name.find("_tree_") != std::string::npos))
      eagle.push_back(m);
  ASSERT_GE(eagle.size(), 2u);

  // Request i: its lane (0 sequential, 1 draft model K=3, 2.. EAGLE methods), sampling mode i % 3.
  std::vector<BatchRequest> requests;
  std::vector<int> lanes;
  for (int i = 0; i < 6; ++i) {
    BatchRequest r;
    r.prompt = testing::kExactnessPrompts[static_cast<std::size_t>(i) % testing::kExactnessPrompts.size()];
    r.max_new_tokens = 5 + i % 4;
    r.sequence = static_cast<uint32_t>(100 + i);
    r.sampling.mode = i % 3 == 0 ? SamplingParams::Mode::greedy
                                 : i % 3 == 1 ? SamplingParams::Mode::coupled : SamplingParams::Mode::sample;
    if (i % 3) r.sampling.temperature = 0.7, r.sampling.seed = 31337;
    requests.push_back(r);
    lanes.push_back(i % 4);
  }
  auto make = [&](int lane, const LanguageModel& draft_lm) -> std::unique_ptr<Proposer> {
    if (lane == 0) return nullptr;
    if (lane == 1) return std::make_unique<DraftModelProposer>(draft_lm, c, 3, 64);
    return eagle[static_cast<std::size_t>(lane - 2)].make(reference, 3);
  };
  BatchOptions o;
  o.max_in_flight = 3;
  const BatchResult b = decode_batched(
      target, requests,
      [&](std::size_t i, ForwardGather& gather) { return make(lanes[i], gather.wrap(drafter)); }, o);

  for (std::size_t i = 0; i < requests.size(); ++i) {
    const BatchRequest& r = requests[i];
    GenerationOptions g;
    g.max_new_tokens = r.max_new_tokens;
    g.sequence = r.sequence;
    auto proposer = make(lanes[i], drafter);
    const auto acceptor = default_acceptor(r.sampling);
    const GenerationResult alone = proposer ? decode_speculative(target, *proposer, *acceptor, r.prompt, r.sampling, g)
                                            : decode_sequential(target, r.prompt, r.sampling, g);
    EXPECT_EQ(b.requests[i].generation.tokens, alone.tokens)
        << "request " << i << ", lane " << lanes[i] << ", sampling mode " << i % 3 << ", model seed " << kModelSeed;
    EXPECT_EQ(b.requests[i].generation.stats.accepted_tokens, alone.stats.accepted_tokens) << "request " << i;
  }
  EXPECT_EQ(b.max_in_flight_seen, 3);
}

// Speculation policies on the device: a depth that changes between steps (through plain steps) and
// within a step (confidence stops) leaves greedy and coupled output equal to the device's
// sequential decoding, for the draft model and EAGLE-family chains and trees.
TEST_F(CudaBatched, EveryPolicyEqualsSequentialOnTheDevice) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = testing::test_device();
  ModelConfig c = testing::fixture_configs()[0].config;
  c.eos_token_ids.clear();
  const LlamaWeights w = testing::make_model(c, kModelSeed).weights();
  const Transformer reference(c, cpu::rounded_llama_weights(w, kPrecision));
  const cuda::CudaTransformer target(rt, c, w, kPrecision);
  const cuda::CudaTransformer drafter(rt, c, testing::perturbed_copy(testing::make_model(c, kModelSeed), 0.03f, 999).weights(), kPrecision);
  testing::HeadPool pool;
  pool.bind = [rt](const EagleHead& h) { return cuda::cuda_eagle_head(rt, h); };
  std::vector<testing::EagleMethod> eagle;
  for (const testing::EagleMethod& m : testing::eagle_methods(pool))
    if (m.target == testing::EagleTarget::plain && (m.name.find("_chain") != std::string::npos || m.name.find("_tree_") != std::string::npos))
      eagle.push_back(m);
  const std::vector<std::string> policies = {"schedule,depths=3/0/1", "hf-heuristic,start=1", "hf-confidence,threshold=0.5",
                                             "p-min,p_min=0.5", "sglang-ema,tiers=0/2/4,warmup=0,interval=1",
                                             "trtllm,window=1,threshold=0.9,probe=1", "goodput,prior=0.6"};
  for (SamplingParams::Mode mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::coupled}) {
    SamplingParams s;
    s.mode = mode;
    s.temperature = 0.7;
    s.seed = 5;
    const auto acceptor = default_acceptor(s);
    const auto& prompt = testing::kExactnessPrompts[1];
    const std::vector<int32_t> expected = decode_sequential(target, prompt, s, testing::max_new_tokens(12)).tokens;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      // Policy i drafts with the draft model and with one EAGLE-family shape (rotating).
      std::vector<std::pair<std::string, std::unique_ptr<Proposer>>> proposers;
      proposers.emplace_back("draft", std::make_unique<DraftModelProposer>(drafter, c, 4, 64));
      const testing::EagleMethod& m = eagle[i % eagle.size()];
      proposers.emplace_back(m.name, m.make(reference, 4));
      for (auto& [name, proposer] : proposers) {
        const auto policy = make_policy(parse_policy_spec(policies[i]));
        SpeculationControl control;
        control.policy = policy.get();
        const GenerationResult r = decode_speculative(target, *proposer, *acceptor, prompt, s, testing::max_new_tokens(12), control);
        EXPECT_EQ(r.tokens, expected) << name << " under " << policies[i] << ", sampling mode "
                                      << static_cast<int>(mode) << ", model seed " << kModelSeed;
      }
    }
  }
}

// Draft-free methods on the device: their drafts depend on the token history alone, so greedy and
// coupled output equals the device's sequential decoding, alone and in a batch sharing suffix
// decoding's response tree.
TEST_F(CudaBatched, DraftFreeMethodsEqualSequentialOnTheDevice) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = testing::test_device();
  ModelConfig c = testing::fixture_configs()[0].config;
  c.eos_token_ids.clear();
  const cuda::CudaTransformer target(rt, c, testing::make_model(c, kModelSeed).weights(), kPrecision);
  const std::vector<int32_t> prompt = {3, 14, 15, 9, 2, 3, 14, 15, 9, 2, 3, 14};  // lookups match from the start
  for (SamplingParams::Mode mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::coupled}) {
    SamplingParams s;
    s.mode = mode;
    s.temperature = 0.7;
    s.seed = 5;
    const auto acceptor = default_acceptor(s);
    const std::vector<int32_t> expected = decode_sequential(target, prompt, s, testing::max_new_tokens(12)).tokens;
    for (const char* text : {"ngram,n_min=1,n_max=3", "prompt-lookup", "ngram-tree,n_min=1,breadth=3,nodes=6", "suffix",
                             "suffix-tree"}) {
      MethodSpec spec = parse_method_text(text);
      spec.k = 4;
      ProposerInputs in;
      in.target = &c;
      in.capacity = 64;
      in.run_state = method_entry(spec.name).make_run_state ? method_entry(spec.name).make_run_state(spec.normalized()) : nullptr;
      const std::string where = std::string(text) + ", sampling mode " + std::to_string(static_cast<int>(mode)) +
                                ", model seed " + std::to_string(kModelSeed);
      const auto alone = make_method_proposer(spec, in);
      const GenerationResult r = decode_speculative(target, *alone, *acceptor, prompt, s, testing::max_new_tokens(12));
      EXPECT_EQ(r.tokens, expected) << where;
      if (mode == SamplingParams::Mode::greedy) {
        EXPECT_GT(r.stats.drafted_tokens, 0) << where;  // the prompt's loop continues
      }
      std::vector<BatchRequest> requests(3);
      for (BatchRequest& q : requests) q.prompt = prompt, q.max_new_tokens = 12, q.stop_at_eos = false, q.sampling = s;
      BatchOptions o;
      o.max_in_flight = 2;
      const BatchResult b = decode_batched(target, requests, [&](std::size_t, ForwardGather&) { return make_method_proposer(spec, in); }, o);
      for (std::size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(b.requests[i].generation.tokens, expected) << where << ", request " << i;
    }
  }
}


// MTP modules (their forward on the device) and Medusa heads (on the host, the target on the device):
// greedy and coupled output equals the device's sequential decoding for chains of K = 1..8 in every
// variant, trees, and in a batch.
TEST_F(CudaBatched, MtpAndMedusaEqualSequentialOnTheDevice) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = testing::test_device();
  ModelConfig c = testing::fixture_configs()[0].config;
  c.eos_token_ids.clear();
  const Transformer reference = testing::make_model(c, kModelSeed);
  const cuda::CudaTransformer target(rt, c, reference.weights(), kPrecision);
  const EagleHead module = cuda::cuda_eagle_head(rt, random_eagle_head(testing::mtp_config(c), reference, 15, 0.08f));
  const MedusaHeads medusa = random_medusa_heads(medusa_config_for(c, 4), c, 16, 0.08f);
  const auto& prompt = testing::kExactnessPrompts[1];
  for (SamplingParams::Mode mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::coupled}) {
    SamplingParams s;
    s.mode = mode;
    s.temperature = 0.7;
    s.seed = 5;
    const auto acceptor = default_acceptor(s);
    const std::vector<int32_t> expected = decode_sequential(target, prompt, s, testing::max_new_tokens(12)).tokens;
    std::vector<std::pair<std::string, std::function<std::unique_ptr<Proposer>()>>> makers;
    for (int k = 1; k <= 8; ++k) {
      for (const auto& [variant, feedback, zero] : {std::tuple{"prenorm", MtpFeedback::prenorm, false},
                                                    std::tuple{"vllm", MtpFeedback::prenorm, true},
                                                    std::tuple{"normed", MtpFeedback::normed, false}}) {
        EagleOptions o = testing::chain_options(k);
        o.feedback = feedback;
        o.zero_embedding_at_position_0 = zero;
        makers.emplace_back("mtp " + std::string(variant) + " K=" + std::to_string(k),
                            [&module, o] { return std::make_unique<EagleProposer>(module, o, 64); });
      }
      MedusaOptions m;
      m.k = k;
      makers.emplace_back("medusa K=" + std::to_string(k), [&medusa, m] { return std::make_unique<MedusaProposer>(medusa, m); });
    }
    makers.emplace_back("mtp dynamic tree", [&module] { return std::make_unique<EagleProposer>(module, testing::dynamic_options(2, 3, 8), 64); });
    makers.emplace_back("mtp static tree", [&module] { return std::make_unique<EagleProposer>(module, testing::static_options(testing::kSmallTree), 64); });
    MedusaOptions tree;
    tree.shape = MedusaShape::tree;
    tree.choices = testing::kSmallTree;
    makers.emplace_back("medusa tree", [&medusa, tree] { return std::make_unique<MedusaProposer>(medusa, tree); });
    for (const auto& [name, make] : makers) {
      const std::string where = name + ", sampling mode " + std::to_string(static_cast<int>(mode)) + ", model seed " +
                                std::to_string(kModelSeed);
      const auto proposer = make();
      EXPECT_EQ(decode_speculative(target, *proposer, *acceptor, prompt, s, testing::max_new_tokens(12)).tokens, expected) << where;
    }
    // Three requests, two in flight: each sequence's output is its sequential decoding.
    for (const char* name : {"mtp", "medusa"}) {
      std::vector<BatchRequest> requests(3);
      for (BatchRequest& q : requests) q.prompt = prompt, q.max_new_tokens = 12, q.stop_at_eos = false, q.sampling = s;
      BatchOptions o;
      o.max_in_flight = 2;
      const BatchResult b = decode_batched(target, requests, [&](std::size_t, ForwardGather&) -> std::unique_ptr<Proposer> {
        if (std::string(name) == "mtp") return std::make_unique<EagleProposer>(module, testing::chain_options(4), 64);
        return std::make_unique<MedusaProposer>(medusa, MedusaOptions{});
      }, o);
      for (std::size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(b.requests[i].generation.tokens, expected) << name << " batch, request " << i;
    }
  }
}

}  // namespace
}  // namespace specdec
