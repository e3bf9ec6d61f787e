// Pricing speculation policies (simulator/policy_pricing): the real policy objects driven through
// the synthetic acceptance process agree with the closed forms where one exists, schedules by batch
// size take effect, and `specdec simulate --policy / --recommend-policy` report and rank them.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "cli/cli.hpp"
#include "reference/policies/registry.hpp"
#include "simulator/policy_pricing.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// Llama-3.1-8B with its EAGLE-3 head on an H100, a chain of up to `k`, i.i.d. α.
Scenario eagle3(int k, double alpha, int batch = 1) {
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", k, alpha);
  s.workload.prompt_len = 512;
  s.workload.output_len = 256;
  s.workload.batch = batch;
  return s;
}

PolicyPricing priced(const Scenario& s, const std::string& policy, PolicyPricingOptions opt = {}) {
  return price_policy(s, parse_policy_spec(policy), opt);
}

TEST(PolicyPricing, FixedAgreesWithTheClosedForm) {
  for (double alpha : {0.6, 0.8}) {
    Scenario s = eagle3(4, alpha);
    const PolicyPricing p = priced(s, "fixed");
    const double exact = s.acceptance->expected_tokens(4);
    ASSERT_GT(p.tokens_per_step_se, 0.0);
    EXPECT_LT(p.tokens_per_step_se, 0.03) << "20,000 steps should pin AL to about 0.01";
    EXPECT_NEAR(p.tokens_per_step, exact, 4 * p.tokens_per_step_se) << "alpha " << alpha;
    EXPECT_EQ(p.steps, 20000);
    EXPECT_DOUBLE_EQ(p.mean_k, 4.0);
    EXPECT_DOUBLE_EQ(p.k_histogram[4], 1.0);
    // Every step is the cost model's K = 4 step, so the speedup follows predict()'s up to AL's error.
    const Prediction pr = predict(s);
    EXPECT_NEAR(p.step_s, pr.step.total_s(), 1e-12 * pr.step.total_s());
    EXPECT_DOUBLE_EQ(p.sequential_tpot_s, pr.sequential_tpot_s);
    EXPECT_NEAR(p.speedup, pr.speedup, 4 * p.speedup_se);
    EXPECT_DOUBLE_EQ(p.drafter_forwards_per_step, pr.step.draft_forwards);
  }
  // Per-position rates (not i.i.d.): the same agreement.
  Scenario s = eagle3(5, 0.8);
  s.acceptance = conditional_acceptance({0.9, 0.8, 0.7, 0.6, 0.5});
  const PolicyPricing p = priced(s, "fixed");
  EXPECT_NEAR(p.tokens_per_step, s.acceptance->expected_tokens(5), 4 * p.tokens_per_step_se);
  EXPECT_NEAR(p.acceptance_rate, (s.acceptance->expected_tokens(5) - 1) / 5, 0.01);
}

