// Batching with ragged acceptance: the per-step token distribution, the expected maximum of
// normals, static batches checked against a Monte Carlo simulation of the same sequences, and
// continuous batching's prefill share and its limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "simulator/batching.hpp"
#include "simulator/tree_shape.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;
using test::scenario;

TEST(Batching, TokensPerStepDistribution) {
  for (double alpha : {0.5, 0.8, 1.0}) {
    Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, alpha);
    const auto p = tokens_per_step_distribution(s);
    ASSERT_EQ(p.size(), 5u);
    double sum = 0, mean = 0;
    for (size_t j = 0; j < p.size(); ++j) {
      sum += p[j];
      mean += p[j] * double(j + 1);
      // i.i.d.: exactly j tokens = j − 1 accepted then a rejection (the last: all K accepted).
      const double want = j + 1 < p.size() ? std::pow(alpha, double(j)) * (1 - alpha) : std::pow(alpha, 4.0);
      EXPECT_NEAR(p[j], want, 1e-12) << "alpha " << alpha << " j " << j + 1;
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
    EXPECT_NEAR(mean, s.acceptance->expected_tokens(4), 1e-12) << "alpha " << alpha;
  }
  // A tree: the mean is the tree's AL.
  Scenario t = scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 0, 0.8);
  t.engine = SpecLibrary().engine("sglang");
  t.plan.tree = builtin_tree("mc_sim_7b_63");
  t.acceptance = tree_acceptance({{0.7, 0.2, 0.1, 0.1}, {0.7, 0.2, 0.1}, {0.7, 0.2, 0.1}, {0.7, 0.2}, {0.7, 0.2}});
  const auto q = tokens_per_step_distribution(t);
  ASSERT_EQ(q.size(), 6u);
  double mean = 0;
  for (size_t j = 0; j < q.size(); ++j) mean += q[j] * double(j + 1);
  EXPECT_NEAR(mean, tree_expected_tokens(*t.plan.tree, *t.acceptance), 1e-12);
  // What the data cannot give.
  Scenario table = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  table.acceptance = table_acceptance({{4, 3.1}});
  EXPECT_NE(error_of([&] { tokens_per_step_distribution(table); }).find("does not answer K = 1"), std::string::npos);
  Scenario al = table;
  al.acceptance = nullptr;
  al.measured_tokens_per_step = 3.1;
  EXPECT_NE(error_of([&] { predict_batching(al, Batching::static_batch); }).find("a measured AL gives the mean"),
            std::string::npos);
  EXPECT_NO_THROW(predict_batching(al, Batching::continuous)) << "continuous batching needs the mean only";
  EXPECT_NE(error_of([&] { parse_batching("dynamic", "--batching"); }).find("expected static or continuous"),
            std::string::npos);
}

TEST(Batching, ExpectedMaximumOfNormals) {
  EXPECT_EQ(expected_max_of_normals(1), 0.0);
  EXPECT_NEAR(expected_max_of_normals(2), 1.0 / std::sqrt(M_PI), 1e-9);
  EXPECT_NEAR(expected_max_of_normals(3), 1.5 / std::sqrt(M_PI), 1e-9);
  // Monte Carlo for larger n (seed 11).
  std::mt19937 rng(11);
  std::normal_distribution<double> z;
  for (int n : {10, 64, 256}) {
    double sum = 0;
    const int trials = 20000;
    for (int t = 0; t < trials; ++t) {
      double best = -1e300;
      for (int i = 0; i < n; ++i) best = std::max(best, z(rng));
      sum += best;
    }
    EXPECT_NEAR(expected_max_of_normals(n), sum / trials, 0.01) << "n " << n << ", seed 11";
  }
  EXPECT_NE(error_of([] { expected_max_of_normals(0); }).find("n must be >= 1"), std::string::npos);
}

// A static batch runs until its slowest sequence is done: simulate B sequences drawing their
// per-step tokens from the same distribution and compare the mean number of steps.
TEST(Batching, StaticBatchMatchesAMonteCarloOfRaggedSequences) {
  std::mt19937 rng(20251201);
  for (double alpha : {0.6, 0.85}) {
    for (int n : {128, 512}) {
      for (int batch : {1, 8, 64}) {
        Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 5, alpha);
        s.workload.batch = batch;
        s.workload.output_len = n;
        const BatchingPrediction b = predict_batching(s, Batching::static_batch);
        const auto p = tokens_per_step_distribution(s);
        std::discrete_distribution<int> tokens(p.begin(), p.end());  // index j: j + 1 tokens
        double total = 0;
        const int trials = 400;
        for (int t = 0; t < trials; ++t) {
          int slowest = 0;
          for (int q = 0; q < batch; ++q) {
            int emitted = 0, steps = 0;
            while (emitted < n) {
              emitted += tokens(rng) + 1;
              ++steps;
            }
            slowest = std::max(slowest, steps);
          }
          total += slowest;
        }
        const double simulated = total / trials;
        EXPECT_NEAR(b.steps / simulated, 1.0, 0.03)
            << "alpha " << alpha << " N " << n << " batch " << batch << ": predicted " << b.steps << ", simulated "
            << simulated << " (seed 20251201)";
        EXPECT_GE(b.ragged_factor, 1.0);
        EXPECT_NEAR(b.throughput_tokens_per_s, batch * n / (b.steps * b.step_s), 1e-9 * b.throughput_tokens_per_s);
      }
    }
  }
}

