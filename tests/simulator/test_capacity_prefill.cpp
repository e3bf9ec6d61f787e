// The capacity planner's TPOT under load: every replica prefills the prompts of the requests it
// serves, which lengthens the steps of those already decoding (the fixed point T = D / (1 − λc)),
// a replica whose prompts alone take its whole time cannot keep up, the TPOT target is checked at
// the full batch and the TPOT at the mean occupancy (Little's law) is reported beside it, and a load
// that only the prompts' prefill puts beyond the planner's bound is rejected saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "simulator/capacity.hpp"
#include "simulator/operators.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// Llama-3.1-70B with EAGLE-3 on H200, the quick start's question (prompt 1024, output 256).
Scenario seventy_b(int tp, int k) {
  Scenario s = test::scenario("llama-3.1-70b", "h200", "eagle3-llama3.3-70b", k, 0.75);
  s.workload.tp = tp;
  s.workload.prompt_len = 1024;
  s.workload.output_len = 256;
  return s;
}

CapacityRequest load(double rate, double tpot_target_s) {
  CapacityRequest req;
  req.requests_per_s = rate;
  req.tpot_target_s = tpot_target_s;
  return req;
}

// The option of `plan` at `batch`.
const CapacityOption& option_at(const CapacityPlan& plan, int batch) {
  for (const auto& o : plan.options)
    if (o.batch == batch) return o;
  throw Error("no option at batch " + std::to_string(batch));
}

TEST(CapacityPrefill, TpotUnderLoadIsTheFixedPointOfItsOwnPrefill) {
  const Scenario s = seventy_b(2, 3);
  const CapacityRequest req = load(20, 0.03);
  const CapacityPlan plan = plan_capacity(s, req);
  ASSERT_TRUE(plan.feasible);
  ASSERT_GT(prefill_seconds_per_prompt(s), 0.1) << "a 1024-token prompt of a 70B model on two H200s: over 100 ms";
  for (const auto& o : plan.options) {
    if (!o.prediction.fits_memory) continue;
    Scenario at = s;
    at.workload.batch = o.batch;
    const double c = o.prefill_s_per_prompt;
    EXPECT_EQ(c, prefill_seconds_per_prompt(at)) << "batch " << o.batch << ": a prompt joins that batch's steps";
    EXPECT_LE(c, prefill_cost(at).draft_s + prefill_cost(at).verify_s) << "batch " << o.batch << ": at most its own forward";
    const double d = o.prediction.step.total_s();
    // More replicas, less load on each: fewer prompt rows per step, a shorter step.
    double prev_tokens = 1e300, prev_tpot = 1e300;
    for (const int n : {3, 4, 5, 8, 20, 1000}) {
      SCOPED_TRACE("batch " + std::to_string(o.batch) + ", " + std::to_string(n) + " replicas");
      const double rate = 20.0 / n;
      const ReplicaCheck at = check_replicas(o, s, req, n);
      ASSERT_TRUE(at.load.step.keeps_up);
      const double t = at.load.step.step_s;
      EXPECT_NEAR(t, d + rate * t * c, 1e-12 * t) << "T = D + rate·T·c";
      EXPECT_NEAR(at.load.step.prefill_tokens_per_step, rate * t * 1024, 1e-9);
      EXPECT_NEAR(at.load.tpot_s, t / o.prediction.tokens_per_step, 1e-15);
      EXPECT_GT(at.load.tpot_s, o.prediction.tpot_s) << "prompts lengthen the step";
      EXPECT_LT(at.load.step.prefill_tokens_per_step, prev_tokens) << "prompt rows fall with each replica's rate";
      EXPECT_LT(at.load.tpot_s, prev_tpot);
      EXPECT_EQ(at.broken.empty(), at.ok());
      prev_tokens = at.load.step.prefill_tokens_per_step;
      prev_tpot = at.load.tpot_s;
    }
    // No load: TPOT is the plain decode step's, exactly.
    const ReplicaCheck idle = check_replicas(o, s, load(0, 0.03), 1);
    EXPECT_EQ(idle.load.tpot_s, o.prediction.tpot_s) << "batch " << o.batch;
    EXPECT_EQ(idle.load.step.step_s, d) << "batch " << o.batch;
    EXPECT_EQ(idle.load.step.prefill_tokens_per_step, 0.0) << "batch " << o.batch;
    // Two replicas' share of 20 prompts/s is 10 each, 10·c > 1 of their time: they cannot keep up,
    // whatever the batch, and the check says that and nothing else.
    for (const int n : {1, 2}) {
      const ReplicaCheck over = check_replicas(o, s, req, n);
      EXPECT_FALSE(over.load.step.keeps_up) << "batch " << o.batch << ", " << n << " replicas";
      EXPECT_TRUE(std::isinf(over.load.step.step_s)) << "batch " << o.batch << ", " << n << " replicas";
      EXPECT_EQ(over.broken, std::vector<ReplicaLimit>{ReplicaLimit::prefill_capacity}) << "batch " << o.batch << ", " << n << " replicas";
    }
  }
  EXPECT_GT(plan.replicas, 20 * plan.load.step.prefill_s_per_prompt) << "no plan has replicas that cannot keep up";
  EXPECT_LE(plan.load.tpot_s, req.tpot_target_s);
  EXPECT_NEAR(plan.load.tpot_s * plan.prediction.tokens_per_step, plan.load.step.step_s, 1e-15);
  // A bad replica count is an error.
  for (const double bad : {0.0, 0.5, -1.0, std::nan("")})
    EXPECT_NE(error_of([&] { check_replicas(plan.options.front(), s, req, bad); }).find("the number of replicas must be a finite number >= 1"),
              std::string::npos)
        << bad;
}

