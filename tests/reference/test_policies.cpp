// Speculation policies (reference/policies): the registry's parameters and text form; each rule
// against its source's behaviour on scripted outcomes; and what every policy must keep —
// greedy and coupled output equal to sequential decoding for every method and backend, sampled
// output with the target's distribution while K changes between steps, and drafter fallback that
// leaves the output unchanged. A new policy adds a row to policy_rows().
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/batched.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/policies/registry.hpp"
#include "runtime/method_runner.hpp"
#include "speculative_fixtures.hpp"
#include "tests/reference/method_table.hpp"

namespace specdec {
namespace {

using testing::backends_built_here;
using testing::bundled_target;
using testing::method_rows;

const std::vector<int32_t> kPrompt = {0, 76, 113, 35, 119, 107, 104, 35, 101, 104, 106, 108, 113, 113, 108, 113, 106};

// Every registered policy, with parameters that make it change the depth often on short runs
// (and its defaults): a new policy adds its rows here.
std::vector<PolicySpec> policy_rows() {
  std::vector<PolicySpec> rows;
  for (const std::string& name : policy_names()) rows.push_back(parse_policy_spec(name));
  for (const char* text : {"schedule,depths=3/0/1/0/2", "hf-heuristic,start=1", "hf-confidence,threshold=0.9",
                           "p-min,p_min=0.6,n_min=2", "p-min,p_min=0.6,keep_low=1", "specdec++,h=0.2,min=1",
                           "sglang-ema,tiers=0/1/3,warmup=0,interval=1", "trtllm,window=2,threshold=0.9,probe=2",
                           "vllm-batch,window=2", "goodput,c_draft=0.4,prior=0.5"}) {
    rows.push_back(parse_policy_spec(text));
  }
  return rows;
}

DecodeArgs args_for(const MethodSpec& spec, const PolicySpec& policy, const std::string& backend, const std::string& sampling) {
  DecodeArgs a = testing::bundled_method_args(spec, backend);
  a.policy = policy;
  a.sampling = sampling;
  a.temperature = 0.8;
  a.seed = 7;
  a.max_new_tokens = 20;
  a.ignore_eos = true;
  return a;
}

// ---- The registry and the text form ----------------------------------------------------------

TEST(PolicyRegistry, EveryPolicyHasASourceAndDocumentedParameters) {
  for (const PolicyEntry& e : policy_registry()) {
    EXPECT_FALSE(e.title.empty()) << e.name;
    EXPECT_FALSE(e.summary.empty()) << e.name;
    EXPECT_FALSE(e.source.empty()) << e.name;
    ASSERT_NE(e.make, nullptr) << e.name;
    for (const PolicyParam& p : e.params) EXPECT_FALSE(p.doc.empty()) << e.name << " " << p.name;
    EXPECT_NE(make_policy(PolicySpec{e.name, nlohmann::json::object()}), nullptr) << e.name;
  }
  EXPECT_EQ(policy_registry().front().name, "fixed");  // the default
}

TEST(PolicyRegistry, SpecsRoundTripThroughTextAndJson) {
  for (const PolicySpec& spec : policy_rows()) {
    EXPECT_EQ(parse_policy_spec(spec.label()), spec) << spec.label();
    EXPECT_EQ(policy_from_json(spec.to_json(), "row"), spec) << spec.to_json().dump();
    EXPECT_EQ(spec.to_json()["policy"], spec.name);
  }
  EXPECT_EQ(parse_policy_spec("fixed").label(), "fixed");
  EXPECT_EQ(parse_policy_spec("trtllm,schedule=4:4/8:2/32:1").label(), "trtllm,schedule=4:4/8:2/32:1");
  EXPECT_EQ(parse_policy_spec("hf-heuristic,start=5").label(), "hf-heuristic");  // defaults are not repeated
  EXPECT_EQ(policy_from_json("goodput", "j").name, "goodput");
}

TEST(PolicyRegistry, BadSpecsGetClearErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"hf-heuristc", "unknown policy 'hf-heuristc'; known policies: fixed, schedule"},
      {"hf-heuristc", "did you mean hf-heuristic?"},
      {"hf-heuristic,strat=3", "policy hf-heuristic has no parameter 'strat'; its parameters: start; did you mean start?"},
      {"fixed,k=3", "policy fixed has no parameter 'k'; it takes none"},
      {"hf-heuristic,start", "'start' is not KEY=VALUE"},
      {"hf-heuristic,start=0", "parameter start: expected an integer in [1, 4096], got 0"},
      {"hf-heuristic,start=2.5", "expected an integer"},
      {"hf-heuristic,start=1,start=2", "parameter start is given twice"},
      {"hf-confidence,threshold=nan", "'nan' is not a finite number"},
      {"hf-confidence,threshold=1.5", "expected a number in [0, 1], got 1.5"},
      {"sglang-ema,tiers=3/1", "the list must be strictly increasing"},
      {"sglang-ema,tiers=", "'' is not a finite number"},
      {"trtllm,schedule=4-4", "'4-4' is not BATCH:DEPTH"},
      {"trtllm,schedule=8:2/4:4", "batch sizes must be strictly increasing"},
      {"trtllm,schedule=0:4", "batch size: expected an integer in [1, 1048576]"},
      {"vllm-batch,schedule=2:4", "the schedule's first range must start at batch size 1"},
      {std::string(5000, 'x'), "longer than 4096 characters"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      parse_policy_spec(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << text << " -> " << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("--policy: ", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(policy_from_json(nlohmann::json{{"policy", "trtllm"}, {"window", -1}}, "j"), Error);
  EXPECT_THROW(policy_from_json(nlohmann::json::array(), "j"), Error);
}

// ---- Each rule on scripted outcomes ----------------------------------------------------------

StepOutcome outcome(int planned, int drafted, int accepted, const std::vector<double>* confidences = nullptr) {
  StepOutcome o;
  o.planned_depth = planned;
  o.drafted_depth = drafted;
  o.drafted_nodes = drafted;
  o.accepted = accepted;
  o.confidences = confidences;
  return o;
}

TEST(PolicyRules, HfHeuristicGrowsByTwoAndShrinksByOne) {
  auto p = make_policy(parse_policy_spec("hf-heuristic,start=3"));
  const StepContext c{0, 1, 8};
  std::vector<int> ks;
  for (int accepted : {3, 5, 2, 0, 0, 0, 1}) {  // all, all, some, none...
    const int k = p->plan(c).depth;
    ks.push_back(k);
    p->observe(outcome(k, k, std::min(accepted, k)));
  }
  // 3 → all accepted → 5 → all → 7 → 2 of 7 → 6 → 5 → 4 → 3 (1 of 4... here 0) ...
  EXPECT_EQ(ks, (std::vector<int>{3, 5, 7, 6, 5, 4, 3}));
  EXPECT_EQ(p->plan(c).depth, 2);  // 1 of 3 accepted
  EXPECT_EQ(p->plan({0, 1, 2}).depth, 2);  // never beyond --k
}

TEST(PolicyRules, HfConfidenceStopsBelowTheThresholdAndRefitsByRoc) {
  auto p = make_policy(parse_policy_spec("hf-confidence,threshold=0.4"));
  EXPECT_TRUE(p->plan({0, 1, 6}).stop_rule);
  EXPECT_TRUE(p->draft_at(1, 0.01));               // the draft is always taken (transformers)...
  EXPECT_FALSE(p->draft_after(1, 0.39, 0.9));      // ...and drafting stops after a low one
  EXPECT_TRUE(p->draft_after(1, 0.4, 0.9));
  // Labels: accepted drafts 1, the first rejected 0, later ones dropped. After these steps the
  // (label, prob) pairs are (1,.9) (1,.8) (0,.7) | (1,.95) (0,.3) | (1,.6) (0,.5); with sklearn's
  // roc_curve the cost fpr + 3·fnr is lowest (0) at threshold 0.6... see below.
  const std::vector<double> s1 = {0.9, 0.8, 0.7, 0.65}, s2 = {0.95, 0.3}, s3 = {0.6, 0.5, 0.2};
  p->observe(outcome(6, 4, 2, &s1));
  p->observe(outcome(6, 2, 1, &s2));
  EXPECT_FALSE(p->draft_after(1, 0.39, 0.9));  // 5 labels: no refit yet
  p->observe(outcome(6, 3, 1, &s3));
  // Scores 1: {.95,.9,.8,.6}, 0: {.7,.5,.3}. Thresholds .95 .9 .8 .7 .6 .5 .3: at .6, tpr 1, fpr 1/3,
  // cost 1/3; at .8, tpr 3/4, fpr 0, cost 3/4. The refit threshold is 0.6.
  EXPECT_FALSE(p->draft_after(1, 0.59, 0.9));
  EXPECT_TRUE(p->draft_after(1, 0.6, 0.9));
}

TEST(PolicyRules, PMinDropsOrKeepsTheLowDraftAndAsksForAMinimum) {
  auto drop = make_policy(parse_policy_spec("p-min,n_min=2"));
  const StepPlan plan = drop->plan({0, 1, 16});
  EXPECT_EQ(plan.depth, 16);
  EXPECT_EQ(plan.min_drafts, 2);
  // The check reads the drafter's top-1 probability, before the draft is taken (dropped) ...
  EXPECT_FALSE(drop->draft_at(3, 0.74));
  EXPECT_TRUE(drop->draft_at(3, 0.75));
  EXPECT_TRUE(drop->draft_after(3, 0.1, 0.74));
  // ... or after it (kept), as older llama.cpp releases did.
  auto keep = make_policy(parse_policy_spec("p-min,keep_low=1"));
  EXPECT_TRUE(keep->draft_at(3, 0.74));
  EXPECT_FALSE(keep->draft_after(3, 0.74, 0.74));
  EXPECT_TRUE(keep->draft_after(3, 0.1, 0.75));
}

TEST(PolicyRules, SpecDecPlusPlusStopsOnThePredictedRejectionChance) {
  // No observations: beta is the confidence itself. h 0.5: after drafts with confidence .9, .8,
  // the product over the drafts before the newest is .9 (risk .1) then .72 (risk .28), then
  // .72·.6 = .432 (risk .568 > .5): stop after the fourth draft.
  auto p = make_policy(parse_policy_spec("specdec++,h=0.5,min=1"));
  p->plan({0, 1, 10});
  EXPECT_TRUE(p->draft_after(1, 0.9, 1.0));  // nothing before it: risk 0
  EXPECT_TRUE(p->draft_after(2, 0.8, 1.0));
  EXPECT_TRUE(p->draft_after(3, 0.6, 1.0));
  EXPECT_FALSE(p->draft_after(4, 0.9, 1.0));
  p->plan({0, 1, 10});  // a new step starts a new product
  EXPECT_TRUE(p->draft_after(1, 0.1, 1.0));
  EXPECT_FALSE(p->draft_after(2, 0.1, 1.0));
  auto bounded = make_policy(parse_policy_spec("specdec++,h=0.0,min=3,max=4"));
  bounded->plan({0, 1, 10});
  EXPECT_TRUE(bounded->draft_after(2, 0.1, 1.0));  // below min
  EXPECT_FALSE(bounded->draft_after(3, 0.1, 1.0));
}

TEST(PolicyRules, SglangEmaMovesBetweenTiersWithHysteresisAndProbesBackOn) {
  // tiers 1/3/7, alpha 0.2, warmup 10, interval 5 (defaults), starting at 3 with EMA 2.
  auto p = make_policy(parse_policy_spec("sglang-ema"));
  const StepContext c{0, 1, 8};
  EXPECT_EQ(p->plan(c).depth, 3);
  for (int i = 0; i < 14; ++i) p->observe(outcome(3, 3, 0));  // EMA 2·0.8^14 = 0.088 but no recompute yet
  EXPECT_EQ(p->plan(c).depth, 3);
  p->observe(outcome(3, 3, 0));  // step 15: recompute; 0.07 <= 1 − 0.5 − 0.25
  EXPECT_EQ(p->plan(c).depth, 1);
  for (int i = 0; i < 5; ++i) p->observe(outcome(1, 1, 1));  // EMA 1 − 0.93·0.8^5 = 0.70 > 0.5: up
  EXPECT_EQ(p->plan(c).depth, 3);

  auto off = make_policy(parse_policy_spec("sglang-ema,tiers=0/2,initial=0,warmup=0,interval=1"));
  EXPECT_EQ(off->plan(c).depth, 0);
  off->observe(outcome(0, 0, 0));  // a recompute at tier 0 probes the next tier up
  EXPECT_EQ(off->plan(c).depth, 2);
}

TEST(PolicyRules, TrtllmSchedulesByBatchSizeAndGatesOnAcceptance) {
  auto p = make_policy(parse_policy_spec("trtllm,schedule=4:4/8:2/32:1"));
  EXPECT_EQ(p->plan({0, 1, 8}).depth, 4);
  EXPECT_EQ(p->plan({0, 4, 8}).depth, 4);
  EXPECT_EQ(p->plan({0, 5, 8}).depth, 2);
  EXPECT_EQ(p->plan({0, 32, 8}).depth, 1);
  EXPECT_EQ(p->plan({0, 33, 8}).depth, 0);  // past the last transition point
  EXPECT_EQ(p->plan({0, 1, 3}).depth, 3);   // capped at --k

  auto gate = make_policy(parse_policy_spec("trtllm,window=3,threshold=0.5"));
  const StepContext c{0, 1, 4};
  gate->observe(outcome(4, 4, 0));
  gate->observe(outcome(4, 4, 1));
  EXPECT_EQ(gate->plan(c).depth, 4);  // fewer than `window` steps: no decision
  gate->observe(outcome(4, 4, 2));    // mean rate (0 + .25 + .5)/3 = .25 < .5: off for good
  for (int i = 0; i < 50; ++i) EXPECT_EQ(gate->plan(c).depth, 0);

  auto probe = make_policy(parse_policy_spec("trtllm,window=1,threshold=0.5,probe=2"));
  probe->observe(outcome(4, 4, 0));
  EXPECT_EQ(probe->plan(c).depth, 0);
  EXPECT_EQ(probe->plan(c).depth, 0);
  EXPECT_EQ(probe->plan(c).depth, 4);  // back on after 2 plain steps
}

TEST(PolicyRules, VllmBatchCarriesRangesForwardAndControlsAcceptanceLength) {
  auto p = make_policy(parse_policy_spec("vllm-batch,schedule=1:3/32:2/256:0"));
  EXPECT_EQ(p->plan({0, 1, 8}).depth, 3);
  EXPECT_EQ(p->plan({0, 31, 8}).depth, 3);
  EXPECT_EQ(p->plan({0, 32, 8}).depth, 2);
  EXPECT_EQ(p->plan({0, 300, 8}).depth, 0);

  auto w = make_policy(parse_policy_spec("vllm-batch,window=2"));
  const StepContext c{0, 1, 6};
  EXPECT_EQ(w->plan(c).depth, 6);  // starts at the maximum
  w->observe(outcome(6, 6, 1));
  w->observe(outcome(6, 6, 0));  // mean .5: target floor(2.0) = 2 < 6: drop at once
  EXPECT_EQ(w->plan(c).depth, 2);
  w->observe(outcome(2, 2, 2));
  w->observe(outcome(2, 2, 2));  // mean 2: target 3: rise by one
  EXPECT_EQ(w->plan(c).depth, 3);
}

TEST(PolicyRules, GoodputPicksTheDepthWithTheMostTokensPerCost) {
  // Rates all 0.5 and c_draft 0.1, c_verify 0: K=1 gives 1.5/1.1 = 1.36, K=2 1.75/1.2 = 1.46,
  // K=3 1.875/1.3 = 1.44: K = 2.
  auto p = make_policy(parse_policy_spec("goodput,c_draft=0.1,c_verify=0,prior=0.5"));
  EXPECT_EQ(p->plan({0, 1, 6}).depth, 2);
  auto never = make_policy(parse_policy_spec("goodput,prior=0"));
  EXPECT_EQ(never->plan({0, 1, 6}).depth, 0);  // nothing is ever accepted: plain decoding
  auto always = make_policy(parse_policy_spec("goodput,prior=1,c_draft=0.01"));
  EXPECT_EQ(always->plan({0, 1, 6}).depth, 6);
  // Observed rejections at depth 1 pull the estimate down until plain decoding wins.
  auto learn = make_policy(parse_policy_spec("goodput,prior=0.9,alpha=0.5"));
  for (int i = 0; i < 10; ++i) learn->observe(outcome(learn->plan({0, 1, 6}).depth, 6, 0));
  EXPECT_EQ(learn->plan({0, 1, 6}).depth, 0);
}

TEST(PolicyRules, ScheduleCyclesThroughItsDepths) {
  auto p = make_policy(parse_policy_spec("schedule,depths=2/0/5"));
  std::vector<int> got;
  for (int step = 0; step < 6; ++step) got.push_back(p->plan({step, 1, 4}).depth);
  EXPECT_EQ(got, (std::vector<int>{2, 0, 4, 2, 0, 4}));
}

// ---- Lossless under every policy -------------------------------------------------------------

// Every policy row and every method row on every backend built here, greedy and coupled: each
// (backend, sampling) pass pairs policy i with method (i + offset) mod M, the offset moving per pass,
// so each policy meets several methods and each method every kind of policy (the full cross product
// runs too long for the suite; the pairing is fixed, so a failure names its pair).
TEST(PolicyDecoding, EveryPolicyEqualsSequentialForEveryMethodOnEveryBackend) {
  std::vector<MethodSpec> methods;
  for (MethodSpec spec : method_rows()) {
    if (spec.name == "sequential") continue;
    spec.k = 5;
    methods.push_back(spec);
  }
  const std::vector<PolicySpec> policies = policy_rows();
  std::size_t offset = 0;
  for (const std::string& backend : backends_built_here()) {
    const LoadedModel& target = bundled_target(backend);
    for (const char* sampling : {"greedy", "coupled"}) {
      const DecodeArgs seq = args_for(MethodSpec{}, PolicySpec{}, backend, sampling);
      const std::vector<int32_t> expected =
          run_method(seq, target, kPrompt, sampling_params(seq), generation_options(seq)).tokens;
      const std::size_t pairs = std::max(policies.size(), methods.size());
      for (std::size_t i = 0; i < pairs; ++i) {
        const PolicySpec& policy = policies[i % policies.size()];
        const MethodSpec& spec = methods[(i + offset) % methods.size()];
        const DecodeArgs a = args_for(spec, policy, backend, sampling);
        const GenerationResult r = run_method(a, target, kPrompt, sampling_params(a), generation_options(a));
        EXPECT_EQ(r.tokens, expected) << spec.label() << " under " << policy.label() << " on " << backend << ", "
                                      << sampling << " (seed 7)";
        int steps = 0;
        for (int n : r.stats.draft_depth_per_step) steps += n;
        EXPECT_EQ(steps, r.stats.steps) << spec.label() << " under " << policy.label();
      }
      offset += 3;
    }
  }
}

TEST(PolicyDecoding, PoliciesChangeTheDepthTheyPromise) {
  const LoadedModel& target = bundled_target("reference");
  MethodSpec chain;
  chain.name = "eagle3";
  chain.k = 5;
  auto run = [&](const std::string& policy, const MethodSpec& spec) {
    const DecodeArgs a = args_for(spec, parse_policy_spec(policy), "reference", "greedy");
    return run_method(a, target, kPrompt, sampling_params(a), generation_options(a)).stats;
  };
  const GenerationStats fixed = run("fixed", chain);
  ASSERT_EQ(fixed.draft_depth_per_step.size(), 6u);
  EXPECT_EQ(fixed.draft_depth_per_step[5], fixed.steps);
  // depths 3/0/1/0/2: plain steps are 2 of every 5, and drafts never pass 3.
  const GenerationStats sched = run("schedule,depths=3/0/1/0/2", chain);
  ASSERT_LE(sched.draft_depth_per_step.size(), 4u);
  EXPECT_EQ(sched.draft_depth_per_step[0], (sched.steps / 5) * 2 + (sched.steps % 5 >= 2 ? 1 : 0) + (sched.steps % 5 >= 4 ? 1 : 0));
  EXPECT_LT(sched.drafter_forwards, fixed.drafter_forwards);
  // A depth budget cuts trees to their shallower levels.
  MethodSpec tree = chain;
  tree.tree = "[[0],[1],[0,0],[0,1],[1,0],[0,0,0]]";
  const GenerationStats cut = run("schedule,depths=2", tree);
  EXPECT_EQ(cut.draft_depth_per_step.size(), 3u);
  MethodSpec dynamic = chain;
  dynamic.tree = "dynamic";
  dynamic.depth = 4, dynamic.tree_top_k = 2, dynamic.total_tokens = 10;
  EXPECT_LE(run("schedule,depths=2", dynamic).draft_depth_per_step.size(), 3u);
}

TEST(PolicyDecoding, BatchedSequencesUnderAPolicyDecodeAsAlone) {
  const LoadedModel& target = bundled_target("reference");
  MethodSpec spec;
  spec.name = "draft";
  spec.k = 4;
  const PolicySpec policy = parse_policy_spec("trtllm,schedule=2:4/3:1,window=2,threshold=0.6,probe=1");
  const DecodeArgs a = args_for(spec, policy, "reference", "greedy");
  const auto drafter = load_drafter(a, target);
  std::vector<BatchRequest> requests;
  for (uint32_t i = 0; i < 4; ++i) {
    BatchRequest r;
    r.prompt = std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 5 + 3 * i);
    r.max_new_tokens = 16;
    r.stop_at_eos = false;
    r.sequence = i;
    requests.push_back(r);
  }
  BatchOptions o;
  o.max_in_flight = 3;
  o.make_policy = [&](std::size_t) { return make_policy(policy); };
  const BatchResult batched = decode_batched(
      target.forward_model(), requests,
      [&](std::size_t, ForwardGather& g) { return make_proposer(a, target, &*drafter, 256, &g.wrap(*drafter->draft_lm())); },
      o);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::vector<int32_t> alone =
        decode_sequential(target.forward_model(), requests[i].prompt, SamplingParams{}, testing::max_new_tokens(16)).tokens;
    EXPECT_EQ(batched.requests[i].generation.tokens, alone) << "request " << i;
  }
  // Three in flight: the schedule gives depth 1 (batch 3), so no step drafted deeper.
  EXPECT_LE(batched.requests[0].generation.stats.draft_depth_per_step.size(), 5u);
  EXPECT_GT(batched.requests[0].generation.stats.draft_depth_per_step.at(1), 0);
}

// Sampled decoding keeps the target's distribution when the depth changes between steps (a
// scripted schedule through 0) and within a step (a confidence stop): the joint law of three
// tokens against exact enumeration, chi-square at alpha 1e-3.
TEST(PolicyDecoding, SampledDecodingKeepsTheTargetDistributionUnderChangingDepths) {
  const testing::SampledLoopSetup setup;
  const ModelConfig& cfg = setup.config;
  const Transformer& target = setup.target;
  const Transformer& drafter = setup.drafter;
  const std::vector<int32_t>& prompt = setup.prompt;
  SamplingParams s = setup.sampling;
  const auto expected = testing::three_token_distribution(target, prompt, s);
  for (const char* text : {"schedule,depths=2/0/1", "p-min,p_min=0.5", "p-min,p_min=0.5,keep_low=1",
                           "hf-confidence,threshold=0.35", "specdec++,h=0.2,min=1"}) {
    const PolicySpec spec = parse_policy_spec(text);
    const int N = 6000;
    std::map<std::vector<int32_t>, int> counts;
    for (int i = 1; i <= N; ++i) {
      s.seed = static_cast<uint64_t>(i);
      DraftModelProposer proposer(drafter, cfg, 2, 16);
      RejectionAcceptor acceptor;
      auto policy = make_policy(spec);
      SpeculationControl control;
      control.policy = policy.get();
      counts[decode_speculative(target, proposer, acceptor, prompt, s, testing::max_new_tokens(3), control).tokens]++;
    }
    const testing::ChiSquare chi = testing::chi_square_test(expected, counts, N);
    EXPECT_LT(chi.statistic, chi.critical) << text << ": chi-square " << chi.statistic << " with "
                                           << chi.degrees_of_freedom << " degrees of freedom, N " << N << ", seeds 1.." << N;
    EXPECT_GT(chi.bins, 10) << text;
  }
}

// ---- Drafter fallback ------------------------------------------------------------------------

// A drafter that fails at step `fail_at` (1-based) in the way `kind` says, and drafts like `inner`
// otherwise.
class FaultyProposer final : public Proposer {
 public:
  enum class Kind { throws, nan_probs, slow, too_many_nodes };
  FaultyProposer(Proposer& inner, Kind kind, int fail_at) : inner_(inner), kind_(kind), fail_at_(fail_at) {}
  std::string name() const override { return "faulty-" + inner_.name(); }
  bool wants_final_hidden() const override { return inner_.wants_final_hidden(); }
  std::vector<int> wanted_aux_layers() const override { return inner_.wanted_aux_layers(); }
  int max_nodes() const override { return inner_.max_nodes(); }
  Proposal propose(const DraftContext& ctx) override {
    ++calls;
    Proposal p = inner_.propose(ctx);
    if (calls != fail_at_) return p;
    switch (kind_) {
      case Kind::throws: throw Error("injected drafter fault");
      case Kind::nan_probs:
        p.draft_probs.assign(static_cast<std::size_t>(p.tree.size()) + 1, std::vector<double>(4, std::nan("")));
        break;
      case Kind::slow: std::this_thread::sleep_for(std::chrono::milliseconds(30)); break;
      case Kind::too_many_nodes:
        for (int i = 0; i <= max_nodes(); ++i) {
          p.tree.tokens.push_back(1);
          p.tree.parents.push_back(-1);
        }
        break;
    }
    return p;
  }
  int calls = 0;