// Raggedness costs a static batch more the larger it is; with every draft accepted there is none.
TEST(Batching, StaticRaggednessGrowsWithBatchAndVanishesWithoutVariance) {
  double prev = 0;
  for (int batch : {1, 2, 8, 32, 128}) {
    Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.7);
    s.workload.batch = batch;
    s.workload.output_len = 256;
    const BatchingPrediction b = predict_batching(s, Batching::static_batch);
    EXPECT_GT(b.ragged_factor, prev) << "batch " << batch;
    prev = b.ragged_factor;
    const Prediction uniform = predict(s);
    EXPECT_LE(b.speedup, uniform.speedup * 1.01) << "batch " << batch << ": raggedness never helps a static batch";
  }
  Scenario all = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 1.0);
  all.workload.batch = 64;
  all.workload.output_len = 250;
  const BatchingPrediction b = predict_batching(all, Batching::static_batch);
  EXPECT_DOUBLE_EQ(b.tokens_per_step_sd, 0.0);
  EXPECT_DOUBLE_EQ(b.ragged_factor, 1.0);
  // 5 tokens a step: 250 tokens take 50 steps, and the last step's overshoot, averaged over
  // output lengths, is (5 − 1)/2 tokens: 50.4 steps.
  EXPECT_NEAR(b.steps, 50.4, 1e-12);
  // Sequential decoding batched statically: N steps, the plain TPOT.
  Scenario seq = scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  seq.workload.batch = 16;
  const BatchingPrediction sb = predict_batching(seq, Batching::static_batch);
  EXPECT_DOUBLE_EQ(sb.steps, seq.workload.output_len);
  EXPECT_NEAR(sb.speedup, 1.0, 1e-12);
  EXPECT_NEAR(sb.tpot_s, predict(seq).tpot_s, 1e-12);
}

// Continuous batching: the prefills of replacement requests share every step; their share falls
// with longer outputs, and with none left it is the uniform prediction.
TEST(Batching, ContinuousCarriesThePrefillsOfReplacementRequests) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.workload.batch = 32;
  s.workload.prompt_len = 512;
  double prev_share = 1e9;
  for (int n : {64, 256, 1024}) {
    s.workload.output_len = n;
    const BatchingPrediction c = predict_batching(s, Batching::continuous);
    const double share = c.prefill_per_step_s / (c.step_s + c.prefill_per_step_s);
    EXPECT_GT(share, 0.0) << "N " << n;
    EXPECT_LT(share, prev_share) << "N " << n;
    prev_share = share;
    EXPECT_NEAR(c.throughput_tokens_per_s, 32.0 / c.tpot_s, 1e-9 * c.throughput_tokens_per_s);
    EXPECT_GT(c.speedup, 1.0);
  }
  // Far longer outputs than prompts: the prefill share vanishes and TPOT is step / AL.
  s.workload.prompt_len = 1;
  s.workload.output_len = 1 << 20;
  const BatchingPrediction c = predict_batching(s, Batching::continuous);
  Scenario same = s;
  const Prediction u = predict(same);
  EXPECT_NEAR(c.tpot_s / u.tpot_s, 1.0, 1e-3);
  EXPECT_NEAR(c.speedup / u.speedup, 1.0, 1e-3);
}