// One TP-4 replica cannot prefill 20 prompts/s of 1024 tokens (67 ms each in its steps: 1.35 s of every second),
// the answer the planner gave before it priced prompts; TP-4 plans now take three replicas.
TEST(CapacityPrefill, OneTp4ReplicaCannotKeepUpWithTheQuickStartsPrompts) {
  const Scenario s = seventy_b(4, 3);
  const CapacityRequest req = load(20, 0.03);
  const CapacityPlan plan = plan_capacity(s, req);
  ASSERT_TRUE(plan.feasible);
  const CapacityOption& o = option_at(plan, 64);
  EXPECT_NEAR(o.prefill_s_per_prompt, 0.067, 0.002);
  const ReplicaCheck one = check_replicas(o, s, req, 1);
  EXPECT_FALSE(one.load.step.keeps_up);
  EXPECT_NEAR(one.load.step.prefill_share, 1.35, 0.03);
  EXPECT_EQ(one.broken, std::vector<ReplicaLimit>{ReplicaLimit::prefill_capacity});
  EXPECT_TRUE(o.prediction.tpot_s <= req.tpot_target_s && o.prediction.fits_memory)
      << "alone, batch 64 meets the target: only the load rules one replica out";
  EXPECT_EQ(plan.replicas, 3);
  EXPECT_EQ(plan.batch, 32);
}

