// Draft-free methods (n-gram lookup, suffix decoding) in the decoding loop: sampled decoding with
// their deterministic drafts keeps the target's law (one-hot draft distributions through the
// rejection rule), and suffix decoding's shared tree of earlier responses drafts for later
// requests without changing what greedy and coupled decoding emit. The rules themselves are
// pinned in test_draft_free_rules.cpp; greedy/coupled equality with sequential decoding on every
// backend is in test_methods (every registry row).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/decoding/batched.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/suffix_proposer.hpp"
#include "reference/methods/registry.hpp"
#include "tests/reference/speculative_fixtures.hpp"

namespace specdec {
namespace {

// The draft-free registry entries, each with parameters that let a short history match.
std::vector<std::string> draft_free_methods() {
  return {"ngram,n_min=1,n_max=3", "prompt-lookup,n_max=2", "ngram-tree,n_min=1,n_max=3,breadth=2,nodes=4",
          "suffix,min_prob=0.05", "suffix-tree,min_prob=0.05"};
}

std::unique_ptr<Proposer> make(const std::string& text, const ModelConfig& target, int k) {
  MethodSpec s = parse_method_text(text);
  s.k = k;
  ProposerInputs in;
  in.target = &target;
  in.capacity = 64;
  return make_method_proposer(s, in);
}

// The joint law of three sampled tokens after a repetitive prompt equals the target's (exact
// enumeration, chi-square at alpha 1e-3), and the methods did draft (else the test proves nothing).
TEST(DraftFreeDecoding, SampledDecodingKeepsTheTargetDistribution) {
  const testing::SampledLoopSetup setup;
  const Transformer& target = setup.target;
  const std::vector<int32_t> prompt = {1, 4, 2, 1, 4, 3, 1, 4, 2, 1, 4};  // "1 4" recurs with three continuations
  SamplingParams s = setup.sampling;
  const auto expected = testing::three_token_distribution(target, prompt, s);
  for (const std::string& method : draft_free_methods()) {
    const int N = 6000;
    std::map<std::vector<int32_t>, int> counts;
    int drafted = 0;
    for (int i = 1; i <= N; ++i) {
      s.seed = static_cast<uint64_t>(i);
      const auto proposer = make(method, setup.config, 2);
      RejectionAcceptor acceptor;
      const GenerationResult r = decode_speculative(target, *proposer, acceptor, prompt, s, testing::max_new_tokens(3));
      counts[r.tokens]++;
      drafted += r.stats.drafted_tokens;
    }
    const testing::ChiSquare chi = testing::chi_square_test(expected, counts, N);
    EXPECT_LT(chi.statistic, chi.critical) << method << ": chi-square " << chi.statistic << " with "
                                           << chi.degrees_of_freedom << " degrees of freedom, N " << N << ", seeds 1.." << N;
    EXPECT_GT(chi.bins, 10) << method;
    EXPECT_GT(drafted, N) << method << ": drafted " << drafted << " tokens in " << N << " runs";
  }
}

// Requests sharing suffix decoding's response tree: a request admitted after an earlier one with
// the same prompt finished drafts from that response (sources name it), and every greedy and coupled
// output still equals sequential decoding.
TEST(DraftFreeDecoding, SuffixResponsesDraftForLaterRequestsLosslessly) {
  const testing::SampledLoopSetup setup;
  const Transformer& target = setup.target;
  for (const char* tree : {"suffix", "suffix-tree"}) {
    for (SamplingParams::Mode mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::coupled}) {
      MethodSpec spec = parse_method_text(std::string(tree) + ",min_prob=0.01,spec_factor=4");
      spec.k = 6;
      const std::shared_ptr<MethodRunState> state = method_entry(spec.name).make_run_state(spec.normalized());
      std::vector<BatchRequest> requests(4);
      for (std::size_t i = 0; i < requests.size(); ++i) {
        requests[i].prompt = {static_cast<int32_t>(i % 2), 5};  // requests 0 and 2, 1 and 3 alike
        requests[i].max_new_tokens = 24;
        requests[i].stop_at_eos = false;
        requests[i].sequence = 7;  // equal ids: equal coupled noise, so alike requests emit alike
        requests[i].sampling.mode = mode;
        requests[i].sampling.temperature = 1.0;
        requests[i].sampling.seed = 3;
      }
      BatchOptions o;
      o.max_in_flight = 1;  // each request starts after the one before finished
      std::vector<int> from_responses(requests.size(), 0);
      struct Sources : DecodeObserver {
        int* count = nullptr;
        void on_speculative_step(const SpeculativeStep& step) override {
          if (step.sources)
            for (const DraftSource& d : *step.sources) *count += d.origin == DraftSource::Origin::responses;
        }
      };
      std::vector<Sources> observers(requests.size());
      for (std::size_t i = 0; i < requests.size(); ++i) observers[i].count = &from_responses[i];
      const BatchResult b = decode_batched(
          target, requests,
          [&](std::size_t, ForwardGather&) {
            ProposerInputs in;
            in.target = &setup.config;
            in.capacity = 64;
            in.run_state = state;
            return make_method_proposer(spec, in);
          },
          o, [&](std::size_t i) -> DecodeObserver* { return &observers[i]; });
      const std::string where = std::string(tree) + ", sampling mode " + std::to_string(static_cast<int>(mode)) + ", model seed 7";
      for (std::size_t i = 0; i < requests.size(); ++i) {
        GenerationOptions g;
        g.max_new_tokens = 24;
        g.stop_at_eos = false;
        g.sequence = 7;
        EXPECT_EQ(b.requests[i].generation.tokens, decode_sequential(target, requests[i].prompt, requests[i].sampling, g).tokens)
            << where << ", request " << i;
      }
      EXPECT_EQ(from_responses[0], 0) << where << ": no response had finished yet";
      EXPECT_GT(from_responses[2], 0) << where << ": request 2 never drafted from request 0's response";
      EXPECT_GT(b.requests[2].generation.stats.accepted_tokens, b.requests[0].generation.stats.accepted_tokens) << where;
    }
  }
}

// The oldest responses leave the tree beyond cached_requests, and a sequence's own output is read
// beside them (as Arctic Inference's global tree holds an active request's response).
TEST(DraftFreeDecoding, SuffixResponsesAreBoundedOldestFirst) {
  SuffixResponses r(8, 2);
  const std::vector<std::vector<int32_t>> responses = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  for (const auto& response : responses) r.finish(r.start(), response);
  EXPECT_FALSE(r.tree().holds(0));
  EXPECT_TRUE(r.tree().holds(1));
  EXPECT_TRUE(r.tree().holds(2));
  SuffixTree fresh(8);
  fresh.extend(1, responses[1]);
  fresh.extend(2, responses[2]);
  EXPECT_EQ(r.tree().nodes(), fresh.nodes());
  EXPECT_EQ(r.tree().root().count, fresh.root().count);
  EXPECT_THROW(SuffixResponses(8, -1), specdec::Error);
}

}  // namespace
}  // namespace specdec