TEST(PolicyPricing, FixedDepthsInClosedFormMatchPredict) {
  Scenario s = eagle3(6, 0.75);
  const std::vector<FixedDepthPricing> f = price_fixed_depths(s);
  ASSERT_EQ(f.size(), 7u);
  EXPECT_DOUBLE_EQ(f[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(f[0].tokens_per_step, 1.0);
  for (int k = 1; k <= 6; ++k) {
    Scenario sk = s;
    sk.plan.k = k;
    const Prediction p = predict(sk);
    EXPECT_NEAR(f[k].tpot_s, p.tpot_s, 1e-9 * p.tpot_s) << "K " << k;
    EXPECT_NEAR(f[k].speedup, p.speedup, 1e-9) << "K " << k;
  }
  const FixedDepthPricing best = best_fixed_depth(f);
  for (const auto& x : f) EXPECT_GE(x.tpot_s, best.tpot_s);
}

TEST(PolicyPricing, AlternatingScheduleAveragesTheTwoDepths) {
  Scenario s = eagle3(4, 0.8);
  const PolicyPricing p = priced(s, "schedule,depths=4/0");
  const double expected = (s.acceptance->expected_tokens(4) + 1.0) / 2.0;
  EXPECT_NEAR(p.tokens_per_step, expected, 4 * p.tokens_per_step_se);
  EXPECT_NEAR(p.k_histogram[0], 0.5, 0.01);
  EXPECT_NEAR(p.k_histogram[4], 0.5, 0.01);
  EXPECT_DOUBLE_EQ(p.k_histogram[0] + p.k_histogram[4], 1.0);
  EXPECT_NEAR(p.mean_k, 2.0, 0.04);
}

TEST(PolicyPricing, BatchSizeSchedulesChangeK) {
  auto mean_k = [](const std::string& policy, int batch) { return priced(eagle3(4, 0.8, batch), policy).mean_k; };
  const std::string vllm = "vllm-batch,schedule=1:4/8:2/32:0";
  EXPECT_DOUBLE_EQ(mean_k(vllm, 1), 4.0);
  EXPECT_DOUBLE_EQ(mean_k(vllm, 4), 4.0);  // between range starts: the previous range's K
  EXPECT_DOUBLE_EQ(mean_k(vllm, 8), 2.0);
  EXPECT_DOUBLE_EQ(mean_k(vllm, 32), 0.0);
  // TensorRT-LLM: the first transition point >= the batch size; nothing beyond the last.
  const std::string trt = "trtllm,schedule=1:4/8:2";
  EXPECT_DOUBLE_EQ(mean_k(trt, 1), 4.0);
  EXPECT_DOUBLE_EQ(mean_k(trt, 4), 2.0);
  EXPECT_DOUBLE_EQ(mean_k(trt, 16), 0.0);
  // Switched off: plain decoding exactly, at the batch's own plain step.
  const PolicyPricing off = priced(eagle3(4, 0.8, 32), vllm);
  EXPECT_DOUBLE_EQ(off.speedup, 1.0);
  EXPECT_DOUBLE_EQ(off.tokens_per_step, 1.0);
  EXPECT_DOUBLE_EQ(off.drafter_forwards_per_step, 0.0);
  // The schedule's depth is priced at its batch: K = 2 at batch 8 is the fixed K = 2 chain.
  Scenario s8 = eagle3(2, 0.8, 8);
  const PolicyPricing two = priced(eagle3(4, 0.8, 8), vllm);
  EXPECT_NEAR(two.step_s, predict(s8).step.total_s(), 1e-12 * two.step_s);
}

TEST(PolicyPricing, GoodputWithoutHopeNeverDrafts) {
  const PolicyPricing p = priced(eagle3(4, 0.8), "goodput,prior=0");
  EXPECT_DOUBLE_EQ(p.mean_k, 0.0);
  EXPECT_DOUBLE_EQ(p.k_histogram[0], 1.0);
  EXPECT_DOUBLE_EQ(p.speedup, 1.0);
  EXPECT_DOUBLE_EQ(p.drafter_forwards_per_step, 0.0);
  // With its default prior it drafts.
  EXPECT_GT(priced(eagle3(4, 0.8), "goodput").mean_k, 1.0);
}

TEST(PolicyPricing, ConfidenceModelHasMeanAAndIsInformative) {
  for (double kappa : {0.5, 2.0, 8.0}) {
    for (double a : {0.2, 0.6, 0.9}) {
      const int n = 40000;
      double sum = 0, sum2 = 0, accepted = 0, confident = 0, confident_accepted = 0, doubtful = 0, doubtful_accepted = 0;
      for (int i = 0; i < n; ++i) {
        const SyntheticDraft d = synthetic_draft(7, i, i % 13, 1 + i % 5, a, kappa);
        sum += d.confidence;
        sum2 += d.confidence * d.confidence;
        accepted += d.accepted;
        if (d.confidence > a) {
          confident += 1;
          confident_accepted += d.accepted;
        } else {
          doubtful += 1;
          doubtful_accepted += d.accepted;
        }
      }
      const double mean = sum / n, var = sum2 / n - mean * mean;
      const std::string at = "kappa " + std::to_string(kappa) + " a " + std::to_string(a);
      EXPECT_NEAR(mean, a, 0.01) << at;                                  // Beta mean a
      EXPECT_NEAR(var, a * (1 - a) / (kappa + 1), 0.01) << at;          // Beta variance
      EXPECT_NEAR(accepted / n, a, 0.01) << at;                          // E[accept] = a
      EXPECT_GT(confident_accepted / confident, doubtful_accepted / doubtful + 0.1) << at;  // informative
    }
  }
  // Deterministic, and 0 / 1 at the ends.
  EXPECT_EQ(synthetic_draft(1, 2, 3, 4, 0.7, 2).confidence, synthetic_draft(1, 2, 3, 4, 0.7, 2).confidence);
  EXPECT_NE(synthetic_draft(1, 2, 3, 4, 0.7, 2).confidence, synthetic_draft(1, 2, 3, 5, 0.7, 2).confidence);
  EXPECT_EQ(synthetic_draft(1, 2, 3, 4, 0.0, 2).confidence, 0.0);
  EXPECT_FALSE(synthetic_draft(1, 2, 3, 4, 0.0, 2).accepted);
  EXPECT_TRUE(synthetic_draft(1, 2, 3, 4, 1.0, 2).accepted);
}

TEST(PolicyPricing, ConfidenceIsInformativeAndStopRulesSaveForwards) {
  Scenario s = eagle3(8, 0.7);
  const PolicyPricing fixed = priced(s, "fixed");
  const PolicyPricing pmin = priced(s, "p-min");
  // p-min stops at the first unconfident draft: fewer drafts verified, a larger share accepted.
  EXPECT_GT(pmin.acceptance_rate, fixed.acceptance_rate + 0.1);
  EXPECT_LT(pmin.drafter_forwards_per_step, fixed.drafter_forwards_per_step);
  EXPECT_LT(pmin.mean_drafted, pmin.mean_k);
  // An uninformative confidence (huge concentration: c = a_i always) with a threshold below every
  // a_i stops nothing: the fixed policy's AL, draw for draw.
  PolicyPricingOptions flat;
  flat.concentration = 1e9;
  const PolicyPricing never = priced(s, "p-min,p_min=0.5", flat);
  EXPECT_DOUBLE_EQ(never.mean_drafted, 8.0);
  EXPECT_NEAR(never.tokens_per_step, s.acceptance->expected_tokens(8), 4 * never.tokens_per_step_se);
}

TEST(PolicyPricing, DeterministicForASeed) {
  Scenario s = eagle3(6, 0.8);
  PolicyPricingOptions opt;
  opt.steps = 5000;
  const PolicyPricing a = priced(s, "hf-confidence", opt), b = priced(s, "hf-confidence", opt);
  EXPECT_EQ(policy_pricing_json(a).dump(), policy_pricing_json(b).dump());
  opt.seed = 2;
  const PolicyPricing c = priced(s, "hf-confidence", opt);
  EXPECT_NE(a.tokens_per_step, c.tokens_per_step);
  EXPECT_NEAR(a.tokens_per_step, c.tokens_per_step, 4 * std::hypot(a.tokens_per_step_se, c.tokens_per_step_se));
}

TEST(PolicyPricing, RecommendationRanksEveryPolicyDeterministically) {
  Scenario s = eagle3(6, 0.8);
  PolicyPricingOptions opt;
  opt.steps = 4000;
  const PolicyRecommendation r = recommend_policy(s, opt);
  // Every registered policy, goodput with this scenario's costs, and the best fixed K.
  EXPECT_EQ(r.policies.size(), policy_registry().size() + 1);
  EXPECT_EQ(r.ranking.size(), policy_registry().size() + 2);
  int closed = 0;
  for (std::size_t i = 0; i < r.ranking.size(); ++i) {
    closed += r.ranking[i].closed_form;
    if (i > 0) {
      EXPECT_LE(r.ranking[i - 1].tpot_s, r.ranking[i].tpot_s) << r.ranking[i].label;
    }
  }
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(r.recommended, r.ranking[0].label);
  for (const std::string& name : policy_names()) {
    bool found = false;
    for (const auto& p : r.policies) found |= p.policy.name == name;
    EXPECT_TRUE(found) << name;
  }
  const PolicyRecommendation again = recommend_policy(s, opt);
  EXPECT_EQ(policy_recommendation_json(r).dump(), policy_recommendation_json(again).dump());
  // The best fixed K is its own closed form, and no fixed K beats it.
  EXPECT_EQ(r.best_fixed.tpot_s, best_fixed_depth(price_fixed_depths(s)).tpot_s);
}

TEST(PolicyPricing, ScenarioErrors) {
  Scenario s = eagle3(4, 0.8);
  s.acceptance = conditional_acceptance({0.9, 0.8});
  EXPECT_NE(error_of([&] { priced(s, "fixed"); }).find("does not answer depth 3"), std::string::npos);
  Scenario seq = test::scenario("llama-3.1-8b", "h100-sxm", "", 0, 0.8);
  EXPECT_NE(error_of([&] { priced(seq, "fixed"); }).find("--drafter"), std::string::npos);
  Scenario measured = eagle3(4, 0.8);
  measured.measured_tokens_per_step = 3.0;
  EXPECT_NE(error_of([&] { priced(measured, "fixed"); }).find("--al"), std::string::npos);
  PolicyPricingOptions few;
  few.steps = 10;
  EXPECT_NE(error_of([&] { priced(eagle3(4, 0.8), "fixed", few); }).find("steps"), std::string::npos);
}

}  // namespace
}  // namespace specdec::sim