// The mean number of sequences decoding (Little's law, n = λ · output_len · TPOT(n)) is at most the
// batch, and its TPOT at most the full batch's; below one sequence on average the TPOT is batch 1's.
TEST(CapacityPrefill, TpotAtTheMeanOccupancyIsAtMostTheFullBatchs) {
  struct Case {
    std::string name;
    Scenario s;
    CapacityRequest req;
  };
  Scenario eight = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  eight.workload.prompt_len = 512;
  eight.workload.output_len = 256;
  Scenario eight_seq = test::scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  eight_seq.workload.prompt_len = 2048;
  eight_seq.workload.output_len = 64;
  Scenario sglang = seventy_b(4, 3);
  sglang.engine = SpecLibrary().engine("sglang");
  Scenario seq70 = test::scenario("llama-3.1-70b", "h200", "", 0, 0);
  seq70.workload = seventy_b(4, 3).workload;
  std::vector<Case> cases = {{"70B EAGLE-3 TP 2, 20/s", seventy_b(2, 3), load(20, 0.03)},
                             {"70B EAGLE-3 TP 8, 20/s", seventy_b(8, 2), load(20, 0.03)},
                             {"70B sequential TP 4, 20/s", seq70, load(20, 0.03)},
                             {"70B EAGLE-3 TP 4 on sglang, 12/s", sglang, load(12, 0.03)},
                             {"8B EAGLE-3, 20/s", eight, load(20, 0.02)},
                             {"8B sequential, 0.05/s", eight_seq, load(0.05, 0.02)}};
  cases.back().req.max_utilization = 0.5;
  int below_one = 0, between = 0;
  for (const Case& c : cases) {
    const CapacityPlan plan = plan_capacity(c.s, c.req);
    ASSERT_TRUE(plan.feasible) << c.name;
    for (const auto& o : plan.options) {
      if (!o.feasible) continue;
      SCOPED_TRACE(c.name + ", batch " + std::to_string(o.batch));
      const ReplicaQueue& q = o.load;
      const double rate = c.req.requests_per_s / o.replicas;
      const double n_out = c.s.workload.output_len;
      EXPECT_LE(q.mean_occupancy, o.batch);
      EXPECT_LE(q.tpot_at_mean_occupancy_s, q.tpot_s);
      EXPECT_GT(q.mean_occupancy, 0.0);
      // The TPOT of a batch of b under this replica's prompts, predicted afresh.
      const double stretch = 1 / (1 - q.step.prefill_share);
      auto tpot_at = [&](int b) {
        Scenario one = c.s;
        one.workload.batch = b;
        return predict(one).tpot_s * stretch;
      };
      if (q.mean_occupancy < 1) {
        ++below_one;
        EXPECT_NEAR(q.tpot_at_mean_occupancy_s, tpot_at(1), 1e-12 * tpot_at(1)) << "a running request decodes in a batch of at least itself";
        EXPECT_NEAR(q.mean_occupancy, rate * n_out * tpot_at(1), 1e-9);
      } else {
        if (q.mean_occupancy < o.batch - 1) ++between;
        EXPECT_NEAR(q.mean_occupancy, rate * n_out * q.tpot_at_mean_occupancy_s, 1e-9 * q.mean_occupancy) << "Little's law";
        const int lo = int(std::floor(q.mean_occupancy));
        EXPECT_GE(q.tpot_at_mean_occupancy_s, tpot_at(lo) * (1 - 1e-12));
        EXPECT_LE(q.tpot_at_mean_occupancy_s, tpot_at(std::min(lo + 1, o.batch)) * (1 + 1e-12));
      }
    }
  }
  EXPECT_GT(below_one, 0) << "some case runs below one sequence on average";
  EXPECT_GT(between, 0) << "some case runs well inside its batch";
  // The quick start's answer: the target is held at the full batch; on average fewer decode, faster.
  const CapacityPlan q = plan_capacity(seventy_b(2, 3), load(20, 0.03));
  EXPECT_LT(q.load.mean_occupancy, 0.7 * q.batch);
  EXPECT_LT(q.load.tpot_at_mean_occupancy_s, q.load.tpot_s);
  EXPECT_LE(q.load.tpot_s, 0.03);
}

