// Predictions: Leviathan's speedup as a special case, limits, per-method draft cost structure,
// measured ALs, capacity planning and scenario errors.
#include <gtest/gtest.h>

#include <cmath>

#include "simulator/acceptance.hpp"
#include "simulator/capacity.hpp"
#include "simulator/predictor.hpp"
#include "simulator/tree_shape.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;
using test::scenario;

HardwareSpec no_overheads(HardwareSpec h) {
  h.kernel_floor_s = h.comm_latency_s = 0;
  return h;
}

// An engine without CUDA graphs launches every kernel from the host: a small draft model's
// forward costs its launches, not its bytes (a 68M model is milliseconds in eager PyTorch, tens of
// microseconds replayed from a CUDA graph).
TEST(Predictor, EagerEnginesPayForEveryKernelLaunch) {
  SpecLibrary lib;
  Scenario s = scenario("vicuna-7b", "a100-80gb-sxm", "draft-vicuna-68m", 4, 0.7);
  s.engine = lib.engine("vllm");
  const StepCost graphs = decode_step_cost(s, 128, 2.0);
  s.engine = lib.engine("hf-eager");
  const StepCost eager = decode_step_cost(s, 128, 2.0);
  ASSERT_EQ(eager.draft_forwards, 4);
  const double floor = s.engine.launch_floor_s();
  ASSERT_GT(floor, 0);
  int launch_bound = 0, ops = 0;
  for (const auto& c : eager.ops) {
    if (c.op.collective || std::string(c.bound) == "host") continue;
    EXPECT_GE(c.time_s, floor) << c.op.phase << " " << c.op.name;
    if (std::string(c.op.phase) == "draft") {
      ++ops;
      launch_bound += std::string(c.bound) == "launch";
    }
  }
  EXPECT_EQ(launch_bound, ops) << "every operator of the 68M draft model is launch bound";
  EXPECT_GT(eager.draft_s / 4, 1e-3) << "per draft forward";
  EXPECT_LT(graphs.draft_s / 4, 0.2e-3) << "per draft forward with CUDA graphs";
  EXPECT_GT(eager.verify_s, graphs.verify_s);
}

// A dynamic (EAGLE-2) tree is drafted beam-style: DEPTH drafter steps, each after the first over
// the TOP_K best frontier nodes, whatever the reranked tree keeps; with TOP_K = 1 that is a chain.
TEST(Predictor, DynamicTreesDraftBeamStyle) {
  SpecLibrary lib;
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 0, 0.8);
  s.engine = lib.engine("sglang");
  s.plan.tree = best_tree(*s.acceptance, 12, 6, 4);
  const StepCost kept = decode_step_cost(s, 128, 3.0);  // one step per depth of the kept tree
  s.plan.dynamic_depth = 6;
  s.plan.dynamic_top_k = 4;
  const StepCost beam = decode_step_cost(s, 128, 3.0);
  EXPECT_EQ(beam.draft_forwards, 6);
  EXPECT_LE(kept.draft_forwards, 6);
  EXPECT_GT(beam.draft_s, kept.draft_s) << "the beam expands 4 nodes a step; the kept tree has fewer per depth";
  EXPECT_DOUBLE_EQ(beam.verify_s, kept.verify_s) << "verification is of the kept tree either way";
  // Top-k 1: the tree is a chain of 6, and so is its drafting.
  s.plan.tree = best_tree(*s.acceptance, 7, 6, 1);
  s.plan.dynamic_top_k = 1;
  Scenario chain = s;
  chain.plan = DraftPlan{};
  chain.plan.method = Method::eagle3;
  chain.plan.k = 6;
  EXPECT_NEAR(decode_step_cost(s, 128, 3.0).draft_s, decode_step_cost(chain, 128, 3.0).draft_s, 1e-15);
}