namespace specdec::cli {
namespace {

struct PolicyRun {
  int code = 0;
  std::string out;
};

PolicyRun simulate(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::ostringstream out, err;
  CommandIO io{out, err};
  PolicyRun r;
  r.code = run_simulate(args, io);
  r.out = out.str();
  return r;
}

std::string error_of_simulate(std::vector<std::string> extra) {
  return sim::test::error_of([&] { simulate(extra); });
}

TEST(SimulatePolicy, TextAndJson) {
  const PolicyRun t = simulate({"--k", "6", "--alpha", "0.8", "--policy", "hf-heuristic", "--policy-steps", "3000"});
  EXPECT_EQ(t.code, 0);
  for (const char* s : {"policy hf-heuristic", "best fixed K", "K histogram", "Monte Carlo: 3000 steps", "Beta(mean a_i",
                        "tokens/s", "speedup"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << "\n" << t.out;
  const PolicyRun j = simulate({"--k", "6", "--alpha", "0.8", "--policy", "hf-heuristic", "--policy-steps", "3000", "--json"});
  const auto o = nlohmann::json::parse(j.out);
  EXPECT_EQ(o["policy_pricing"]["policy"]["policy"], "hf-heuristic");
  EXPECT_EQ(o["policy_pricing"]["k_histogram"].size(), 7u);
  EXPECT_GT(o["policy_pricing"]["acceptance_length_se"].get<double>(), 0);
  EXPECT_EQ(o["fixed_by_k"].size(), 7u);
  EXPECT_GE(o["best_fixed"]["k"].get<int>(), 1);
  EXPECT_EQ(o["scenario"]["max_depth"], 6);
}

TEST(SimulatePolicy, KByBatchSize) {
  const PolicyRun j = simulate({"--k", "4", "--alpha", "0.8", "--policy", "vllm-batch,schedule=1:4/8:2/32:0", "--batch", "1,8,32",
                          "--policy-steps", "1000", "--json"});
  const auto o = nlohmann::json::parse(j.out);
  ASSERT_EQ(o["by_batch"].size(), 3u);
  EXPECT_EQ(o["by_batch"][0]["policy_pricing"]["mean_k"].get<double>(), 4.0);
  EXPECT_EQ(o["by_batch"][1]["policy_pricing"]["mean_k"].get<double>(), 2.0);
  EXPECT_EQ(o["by_batch"][2]["policy_pricing"]["mean_k"].get<double>(), 0.0);
  EXPECT_EQ(o["by_batch"][2]["policy_pricing"]["batch"], 32);
  const PolicyRun t = simulate({"--k", "4", "--alpha", "0.8", "--policy", "vllm-batch,schedule=1:4/8:2/32:0", "--batch", "1,8,32",
                          "--policy-steps", "1000"});
  EXPECT_NE(t.out.find("best fixed K"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("0:100.0%"), std::string::npos) << t.out;
}

TEST(SimulatePolicy, RecommendIsDeterministic) {
  const std::vector<std::string> a = {"--k", "5", "--alpha", "0.75", "--recommend-policy", "--policy-steps", "2000"};
  const PolicyRun t1 = simulate(a), t2 = simulate(a);
  EXPECT_EQ(t1.out, t2.out);
  EXPECT_NE(t1.out.find("recommendation: "), std::string::npos) << t1.out;
  EXPECT_NE(t1.out.find("best fixed K, closed form"), std::string::npos) << t1.out;
  for (const std::string& name : policy_names()) EXPECT_NE(t1.out.find(name), std::string::npos) << name;
  std::vector<std::string> aj = a;
  aj.push_back("--json");
  const auto o = nlohmann::json::parse(simulate(aj).out);
  EXPECT_EQ(o["recommendation"]["recommended"], o["recommendation"]["ranking"][0]["label"]);
  EXPECT_EQ(t1.out.find("recommendation: " + o["recommendation"]["recommended"].get<std::string>()) != std::string::npos, true);
}

TEST(SimulatePolicy, ErrorsNameTheOption) {
  const std::vector<std::string> base = {"--k", "4", "--alpha", "0.8"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return error_of_simulate(a);
  };
  std::string e = with({"--policy", "hf-heuristc"});
  EXPECT_NE(e.find("--policy"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean hf-heuristic"), std::string::npos) << e;
  e = with({"--policy", "p-min,p_min=2"});
  EXPECT_NE(e.find("--policy"), std::string::npos) << e;
  EXPECT_NE(e.find("p_min"), std::string::npos) << e;
  e = with({"--policy", "goodput,nope=1"});
  EXPECT_NE(e.find("--policy"), std::string::npos) << e;
  EXPECT_NE(e.find("nope"), std::string::npos) << e;
  e = with({"--policy", "vllm-batch,schedule=2:4"});
  EXPECT_EQ(e.rfind("--policy", 0), 0u) << e;
  EXPECT_NE(e.find("batch size 1"), std::string::npos) << e;
  e = with({"--policy", "fixed", "--best-k", "4"});
  EXPECT_NE(e.find("--best-k"), std::string::npos) << e;
  e = with({"--policy", "fixed", "--recommend-policy"});
  EXPECT_NE(e.find("not both"), std::string::npos) << e;
  e = with({"--recommend-policy", "--batch", "1,8"});
  EXPECT_NE(e.find("--batch"), std::string::npos) << e;
  e = with({"--policy", "fixed", "--policy-steps", "5"});
  EXPECT_NE(e.find("--policy-steps"), std::string::npos) << e;
  e = with({"--policy", "fixed", "--confidence-concentration", "0"});
  EXPECT_NE(e.find("--confidence-concentration"), std::string::npos) << e;
  e = error_of_simulate({"--k", "4", "--al", "3", "--policy", "fixed"});
  EXPECT_NE(e.find("--al"), std::string::npos) << e;
}

}  // namespace
}  // namespace specdec::cli