// A load that needs more devices than specdec plans for only because of the prompts' prefill is
// rejected with a reason that says so: the prompts alone fill the replicas, or stretch TPOT past a
// target the decode step alone meets. A load the decoding alone puts there does not mention prefill
// (CapacityQueueing.NoReplicaIsPlannedAboveTheUtilisationCap).
TEST(CapacityPrefill, APlanInfeasibleOnlyBecauseOfPrefillSaysSo) {
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  s.workload.prompt_len = 4096;
  s.workload.output_len = 16;
  const double c = prefill_seconds_per_prompt(s);
  ASSERT_GT(c, 0.05);
  // 1.2e6 / c replicas to keep up with the prompts; decoding 16 tokens each needs far fewer.
  CapacityRequest req = load(1.2e6 / c, 0.05);
  std::string e = error_of([&] { plan_capacity(s, req); });
  EXPECT_NE(e.find("needs more than 1000000 devices"), std::string::npos) << e;
  EXPECT_NE(e.find("because of the prompts' prefill: one prompt of 4096 tokens takes"), std::string::npos) << e;
  EXPECT_NE(e.find("of prefill interleaved into the decode steps"), std::string::npos) << e;
  EXPECT_NE(e.find("they cannot keep up"), std::string::npos) << e;
  // The same scenario without prompts to prefill fits: prefill is the only reason.
  {
    const CapacityPlan plan = [&] {
      CapacityRequest light = req;
      light.requests_per_s = 1e5;
      return plan_capacity(s, light);
    }();
    ASSERT_TRUE(plan.feasible);
    const CapacityOption& o = option_at(plan, plan.batch);
    CapacityOption without = o;
    without.prefill_s_per_prompt = 0;
    EXPECT_TRUE(check_replicas(without, s, req, 1000000).ok()) << "a million replicas decode this load when prompts cost nothing";
    EXPECT_FALSE(check_replicas(o, s, req, 1000000).ok());
  }
  // An engine that prefills between steps says so.
  Scenario apart = s;
  apart.engine.interleaves_prefill = false;
  e = error_of([&] { plan_capacity(apart, req); });
  EXPECT_NE(e.find("of prefill between decode steps (engine 'vllm' does not interleave prefill)"), std::string::npos) << e;
  // The prompts keep up, but stretch TPOT past a target that batch 1's decode step alone meets by a
  // hair: the replicas needed to thin the prompts enough are beyond the bound.
  Scenario one = s;
  one.workload.batch = 1;
  const double tpot1 = predict(one).tpot_s;
  CapacityRequest tight = load(100, tpot1 * (1 + 1e-7));
  e = error_of([&] { plan_capacity(s, tight); });
  EXPECT_NE(e.find("because of the prompts' prefill"), std::string::npos) << e;
  EXPECT_NE(e.find("beyond the "), std::string::npos) << e;
  EXPECT_NE(e.find(" ms without the prompts)"), std::string::npos) << e;
  // Searched, the configuration keeps the same reason.
  const std::string searched = error_of([&] { search_capacity(s, req, {1}, {}); });
  EXPECT_NE(searched.find("because of the prompts' prefill"), std::string::npos) << searched;
}