// Engines refuse what they cannot run rather than pricing it.
TEST(Predictor, EnginesRefuseMethodsAndTreesTheyLack) {
  SpecLibrary lib;
  Scenario s = scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 4, 0.7);
  s.plan.tree = builtin_tree("mc_sim_7b_63");
  s.engine = lib.engine("vllm");
  EXPECT_NE(error_of([&] { predict(s); }).find("engine 'vllm' verifies draft chains only, not trees"), std::string::npos);
  s.engine = lib.engine("sglang");
  EXPECT_NO_THROW(predict(s));
  s.engine = lib.engine("transformers-neuronx");
  EXPECT_NE(error_of([&] { predict(s); }).find("engine 'transformers-neuronx' does not run method eagle (it runs: draft)"),
            std::string::npos);
  Scenario seq = scenario("vicuna-7b", "a100-80gb-sxm", "", 0, 0);
  seq.engine = lib.engine("transformers-neuronx");
  EXPECT_NO_THROW(predict(seq)) << "every engine decodes sequentially";
}

// With no overheads and a flat verification (batch 1, memory bound), the simulator reduces to
// Leviathan et al.: speedup = (1 − α^{K+1}) / ((1 − α)(cK + 1)), c = T_draft / T_target.
TEST(Predictor, LeviathanIsASpecialCase) {
  for (double alpha : {0.5, 0.7, 0.9})
    for (int k : {1, 3, 5, 8}) {
      Scenario s = scenario("llama-2-70b", "h100-sxm", "draft-llama-2-7b", k, alpha);
      s.hardware = no_overheads(s.hardware);
      s.engine = EngineSpec{};  // "ideal": no host overheads
      const Prediction p = predict(s);
      Scenario draft_only;
      draft_only.target = s.drafter->shape;
      draft_only.hardware = s.hardware;
      draft_only.workload = s.workload;
      const double c = predict(draft_only).tpot_s / p.sequential_tpot_s;
      EXPECT_NEAR(p.speedup / leviathan_speedup(alpha, k, c), 1.0, 0.01) << "alpha " << alpha << " K " << k;
      EXPECT_NEAR(p.tokens_per_step, leviathan_expected_tokens(alpha, k), 1e-12);
    }
}

TEST(Predictor, LimitsInAlpha) {
  for (const char* d : {"eagle3-llama3.1-8b", "eagle1-llama3-8b", "peagle-llama3.1-8b"}) {
    Scenario s = scenario("llama-3.1-8b", "h100-sxm", d, 4, 0.0);
    const Prediction none = predict(s);
    EXPECT_LT(none.speedup, 1.0) << d << ": nothing accepted costs the drafting";
    EXPECT_DOUBLE_EQ(none.tokens_per_step, 1.0);
    s.acceptance = iid_acceptance(1.0);
    const Prediction all = predict(s);
    EXPECT_DOUBLE_EQ(all.tokens_per_step, 5.0);
    EXPECT_GT(all.speedup, 2.0) << d;
    double prev = 0;
    for (double a = 0.0; a <= 1.0001; a += 0.1) {
      s.acceptance = iid_acceptance(std::min(a, 1.0));
      const double sp = predict(s).speedup;
      EXPECT_GT(sp, prev) << d << " alpha " << a;
      prev = sp;
    }
  }
}

TEST(Predictor, DraftCostStructurePerMethod) {
  auto draft_ms = [](const char* d, int k) {
    Scenario s = scenario("llama-3.1-8b", "h100-sxm", d, k, 0.8);
    return predict(s).step.draft_s;
  };
  // EAGLE / EAGLE-3: K sequential drafter steps, so drafting grows linearly with K.
  const double e3_1 = draft_ms("eagle3-llama3.1-8b", 1), e3_8 = draft_ms("eagle3-llama3.1-8b", 8);
  EXPECT_GT(e3_8 / e3_1, 5.0);
  // P-EAGLE: one pass over K positions, nearly flat in K at batch 1.
  const double p1 = draft_ms("peagle-llama3.1-8b", 1), p8 = draft_ms("peagle-llama3.1-8b", 8);
  EXPECT_LT(p8 / p1, 1.2);
  // EAGLE-1's step evaluates the full 128k-vocab LM head; EAGLE-3's a 32k draft vocab.
  EXPECT_GT(draft_ms("eagle1-llama3-8b", 4), draft_ms("eagle3-llama3.1-8b", 4));
  // Drafter forwards are counted as the method implies.
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 6, 0.8);
  EXPECT_EQ(predict(s).step.draft_forwards, 6);
  s = scenario("llama-3.1-8b", "h100-sxm", "peagle-llama3.1-8b", 6, 0.8);
  EXPECT_EQ(predict(s).step.draft_forwards, 1);
  s = scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 0, 0.8);
  s.engine = SpecLibrary().engine("sglang");  // one that verifies trees
  s.plan.tree = builtin_tree("mc_sim_7b_63");
  s.acceptance = tree_acceptance({{0.7, 0.2, 0.1, 0.1}, {0.7, 0.2, 0.1}, {0.7, 0.2, 0.1}, {0.7, 0.2}, {0.7, 0.2}});
  const Prediction tree = predict(s);
  EXPECT_EQ(tree.step.draft_forwards, 5);
  EXPECT_DOUBLE_EQ(tree.step.verify_tokens, 26.0);
  EXPECT_EQ(tree.tree_nodes, 25);
}