 private:
  Proposer& inner_;
  Kind kind_;
  int fail_at_;
};

TEST(DrafterFallback, AFailingDrafterIsSwitchedOffAndTheOutputIsUnchanged) {
  for (const auto& [cfg_name, cfg] : testing::speculative_targets()) {
    const Transformer target = testing::make_model(cfg, testing::kExactnessModelSeed);
    const Transformer draft = testing::perturbed_copy(target, 0.03f, 999);
    const auto& prompt = testing::kExactnessPrompts[0];
    for (const char* mode : {"greedy", "coupled", "sample"}) {
      SamplingParams s;
      s.mode = std::string(mode) == "greedy" ? SamplingParams::Mode::greedy
               : std::string(mode) == "coupled" ? SamplingParams::Mode::coupled
                                                : SamplingParams::Mode::sample;
      s.seed = 11;
      const auto acceptor = default_acceptor(s);
      DraftModelProposer clean(draft, target.config(), 3, 256);
      const GenerationResult reference = decode_speculative(target, clean, *acceptor, prompt, s, testing::max_new_tokens(20));
      for (auto kind : {FaultyProposer::Kind::throws, FaultyProposer::Kind::nan_probs, FaultyProposer::Kind::slow,
                        FaultyProposer::Kind::too_many_nodes}) {
        const std::string what = std::string(cfg_name) + ", " + mode + ", fault " + std::to_string(static_cast<int>(kind)) + " (seed 11)";
        DraftModelProposer inner(draft, target.config(), 3, 256);
        FaultyProposer faulty(inner, kind, 2);
        SpeculationControl control;
        if (kind == FaultyProposer::Kind::slow) control.draft_budget_ns = 20'000'000;  // the slow proposal takes 30 ms
        const GenerationResult r = decode_speculative(target, faulty, *acceptor, prompt, s, testing::max_new_tokens(20), control);
        if (s.mode != SamplingParams::Mode::sample) {
          const auto seq = decode_sequential(target, prompt, s, testing::max_new_tokens(20)).tokens;
          EXPECT_EQ(r.tokens, seq) << what;
        }
        ASSERT_EQ(r.fallbacks.size(), 1u) << what;
        EXPECT_EQ(r.fallbacks[0].step, 2) << what;
        EXPECT_EQ(r.fallbacks[0].drafter, "faulty-draft") << what;
        EXPECT_EQ(r.fallbacks[0].next, "plain decoding") << what;
        EXPECT_EQ(faulty.calls, 2) << what << ": a switched-off drafter is not asked again";
        const std::string reason = r.fallbacks[0].reason;
        switch (kind) {
          case FaultyProposer::Kind::throws: EXPECT_EQ(reason, "failed: injected drafter fault") << what; break;
          case FaultyProposer::Kind::nan_probs: EXPECT_NE(reason.find("non-finite probability"), std::string::npos) << reason; break;
          case FaultyProposer::Kind::slow: EXPECT_NE(reason.find("over the budget of 20.0 ms"), std::string::npos) << reason; break;
          case FaultyProposer::Kind::too_many_nodes: EXPECT_NE(reason.find("more than its declared maximum"), std::string::npos) << reason; break;
        }
        // Every step after the switch is plain (the slow proposal was still verified).
        ASSERT_FALSE(r.stats.draft_depth_per_step.empty()) << what;
        const int drafting_steps = kind == FaultyProposer::Kind::slow ? 2 : 1;
        EXPECT_EQ(r.stats.draft_depth_per_step[0], r.stats.steps - drafting_steps) << what;
      }
    }
  }
}

TEST(DrafterFallback, TheNextConfiguredDrafterTakesOverInTheSameStep) {
  const auto [cfg_name, cfg] = testing::speculative_targets()[0];
  const Transformer target = testing::make_model(cfg, testing::kExactnessModelSeed);
  const Transformer draft = testing::perturbed_copy(target, 0.03f, 999);
  const auto& prompt = testing::kExactnessPrompts[1];
  const SamplingParams greedy;
  const auto acceptor = default_acceptor(greedy);
  DraftModelProposer inner(draft, target.config(), 3, 256);
  FaultyProposer faulty(inner, FaultyProposer::Kind::throws, 1);
  DraftModelProposer backup(target, target.config(), 2, 256);  // self-drafting: accepts everything
  SpeculationControl control;
  control.fallbacks = {&backup};
  const GenerationResult r = decode_speculative(target, faulty, *acceptor, prompt, greedy, testing::max_new_tokens(21), control);
  EXPECT_EQ(r.tokens, decode_sequential(target, prompt, greedy, testing::max_new_tokens(21)).tokens);
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_EQ(r.fallbacks[0].step, 1);
  EXPECT_EQ(r.fallbacks[0].next, "draft");
  EXPECT_EQ(r.stats.draft_depth_per_step.at(0), 0);  // no step went plain: the backup drafted step 1
  EXPECT_EQ(r.stats.steps, 7);                         // 20 tokens after the first, 3 per step
}

TEST(DrafterFallback, ADrafterWithNonFiniteLogitsFallsBack) {
  const auto [cfg_name, cfg] = testing::speculative_targets()[0];
  const Transformer target = testing::make_model(cfg, testing::kExactnessModelSeed);
  // A draft model whose final norm is all NaN: every draft logit is NaN.
  LlamaWeights w = target.weights();
  w.norm.setConstant(std::numeric_limits<float>::quiet_NaN());
  const Transformer nan_draft(target.config(), w);
  DraftModelProposer proposer(nan_draft, target.config(), 3, 256);
  const SamplingParams greedy;
  const auto acceptor = default_acceptor(greedy);
  const auto& prompt = testing::kExactnessPrompts[0];
  const GenerationResult r = decode_speculative(target, proposer, *acceptor, prompt, greedy, testing::max_new_tokens(10), SpeculationControl{});
  EXPECT_EQ(r.tokens, decode_sequential(target, prompt, greedy, testing::max_new_tokens(10)).tokens);
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_NE(r.fallbacks[0].reason.find("non-finite logit"), std::string::npos) << r.fallbacks[0].reason;
}

}  // namespace
}  // namespace specdec