// Chunked prefill: a prompt's rows join the decode step's target forward, whose products read their
// weights once for both row sets. A short prompt in a memory-bound step costs its rows' compute (and
// the head's own pass over it), far less than a forward of its own; a long prompt, compute-bound
// anyway, nearly its own forward; never more. The merge adds the work and the activations and keeps
// one weight read per product.
TEST(CapacityPrefill, AnInterleavedPromptPaysItsRowsNotTheWeightsAgain) {
  for (const int batch : {1, 8, 32, 128}) {
    for (const int prompt : {32, 128, 1024, 4096}) {
      Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 3, 0.8);
      s.workload.batch = batch;
      s.workload.prompt_len = prompt;
      s.workload.output_len = 256;
      ASSERT_TRUE(s.engine.interleaves_prefill) << s.engine.name;
      const StepCost own = prefill_cost(s);
      const double in_step = interleaved_prefill_s(s);
      const std::string at = "batch " + std::to_string(batch) + ", prompt " + std::to_string(prompt);
      EXPECT_LE(in_step, own.draft_s + own.verify_s * (1 + 1e-12)) << at << ": never more than a forward of its own";
      EXPECT_GT(in_step, own.draft_s) << at << ": the rows' compute is paid";
      if (prompt == 128) EXPECT_LT(in_step, 0.6 * (own.draft_s + own.verify_s)) << at << ": the weights are not read again";
      if (prompt == 4096) EXPECT_GT(in_step, 0.9 * (own.draft_s + own.verify_s)) << at << ": compute-bound, nearly its own";
    }
  }
  // The merge, on a step's operators: each product's weights once, the rest added.
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "", 1, 0);
  ForwardParams p;
  p.batch = 16;
  p.weights = weight_bytes_of(s.target, s.target.dtype);
  const std::vector<Operator> step = model_forward_ops(s.target, p, "decode");
  ForwardParams q = p;
  q.batch = 1;
  q.tokens = 512;
  q.prefill = true;
  const std::vector<Operator> prompt = model_forward_ops(s.target, q, "prefill");
  const std::vector<Operator> both = with_prompt_rows(step, prompt);
  ASSERT_EQ(both.size(), step.size()) << "every operator of the prompt's forward has its kernel in the step";
  for (size_t i = 0; i < step.size(); ++i) {
    SCOPED_TRACE(step[i].name);
    EXPECT_EQ(both[i].flops, step[i].flops + prompt[i].flops);
    EXPECT_EQ(both[i].weight_bytes, std::max(step[i].weight_bytes, prompt[i].weight_bytes));
    EXPECT_EQ(both[i].bytes, step[i].bytes + prompt[i].bytes - std::min(step[i].weight_bytes, prompt[i].weight_bytes));
    if (step[i].gemm_rows > 0 && step[i].weight_bytes == prompt[i].weight_bytes)
      EXPECT_EQ(both[i].gemm_rows, step[i].gemm_rows + prompt[i].gemm_rows);
  }
  EXPECT_EQ(with_prompt_rows(step, {}).size(), step.size());
}

// Where the engine prefills between steps (SGLang) each prompt stalls the running sequences for its
// whole forward (the weights read again) and its step overhead: a longer TPOT at the same load, never
// fewer devices.
TEST(CapacityPrefill, AnEngineThatDoesNotInterleavePaysTheStall) {
  const Scenario in = seventy_b(2, 3);
  Scenario apart = in;
  apart.engine.interleaves_prefill = false;
  const CapacityRequest req = load(20, 0.03);
  const CapacityPlan a = plan_capacity(in, req), b = plan_capacity(apart, req);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_GE(b.devices, a.devices);
  const CapacityOption& oa = option_at(a, 32);
  const CapacityOption& ob = option_at(b, 32);
  Scenario at = apart;
  at.workload.batch = 32;
  EXPECT_EQ(ob.prefill_s_per_prompt, prefill_cost(at).total_s()) << "a forward of its own and its step overhead";
  EXPECT_GT(ob.prefill_s_per_prompt - oa.prefill_s_per_prompt, in.engine.step_overhead_s);
  EXPECT_EQ(ob.prediction.tpot_s, oa.prediction.tpot_s) << "the decode step itself is the same";
  for (const int n : {5, 6, 10}) {
    const ReplicaCheck x = check_replicas(oa, in, req, n), y = check_replicas(ob, apart, req, n);
    EXPECT_GT(y.load.tpot_s, x.load.tpot_s) << n << " replicas";
    EXPECT_GT(y.load.step.prefill_share, x.load.step.prefill_share) << n << " replicas";
    // TTFT: half the step in progress, then the prompt's own forward before the next step (apart), or
    // the whole next step, which carries the prompt's rows (interleaved).
    EXPECT_DOUBLE_EQ(y.load.ttft_s, 0.5 * y.load.step.step_s + ob.prefill_s_per_prompt) << n << " replicas";
    EXPECT_DOUBLE_EQ(x.load.ttft_s, 1.5 * x.load.step.step_s + oa.prefill_s_per_prompt) << n << " replicas";
    EXPECT_DOUBLE_EQ(x.load.ttft_with_wait_s, x.load.ttft_s + x.load.queue.mean_wait_s) << n << " replicas";
  }
}

}  // namespace
}  // namespace specdec::sim