TEST(Predictor, ScenarioErrors) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 0, 0.8);
  EXPECT_NE(error_of([&] { predict(s); }).find("K must be >= 1"), std::string::npos);
  s.plan.k = 3;
  s.acceptance = nullptr;
  EXPECT_NE(error_of([&] { predict(s); }).find("needs an acceptance model"), std::string::npos);
  s = scenario("gpt-oss-120b", "h200", "peagle-gpt-oss-120b", 9, 0.8);
  EXPECT_NE(error_of([&] { predict(s); }).find("trained for up to 8"), std::string::npos);
  s.plan.k = 8;
  EXPECT_NO_THROW(predict(s));
  s = scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  s.workload.batch = 0;
  EXPECT_NE(error_of([&] { predict(s); }).find("batch size must be >= 1"), std::string::npos);
  s.workload.batch = 1;
  s.hardware.interconnect_bandwidth_bytes_per_s = 0;
  s.workload.tp = 2;
  EXPECT_NE(error_of([&] { predict(s); }).find("has no interconnect"), std::string::npos);
  s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 3, 0.8);
  s.plan.method = Method::eagle1;
  EXPECT_NE(error_of([&] { predict(s); }).find("is a eagle3 drafter"), std::string::npos);
  // A tree for a method whose registry entry drafts chains only.
  s = scenario("llama-2-70b", "h100-sxm", "draft-llama-2-7b", 0, 0.8);
  s.plan.tree = builtin_tree("mc_sim_7b_63");
  EXPECT_NE(error_of([&] { predict(s); }).find("method draft drafts a chain"), std::string::npos) << error_of([&] { predict(s); });
  s.plan.tree.reset();
  s.plan.k = 4;
  EXPECT_NO_THROW(predict(s));
}

// A measured AL (a tree's, from a recorded run) replaces the acceptance model's AL and nothing
// else: the tree is drafted and verified as before; it must lie in [1, depth + 1].
TEST(Predictor, MeasuredAlForATreeOrChain) {
  Scenario s = scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 0, 0.8);
  s.engine = SpecLibrary().engine("sglang");  // one that verifies trees
  s.plan.tree = builtin_tree("mc_sim_7b_63");
  const Prediction modelled = predict(s);
  s.acceptance = nullptr;
  s.measured_tokens_per_step = 3.6;
  const Prediction measured = predict(s);
  EXPECT_DOUBLE_EQ(measured.tokens_per_step, 3.6);
  EXPECT_EQ(measured.tree_nodes, 25);
  EXPECT_DOUBLE_EQ(measured.step.verify_tokens, modelled.step.verify_tokens);
  EXPECT_EQ(measured.step.draft_forwards, modelled.step.draft_forwards);
  EXPECT_DOUBLE_EQ(measured.tpot_s, measured.step.total_s() / 3.6);
  s.measured_tokens_per_step = 6.5;
  EXPECT_NE(error_of([&] { predict(s); }).find("measured AL 6.5 is outside [1, 6]"), std::string::npos);
  s.measured_tokens_per_step = 0.9;
  EXPECT_NE(error_of([&] { predict(s); }).find("outside [1, 6]"), std::string::npos);
  s.plan.tree.reset();
  s.plan.k = 4;
  s.measured_tokens_per_step = 3.08;
  EXPECT_DOUBLE_EQ(predict(s).tokens_per_step, 3.08);
  s.measured_tokens_per_step = 5.5;
  EXPECT_NE(error_of([&] { predict(s); }).find("chain (K = 4)"), std::string::npos);
}