// Under an open load a step carries the prompts that arrived during it: T = D + λ·T·c. The solution
// holds its own equation, its prompt rows grow with the rate, it is the plain decode step at rate 0,
// and it does not exist once the prompts alone take the whole replica.
TEST(Batching, StepUnderLoadIsTheFixedPointOfItsOwnPrefill) {
  const double d = 0.025, c = 0.0625;  // a 25 ms decode step, 62.5 ms of prefill per 1024-token prompt
  const StepUnderLoad idle = step_under_load(d, c, 0.0, 1024);
  EXPECT_EQ(idle.step_s, d) << "no prompts: the decode step exactly";
  EXPECT_EQ(idle.prefill_tokens_per_step, 0.0);
  EXPECT_EQ(idle.prefill_share, 0.0);
  EXPECT_TRUE(idle.keeps_up);
  double prev_tokens = 0, prev_step = d;
  for (const double rate : {1.0, 5.0, 10.0, 15.0, 15.9}) {
    const StepUnderLoad t = step_under_load(d, c, rate, 1024);
    ASSERT_TRUE(t.keeps_up) << "rate " << rate;
    EXPECT_NEAR(t.step_s, d + rate * t.step_s * c, 1e-12 * t.step_s) << "rate " << rate << ": T = D + rate·T·c";
    EXPECT_NEAR(t.prefill_s_per_step, t.step_s - d, 1e-12 * t.step_s) << "rate " << rate;
    EXPECT_NEAR(t.prompts_per_step, rate * t.step_s, 1e-15) << "rate " << rate;
    EXPECT_NEAR(t.prefill_tokens_per_step, rate * 1024 * t.step_s, 1e-12) << "rate " << rate;
    EXPECT_DOUBLE_EQ(t.prefill_share, rate * c) << "rate " << rate;
    EXPECT_GT(t.prefill_tokens_per_step, prev_tokens) << "rate " << rate << ": prompt rows grow with the rate";
    EXPECT_GT(t.step_s, prev_step) << "rate " << rate;
    prev_tokens = t.prefill_tokens_per_step;
    prev_step = t.step_s;
  }
  // 1/c = 16 prompts/s fill the replica: at and beyond it there is no step, the replica cannot keep up.
  for (const double rate : {16.0, 16.1, 1e6}) {
    const StepUnderLoad t = step_under_load(d, c, rate, 1024);
    EXPECT_FALSE(t.keeps_up) << "rate " << rate;
    EXPECT_TRUE(std::isinf(t.step_s)) << "rate " << rate;
    EXPECT_GE(t.prefill_share, 1.0) << "rate " << rate;
  }
  EXPECT_TRUE(step_under_load(d, 0.0, 1e6, 1024).keeps_up) << "prompts that cost nothing never fill a replica";
  // Bad input is an error naming the quantity.
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (const double bad : {0.0, -1.0, nan, inf})
    EXPECT_NE(error_of([&] { step_under_load(bad, c, 1, 1024); }).find("the decode step must be a finite number > 0 seconds"),
              std::string::npos)
        << bad;
  for (const double bad : {-1.0, nan, inf})
    EXPECT_NE(error_of([&] { step_under_load(d, bad, 1, 1024); }).find("a prompt's prefill must be a finite number >= 0 seconds"),
              std::string::npos)
        << bad;
  for (const double bad : {-1.0, nan, inf})
    EXPECT_NE(error_of([&] { step_under_load(d, c, bad, 1024); }).find("the prompts' arrival rate must be a finite number >= 0"),
              std::string::npos)
        << bad;
  EXPECT_NE(error_of([&] { step_under_load(d, c, 1, 0); }).find("the prompt length must be >= 1"), std::string::npos);
}

// One prompt's prefill in the steps: what its rows add to the step's target forward where the engine
// interleaves prefill (the weights are read once for the decode rows and the prompt's), a forward of
// its own with its step overhead where it does not; continuous batching prices its replacement
// prompts the same way.
TEST(Batching, PrefillPerPromptFollowsTheEngine) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.workload.batch = 32;
  s.workload.prompt_len = 512;
  s.workload.output_len = 256;
  ASSERT_TRUE(s.engine.interleaves_prefill) << s.engine.name;
  ASSERT_GT(s.engine.step_overhead_s, 0.0) << s.engine.name;
  const StepCost p = prefill_cost(s);
  ASSERT_GT(p.draft_s, 0.0) << "the EAGLE-3 head prefills the prompt too";
  const double interleaved = prefill_seconds_per_prompt(s);
  EXPECT_EQ(interleaved, interleaved_prefill_s(s));
  EXPECT_LT(interleaved, p.draft_s + p.verify_s) << "the prompt's rows ride on weights the decode rows read anyway";
  EXPECT_GT(interleaved, p.draft_s) << "the head's pass over the prompt, and the rows' compute";
  Scenario apart = s;
  apart.engine.interleaves_prefill = false;
  EXPECT_EQ(prefill_seconds_per_prompt(apart), p.total_s());
  EXPECT_GT(prefill_seconds_per_prompt(apart) - interleaved, s.engine.step_overhead_s);
  const BatchingPrediction in = predict_batching(s, Batching::continuous), out = predict_batching(apart, Batching::continuous);
  const double prompts_per_step = 32 * in.tokens_per_step / 256;
  EXPECT_NEAR(in.prefill_per_step_s, prompts_per_step * interleaved, 1e-15);
  EXPECT_NEAR(out.prefill_per_step_s, prompts_per_step * p.total_s(), 1e-12);
  EXPECT_GT(out.tpot_s, in.tpot_s);
  EXPECT_EQ(out.step_s, in.step_s) << "the decode step itself is the same";
  // The bundled engines say which they do.
  SpecLibrary lib;
  for (const char* e : {"vllm", "tensorrt-llm", "ideal", "specdec-cpu"}) EXPECT_TRUE(lib.engine(e).interleaves_prefill) << e;
  for (const char* e : {"sglang", "transformers-neuronx", "hf-eager"}) EXPECT_FALSE(lib.engine(e).interleaves_prefill) << e;
}

}  // namespace
}  // namespace specdec::sim