TEST(Predictor, MemoryFit) {
  Scenario s = scenario("llama-2-70b", "h100-sxm", "", 0, 0);
  EXPECT_FALSE(predict(s).fits_memory) << "140 GB of fp16 weights on one 80 GB GPU";
  s.workload.tp = 2;
  EXPECT_TRUE(predict(s).fits_memory);
}

TEST(Capacity, PlanArithmetic) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.workload.prompt_len = 512;
  s.workload.output_len = 256;
  CapacityRequest req;
  req.requests_per_s = 20;
  req.tpot_target_s = 0.02;
  const CapacityPlan plan = plan_capacity(s, req);
  ASSERT_TRUE(plan.feasible);
  EXPECT_LE(plan.load.tpot_s, req.tpot_target_s);
  EXPECT_GT(plan.load.tpot_s, plan.prediction.tpot_s) << "the replicas' prompts lengthen every step";
  // TPOT under load: the decode step stretched by the prompts' share of the replica, over the AL.
  const double rate = 20.0 / plan.replicas;
  Scenario at = s;
  at.workload.batch = plan.batch;  // a prompt's rows join that batch's decode steps
  const double share = rate * prefill_seconds_per_prompt(at);
  EXPECT_NEAR(plan.load.step.prefill_share, share, 1e-12);
  EXPECT_NEAR(plan.load.tpot_s, plan.prediction.tpot_s / (1 - share), 1e-12);
  // TTFT under load: half the step in progress, then the step that carries the prompt's rows.
  const double ttft = 1.5 * plan.load.step.step_s + plan.load.step.prefill_s_per_prompt;
  EXPECT_NEAR(plan.load.ttft_s, ttft, 1e-15);
  EXPECT_GT(plan.load.ttft_s, plan.prediction.ttft_s) << "a prompt beside a full batch waits longer than alone";
  EXPECT_NEAR(plan.load.queue.utilization, rate * (ttft + 256 * plan.load.tpot_s) / plan.batch, 1e-12);
  const double price = s.hardware.price_per_device_hour();
  EXPECT_NEAR(plan.cost_per_million_output_tokens, plan.replicas * price / (20 * 256 * 3600.0) * 1e6, 1e-9);
  for (const auto& o : plan.options) {
    if (!o.feasible) continue;
    EXPECT_GE(o.replicas, plan.replicas) << "batch " << o.batch;
    // The fewest replicas that meet every limit: one fewer breaks those it lists.
    EXPECT_TRUE(check_replicas(o, s, req, o.replicas).ok()) << "batch " << o.batch;
    if (o.replicas > 1) {
      const ReplicaCheck fewer = check_replicas(o, s, req, o.replicas - 1);
      EXPECT_FALSE(fewer.ok()) << "batch " << o.batch;
      EXPECT_EQ(fewer.broken, o.replicas_set_by) << "batch " << o.batch;
    }
    // The rate at utilisation 1, the replica's own prompts included, is where one replica's queue is full.
    CapacityRequest full = req;
    full.requests_per_s = o.requests_per_s_per_replica;
    EXPECT_NEAR(check_replicas(o, s, full, 1).load.queue.utilization, 1.0, 1e-9) << "batch " << o.batch;
    const double idle_ttft = 1.5 * o.prediction.step.total_s() + o.prefill_s_per_prompt;
    EXPECT_LT(o.requests_per_s_per_replica, o.batch / (idle_ttft + 256 * o.prediction.tpot_s)) << "batch " << o.batch;
  }
  req.tpot_target_s = 1e-6;
  EXPECT_FALSE(plan_capacity(s, req).feasible);
  req.requests_per_s = 0;
  EXPECT_NE(error_of([&] { plan_capacity(s, req); }).find("request rate must be > 0"), std::string::npos);
}

// The planner searches TP × K × batch and takes the fewest devices, then the lowest TPOT; the
// sequential baseline is planned the same way; Ks the acceptance cannot answer are skipped.
TEST(Capacity, SearchTakesTheFewestDevicesThenTheLowestTpot) {
  Scenario s = scenario("llama-3.1-70b", "h200", "eagle3-llama3.3-70b", 4, 0.75);
  s.workload.prompt_len = 1024;
  s.workload.output_len = 256;
  CapacityRequest req;
  req.requests_per_s = 20;
  req.tpot_target_s = 0.03;
  const CapacitySearch r = search_capacity(s, req, {1, 2, 4, 8}, {1, 2, 3, 4});
  ASSERT_EQ(r.configs.size(), 16u);
  ASSERT_TRUE(r.best.has_value());
  for (const auto& c : r.configs) {
    if (!c.plan.feasible) continue;
    EXPECT_TRUE(c.plan.devices > r.best->plan.devices ||
                (c.plan.devices == r.best->plan.devices && c.plan.load.tpot_s >= r.best->plan.load.tpot_s))
        << "TP " << c.tp << " K " << c.k << ": " << c.plan.devices << " devices beats the answer's " << r.best->plan.devices;
    Scenario one = s;
    one.workload.tp = c.tp;
    one.plan.k = c.k;
    EXPECT_EQ(plan_capacity(one, req).devices, c.plan.devices) << "TP " << c.tp << " K " << c.k << ": the search is plan_capacity's";
  }
  // 20 prompts/s of 1024 tokens add 67 ms each to a TP-4 replica's steps (1.35 s of every second: one
  // cannot keep up), 110 ms to a TP-2 replica's. Five TP-2 replicas at batch 32 (a K-3 chain) carry
  // the load, each spending 44% of its time on prompts: ten devices, fewer than TP 4 (three replicas,
  // twelve) or TP 8 (two, sixteen).
  EXPECT_EQ(r.best->plan.devices, 10);
  EXPECT_EQ(r.best->tp, 2);
  EXPECT_EQ(r.best->k, 3);
  EXPECT_EQ(r.best->plan.batch, 32);
  EXPECT_NEAR(r.best->plan.load.step.prefill_share, 0.44, 0.01);
  ASSERT_TRUE(r.sequential.has_value());
  EXPECT_EQ(r.sequential->k, 0);
  EXPECT_EQ(r.sequential->plan.devices, 12) << "sequential decoding: three TP-4 replicas";
  EXPECT_FALSE(r.configs.front().plan.feasible) << "TP 1 does not fit";
  // Allowed 0.96, four TP-2 replicas do: each carries 5 requests/s, whose prompts take 55% of the
  // replica, rho 0.883 (0.9603, just above 0.96, when a prompt was priced as a forward of its own
  // rather than as rows in the decode step's).
  CapacityRequest loose = req;
  loose.max_utilization = 0.96;
  const CapacitySearch l = search_capacity(s, loose, {1, 2, 4, 8}, {1, 2, 3, 4});
  ASSERT_TRUE(l.best.has_value());
  EXPECT_EQ(l.best->tp, 2);
  EXPECT_EQ(l.best->plan.devices, 8);
  EXPECT_EQ(l.best->plan.replicas, 4);
  const ReplicaCheck four = check_replicas(l.best->plan.options[5], [&] {
    Scenario one = s;
    one.workload.tp = 2;
    one.plan.k = l.best->k;
    one.workload.batch = 32;
    return one;
  }(), loose, 4);
  ASSERT_EQ(l.best->plan.options[5].batch, 32);
  EXPECT_LE(four.load.queue.utilization, loose.max_utilization) << "four replicas within the utilisation allowed";
  EXPECT_NEAR(four.load.queue.utilization, 0.8834, 0.0001) << "four replicas' utilisation";
  EXPECT_NEAR(four.load.queue.utilization, l.best->plan.load.queue.utilization, 1e-12);

  // A table answering K <= 2 only: K = 3 and 4 are listed as skipped, never extrapolated.
  s.acceptance = table_acceptance({{1, 1.7}, {2, 2.3}});
  const CapacitySearch t = search_capacity(s, req, {2}, {1, 2, 3, 4});
  EXPECT_EQ(t.configs.size(), 2u);
  ASSERT_EQ(t.skipped.size(), 2u);
  EXPECT_EQ(t.skipped[0].setting, "K = 3");
  EXPECT_NE(error_of([&] { search_capacity(s, req, {2}, {5}); }).find("none of the Ks asked for can be evaluated"), std::string::npos);
  EXPECT_NE(error_of([&] { search_capacity(s, req, {}, {1}); }).find("no tensor-parallel degree"), std::string::npos);
  // A scenario no TP can run (the engine does not run the method): the reason, not an empty answer.
  Scenario neuron = s;
  neuron.engine = SpecLibrary().engine("transformers-neuronx");
  EXPECT_NE(error_of([&] { search_capacity(neuron, req, {2}, {2}); }).find("no configuration can be planned: TP 2: "),
            std::string::npos);
  req.requests_per_s = std::nan("");
  EXPECT_NE(error_of([&] { search_capacity(s, req, {2}, {1}); }).find("request rate must be > 0"), std::string::npos);
}

// EAGLE-2 trees are searched under the load as K is: every (TP, tree) planned as plan_capacity plans
// that tree, the answer the cheapest of them (not batch 1's fastest tree), a tree the method cannot
// draft skipped with its reason.
TEST(Capacity, TreeSearchPlansEveryTreeUnderTheLoad) {
  Scenario s = scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 4, 0.7);
  s.engine = SpecLibrary().engine("sglang");
  CapacityRequest req;
  req.requests_per_s = 5;
  req.tpot_target_s = 0.04;
  const std::vector<DynamicTreeSetting> trees = {{16, 4, 4}, {32, 5, 8}, {64, 6, 8}, {16, 100, 4}};
  const CapacitySearch r = search_capacity_trees(s, req, {1, 2}, trees);
  ASSERT_EQ(r.skipped.size(), 1u) << "depth 100 is beyond what specdec drafts";
  EXPECT_EQ(r.skipped[0].setting, "tree 16/100/4");
  EXPECT_NE(r.skipped[0].reason.find("more than specdec supports"), std::string::npos) << r.skipped[0].reason;
  ASSERT_EQ(r.configs.size(), 6u);
  ASSERT_TRUE(r.best.has_value());
  for (const auto& c : r.configs) {
    ASSERT_FALSE(c.tree.empty());
    Scenario one = s;
    one.workload.tp = c.tp;
    const DynamicTreeSetting& t = trees[c.tree == "16/4/4" ? 0 : c.tree == "32/5/8" ? 1 : 2];
    set_dynamic_tree(one.plan, *one.acceptance, t.total_tokens, t.depth, t.top_k);
    const CapacityPlan alone = plan_capacity(one, req);
    EXPECT_EQ(alone.feasible, c.plan.feasible) << "TP " << c.tp << " tree " << c.tree;
    if (!c.plan.feasible) continue;
    EXPECT_EQ(alone.devices, c.plan.devices) << "TP " << c.tp << " tree " << c.tree << ": the search is plan_capacity's";
    EXPECT_TRUE(!cheaper_config(c, *r.best)) << "TP " << c.tp << " tree " << c.tree << " beats the answer";
  }
  ASSERT_TRUE(r.sequential.has_value());
  EXPECT_EQ(r.sequential_configs.size(), 2u) << "sequential decoding planned once per TP, not per tree";
  EXPECT_NE(error_of([&] { search_capacity_trees(s, req, {1}, {{16, 100, 4}}); }).find("none of the trees asked for can be drafted"),
            std::string::npos);
  Scenario measured = s;
  measured.acceptance.reset();
  measured.measured_tokens_per_step = 3.0;
  EXPECT_NE(error_of([&] { search_capacity_trees(measured, req, {1}, trees); }).find("needs an acceptance model"),
            std::string::npos);
}

TEST(Capacity, ALoadBeyondAnyPlanIsAnErrorNotAnEmptyAnswer) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  CapacityRequest req;
  req.requests_per_s = 1e13;  // 2-token outputs: a replica of batch 1024 serves ~1e5 requests/s
  req.tpot_target_s = 0.05;
  const std::string e = error_of([&] { search_capacity(s, req, {1, 2}, {}); });
  EXPECT_NE(e.find("more than 1000000 devices"), std::string::npos) << e;
}

}  // namespace
}  // namespace specdec::sim
