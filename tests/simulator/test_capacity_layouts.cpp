// The capacity planner's search over parallel layouts (data-parallel attention, expert parallelism;
// simulator/capacity.hpp capacity_layouts, docs/simulator.md "Capacity planning"): a dense model's
// plans are what they were before layouts were searched, bit for bit; the layouts each TP allows on a
// mixture-of-experts model; DeepSeek-V3 with MTP found cheaper under attention DP, and why (KV per
// device against a hand computation); restrictions honoured; a layout that cannot run kept with its
// reason; the search's size bounded and its cost reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "simulator/capacity_planning.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/simulate_modes.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

CapacityPlanning plan_of(const ScenarioOptions& o, const OptionSpelling& sp = kCommandLineSpelling) {
  SpecLibrary lib;
  const BuiltScenario b = build_scenario(o, lib, sp);
  return run_capacity_planning(o, b.scenario, lib, sp);
}

// The plan's JSON as `specdec simulate ... --json` writes it (the scenario as simulate_modes leaves it).
nlohmann::json json_of(const ScenarioOptions& o) {
  SpecLibrary lib;
  const Scenario s = simulate_modes(o, build_scenario(o, lib, kCommandLineSpelling), kCommandLineSpelling).built.scenario;
  nlohmann::json j;
  capacity_planning_json(run_capacity_planning(o, s, lib, kCommandLineSpelling), s, j);
  return j;
}

ScenarioOptions capacity_options(const std::string& model, const std::string& hw, double rate, double tpot_ms) {
  ScenarioOptions o;
  o.model = model;
  o.hardware = hw;
  o.capacity.emplace();
  o.capacity->capacity_rate = rate;
  o.capacity->tpot_target_ms = tpot_ms;
  return o;
}

// The worked example of docs/simulator.md: DeepSeek-V3 with its MTP module on H200, prompts of 1024
// tokens and outputs of 4096 (a reasoning load), 10 requests/s at TPOT <= 50 ms, on one 8-device
// instance.
ScenarioOptions deepseek_question() {
  ScenarioOptions o = capacity_options("deepseek-v3", "h200", 10, 50);
  o.drafter = "mtp-deepseek-v3";
  o.alpha = 0.8;
  o.prompt_len = 1024;
  o.output_len = 4096;
  o.capacity->tp = std::vector<int>{8};
  return o;
}

bool same_layout(const Parallelism& a, const Parallelism& b) {
  return a.ranks == b.ranks && a.dp_attention == b.dp_attention && a.ep == b.ep;
}

std::string layouts_text(const std::vector<Parallelism>& ls) {
  std::string s;
  for (const auto& l : ls)
    s += "(" + std::to_string(l.ranks) + "," + std::to_string(l.dp_attention) + "," + std::to_string(l.ep) + ") ";
  return s;
}

// FNV-1a over a JSON text: the whole search's numbers in one value.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Without the fields the layouts added (every configuration's dp_attention, ep, layout; the search's
// layouts and cost), the fields added since (the arrivals' variability: arrival_scv, arrival_cv),
// without the queueing model's description (text, not numbers) and the error band (the
// evaluation's, not the plan's): the plan as the planner wrote it before it searched layouts.
nlohmann::json without_layout_fields(nlohmann::json j) {
  if (j.is_object()) {
    for (const char* k : {"dp_attention", "ep", "layout", "layouts", "configurations", "batches_priced", "error_band", "arrival_scv",
                          "arrival_cv", "capacity_queueing"})
      j.erase(k);
    for (auto& [k, v] : j.items()) v = without_layout_fields(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_layout_fields(v);
  }
  return j;
}

// Dense models search plain TP only, and their plans are exactly those of the planner before layouts
// were searched: the answers' numbers below are `specdec simulate ... --json`, exact (hexadecimal),
// and the hash (FNV-1a of the compact JSON, keys sorted) covers every configuration's every number,
// without the fields the layouts added. They were first recorded from the planner without layouts
// and matched it bit for bit; re-recorded since from this planner where the cost model changed on
// purpose (per-kernel floors; the engines' host work hidden by release; a prompt's rows priced inside
// the decode step's forward where the engine interleaves prefill; TTFT under load), so that a change of the
// search itself, which must not touch a dense plan, shows here.
TEST(CapacityLayouts, ADenseModelsPlanIsUnchangedBitForBit) {
  ScenarioOptions quick = capacity_options("llama-3.1-70b", "h200", 20, 30);
  quick.drafter = "eagle3-llama3.3-70b";
  quick.alpha = 0.75;
  quick.prompt_len = 1024;
  quick.output_len = 256;
  ScenarioOptions sequential = capacity_options("llama-3.1-8b", "h100-sxm", 3, 40);
  sequential.capacity->ttft_target_ms = 500;
  sequential.capacity->price = 2.5;
  ScenarioOptions trees = capacity_options("vicuna-7b", "a100-80gb-sxm", 5, 40);
  trees.engine = "sglang";
  trees.drafter = "eagle1-vicuna-7b";
  trees.alpha = 0.7;
  trees.best_tree = BestTreeGrid{{16, 32}, {4, 5}, {4, 8}};
  trees.capacity->tp = std::vector<int>{1, 2};
  struct Expected {
    int tp, k, batch, devices;
    double tpot_ms, decode_tpot_ms, utilization, usd_per_million;
  };
  struct Case {
    std::string name;
    ScenarioOptions options;
    Expected best, seq;
    size_t configs, sequential_configs;
    uint64_t hash;
  };
  const std::vector<Case> cases = {
      {"quick start: llama-3.1-70b EAGLE-3 on h200", quick,
       {2, 3, 32, 10, 0x1.11f2b890ad570p+4, 0x1.32ad95b8fa12ap+3, 0x1.240fc176b9073p-1, 0x1.12bd555555555p+2},
       {4, 0, 64, 12, 0x1.82b2602dca379p+4, 0x1.bec49e115e452p+3, 0x1.4f4b197fa0f31p-1, 0x1.49affffffffffp+2}, 32, 4,
       15767402379341987448ull},
      {"sequential llama-3.1-8b on h100-sxm with a TTFT target and a price", sequential,
       {1, 0, 8, 1, 0x1.9b9799d6a95a9p+2, 0x1.90c898a21c997p+2, 0x1.3fa2b93bcf3b2p-1, 0x1.cef684bda12f7p-1},
       {1, 0, 8, 1, 0x1.9b9799d6a95a9p+2, 0x1.90c898a21c997p+2, 0x1.3fa2b93bcf3b2p-1, 0x1.cef684bda12f7p-1}, 0, 4,
       2804720636018625790ull},
      {"EAGLE-2 trees of vicuna-7b on a100 with sglang", trees,
       {1, 4, 16, 1, 0x1.07d829dc54001p+3, 0x1.af1ea071efc45p+2, 0x1.5a2c7cdd861eep-1, 0x1.1c838e38e38e4p+0},
       {1, 0, 32, 1, 0x1.3e80219669188p+4, 0x1.067be7eec2f5cp+4, 0x1.9b4a79a5d03aep-1, 0x1.1c838e38e38e4p+0}, 16, 2,
       3655704363930739748ull},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const nlohmann::json j = json_of(c.options);
    for (const char* list : {"configs", "sequential"})
      for (const auto& config : j["capacity_search"][list])
        EXPECT_TRUE(config["dp_attention"] == 1 && config["ep"] == 1 && config["layout"] == "TP " + std::to_string(config["tp"].get<int>()))
            << "a dense model searches plain TP only: " << config.dump();
    EXPECT_EQ(j["capacity_search"]["layouts"].size(), j["capacity_search"]["tp"].size()) << j["capacity_search"]["layouts"].dump();
    EXPECT_EQ(j["capacity_search"]["configs"].size(), c.configs);
    EXPECT_EQ(j["capacity_search"]["sequential"].size(), c.sequential_configs);
    const std::pair<const char*, Expected> answers[] = {{"capacity", c.best}, {"capacity_sequential", c.seq}};
    for (const auto& [which, e] : answers) {
      const auto& a = j[which];
      EXPECT_EQ(a["tp"], e.tp) << which << " " << a.dump();
      EXPECT_EQ(a["k"], e.k) << which << " " << a.dump();
      EXPECT_EQ(a["batch"], e.batch) << which << " " << a.dump();
      EXPECT_EQ(a["devices"], e.devices) << which << " " << a.dump();
      EXPECT_EQ(a["tpot_ms"].get<double>(), e.tpot_ms) << which << " TPOT under load";
      EXPECT_EQ(a["decode_tpot_ms"].get<double>(), e.decode_tpot_ms) << which << " decode TPOT";
      EXPECT_EQ(a["utilization"].get<double>(), e.utilization) << which << " utilisation";
      EXPECT_EQ(a["cost_per_million_output_tokens_usd"].get<double>(), e.usd_per_million) << which << " cost";
    }
    const std::string before = without_layout_fields(j).dump();
    EXPECT_EQ(fnv1a(before), c.hash) << "every configuration's numbers, as before layouts were searched: " << before;
  }
}

TEST(CapacityLayouts, EachTpSearchesTheLayoutsItAllows) {
  SpecLibrary lib;
  const ModelShape moe = lib.model("deepseek-v3");
  const ModelShape dense = lib.model("llama-3.1-8b");
  const std::vector<int> tps = {1, 2, 4, 8};
  const std::vector<Parallelism> all = capacity_layouts(tps, moe, std::nullopt, std::nullopt);
  EXPECT_EQ(all.size(), 19u) << "1 + 2x2 + 3x2 + 4x2: " << layouts_text(all);
  const std::vector<Parallelism> at8(all.end() - 8, all.end());
  const std::vector<Parallelism> expected8 = {{8, 1, 1}, {8, 1, 8}, {8, 2, 1}, {8, 2, 8}, {8, 4, 1}, {8, 4, 8}, {8, 8, 1}, {8, 8, 8}};
  for (size_t i = 0; i < expected8.size(); ++i)
    EXPECT_TRUE(same_layout(at8[i], expected8[i])) << "TP 8, plain first, then D, then P: " << layouts_text(at8);
  EXPECT_TRUE(same_layout(all.front(), Parallelism{1, 1, 1})) << layouts_text(all);
  EXPECT_EQ(capacity_layouts({6}, moe, std::nullopt, std::nullopt).size(), 8u) << "D in 1, 2, 3, 6 x P in 1, 6";
  // Dense: plain TP alone, as the planner searched before.
  const std::vector<Parallelism> plain = capacity_layouts(tps, dense, std::nullopt, std::nullopt);
  ASSERT_EQ(plain.size(), tps.size()) << layouts_text(plain);
  for (size_t i = 0; i < tps.size(); ++i) EXPECT_TRUE(same_layout(plain[i], Parallelism{tps[i], 1, 1})) << layouts_text(plain);
  // Restricted: D in {1, 8} and P in {1, 8}; TPs 1, 2 and 4 keep plain TP only.
  const std::vector<Parallelism> some = capacity_layouts(tps, moe, std::vector<int>{1, 8}, std::vector<int>{1, 8});
  const std::vector<Parallelism> expected = {{1, 1, 1}, {2, 1, 1}, {4, 1, 1}, {8, 1, 1}, {8, 1, 8}, {8, 8, 1}, {8, 8, 8}};
  ASSERT_EQ(some.size(), expected.size()) << layouts_text(some);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(same_layout(some[i], expected[i])) << layouts_text(some);
  // Asked for, DP attention is searched on a dense model too (per-group replicas in lock-step).
  EXPECT_EQ(capacity_layouts({2}, dense, std::vector<int>{1, 2}, std::nullopt).size(), 2u);
  // EP ranks of several devices (P = 2, 4 at TP 8) are planned with tensor-parallel attention only;
  // at TP 4, P = 4 is EP = TP (every D), P = 2 a rank of two devices (D = 1).
  const std::vector<Parallelism> ranks = capacity_layouts({4, 8}, moe, std::vector<int>{1, 4}, std::vector<int>{2, 4});
  const std::vector<Parallelism> want = {{4, 1, 2}, {4, 1, 4}, {4, 4, 4}, {8, 1, 2}, {8, 1, 4}};
  ASSERT_EQ(ranks.size(), want.size()) << layouts_text(ranks);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_layout(ranks[i], want[i])) << layouts_text(ranks);
}

// DeepSeek-V3 with MTP under a reasoning load (prompts of 1024 tokens, outputs of 4096): plain TP 8
// holds every sequence's MLA latent on every device, so batch 256 does not fit and seven replicas of
// batch 128 are needed; attention DP 8 keeps each sequence's latent on one device, batch 512 fits,
// and three replicas do. With a tight TPOT target (small batches) plain attention TP wins: under DP 8
// every device reads the whole attention weights.
TEST(CapacityLayouts, DpAttentionIsFoundAndCheaperForDeepSeekV3WithMtp) {
  const CapacityPlanning dp = plan_of(deepseek_question());
  ASSERT_TRUE(dp.search.best && dp.search.sequential);
  const PlannedConfig& best = *dp.search.best;
  EXPECT_EQ(best.tp, 8);
  EXPECT_EQ(best.dp_attention, 8);
  EXPECT_EQ(best.ep, 8);
  EXPECT_EQ(best.k, 3);
  EXPECT_EQ(best.plan.batch, 512);
  EXPECT_EQ(best.plan.replicas, 3);
  EXPECT_EQ(best.plan.devices, 24);
  EXPECT_LE(best.plan.load.tpot_s, 0.05);
  EXPECT_EQ(dp.search.sequential->dp_attention, 8) << "the sequential baseline is searched over the same layouts";
  EXPECT_EQ(dp.search.sequential->plan.devices, 32);

  ScenarioOptions plain_options = deepseek_question();
  plain_options.capacity->dp_attention = std::vector<int>{1};
  plain_options.capacity->ep = std::vector<int>{1};
  const CapacityPlanning plain = plan_of(plain_options);
  ASSERT_TRUE(plain.search.best && plain.search.sequential);
  EXPECT_EQ(plain.search.best->plan.devices, 48) << "plain TP 8: six replicas of batch 128";
  EXPECT_EQ(plain.search.best->plan.batch, 128);
  EXPECT_EQ(plain.search.best->k, 6);
  EXPECT_EQ(plain.search.sequential->plan.devices, 104);

  // Why, by hand: a token's MLA cache is one latent of kv_lora_rank plus a RoPE key of
  // qk_rope_head_dim per layer, BF16; a sequence holds prompt + output tokens. Plain TP keeps every
  // sequence on every device; DP 8 keeps each group's batch / 8.
  const ModelShape& m = SpecLibrary().model("deepseek-v3");
  const double per_sequence = double(m.num_layers) * (m.kv_lora_rank + m.qk_rope_head_dim) * 2.0 * (1024 + 4096);
  const auto option_at = [](const CapacitySearch& r, const Parallelism& l, int k, int batch) -> const CapacityOption* {
    for (const auto& c : r.configs)
      if (same_layout(c.layout(), l) && c.k == k)
        for (const auto& o : c.plan.options)
          if (o.batch == batch) return &o;
    return nullptr;
  };
  const CapacityOption* tp128 = option_at(plain.search, {8, 1, 1}, 3, 128);
  const CapacityOption* tp256 = option_at(plain.search, {8, 1, 1}, 3, 256);
  const CapacityOption* dp512 = option_at(dp.search, {8, 8, 8}, 3, 512);
  const CapacityOption* dp1024 = option_at(dp.search, {8, 8, 8}, 3, 1024);
  ASSERT_TRUE(tp128 && tp256 && dp512 && dp1024);
  EXPECT_NEAR(tp128->prediction.kv_bytes_per_device, 128 * per_sequence, 1e-9 * 128 * per_sequence) << "plain TP 8, batch 128";
  EXPECT_NEAR(dp512->prediction.kv_bytes_per_device, 512 / 8 * per_sequence, 1e-9 * 64 * per_sequence) << "DP 8, batch 512";
  EXPECT_TRUE(tp128->prediction.fits_memory);
  EXPECT_FALSE(tp256->prediction.fits_memory) << "plain TP 8 holds 256 sequences' latents on every device";
  EXPECT_TRUE(dp512->prediction.fits_memory) << "DP 8 holds 64 of them per device";
  EXPECT_FALSE(dp1024->prediction.fits_memory);
  // What DP attention costs: every device holds (and reads) the attention and other non-expert weights
  // of its group's TP 1, not an eighth of them.
  EXPECT_GT(dp512->prediction.weight_bytes_per_device, tp128->prediction.weight_bytes_per_device + 10e9);

  // A tight TPOT target: small batches, where reading the weights dominates; plain attention TP wins
  // (at 9 ms every layout but DP 8 takes two replicas of batch 32, and attention TP 8 the shortest
  // step; at 10 ms one replica of DP 4 x EP 8 at batch 64 just meets it, 9.97 ms).
  ScenarioOptions tight = deepseek_question();
  tight.capacity->capacity_rate = 1;
  tight.capacity->tpot_target_ms = 9;
  const CapacityPlanning t = plan_of(tight);
  ASSERT_TRUE(t.search.best);
  EXPECT_EQ(t.search.best->dp_attention, 1) << "TPOT <= 9 ms: " << t.search.best->plan.batch;
  EXPECT_EQ(t.search.best->plan.devices, 16);
}

TEST(CapacityLayouts, RestrictionsAreHonoured) {
  ScenarioOptions o = deepseek_question();
  o.capacity->dp_attention = std::vector<int>{1, 8};
  o.capacity->ep = std::vector<int>{8};
  const CapacityPlanning p = plan_of(o);
  ASSERT_EQ(p.layouts.size(), 2u) << layouts_text(p.layouts);
  EXPECT_TRUE(same_layout(p.layouts[0], {8, 1, 8}) && same_layout(p.layouts[1], {8, 8, 8})) << layouts_text(p.layouts);
  EXPECT_EQ(p.search.configs.size(), 2u * 8u) << "2 layouts x K 1..8";
  ASSERT_EQ(p.search.sequential_configs.size(), 2u) << "sequential decoding at the same layouts";
  for (const auto* list : {&p.search.configs, &p.search.sequential_configs})
    for (const auto& c : *list)
      EXPECT_TRUE((c.dp_attention == 1 || c.dp_attention == 8) && c.ep == 8) << describe_parallelism(c.layout());
  EXPECT_EQ(p.search.best->ep, 8);

  // A TP with no layout left is not searched.
  o.capacity->tp = std::vector<int>{4, 8};
  const CapacityPlanning only8 = plan_of(o);
  EXPECT_EQ(only8.tps, std::vector<int>{8});
  EXPECT_EQ(only8.layouts.size(), 2u) << layouts_text(only8.layouts);

  // Degrees that fit no TP searched, or are not degrees: errors naming the option in the caller's words.
  const auto refused = [](ScenarioOptions bad, const OptionSpelling& sp = kCommandLineSpelling) {
    return error_of([&] { plan_of(bad, sp); });
  };
  ScenarioOptions bad = deepseek_question();
  bad.capacity->dp_attention = std::vector<int>{1, 3};
  EXPECT_NE(refused(bad).find("--dp-attention 3 fits none of the tensor-parallel degrees searched (--tp 8): attention DP must "
                              "divide the replica's devices"),
            std::string::npos)
      << refused(bad);
  EXPECT_NE(refused(bad, kKeywordSpelling).find("dp_attention=3 fits none of the tensor-parallel degrees searched (tp=8)"),
            std::string::npos)
      << refused(bad, kKeywordSpelling);
  bad = deepseek_question();
  bad.capacity->ep = std::vector<int>{3};
  EXPECT_NE(refused(bad).find("--ep 3 fits none of the tensor-parallel degrees searched (--tp 8): EP must divide the "
                              "replica's devices"),
            std::string::npos)
      << refused(bad);
  bad.capacity->ep = std::vector<int>{0};
  EXPECT_NE(refused(bad).find("--ep 0: the expert-parallel degree must be >= 1"), std::string::npos) << refused(bad);
  bad.capacity->ep = std::vector<int>{};
  EXPECT_NE(refused(bad).find("--ep: no expert-parallel degree given"), std::string::npos) << refused(bad);
  bad = deepseek_question();
  bad.ep = 8;  // one layout's option, not the search's lists
  EXPECT_NE(refused(bad).find("capacity planning searches the layouts"), std::string::npos) << refused(bad);
}

// A layout the model cannot run is kept with its reason, as a TP that does not split the heads is:
// a Qwen3-30B-A3B shape with 12 query heads (TP 8 cannot split them, attention TP 4 can) and 60
// experts (EP 8 cannot hold whole experts, EP 4 can).
TEST(CapacityLayouts, ALayoutThatCannotRunKeepsItsReason) {
  Scenario s = test::scenario("qwen3-30b-a3b", "h100-sxm", "eagle3-qwen3-30b-a3b", 2, 0.7);
  s.target.num_heads = 12;
  s.target.num_experts = 60;
  CapacityRequest req;
  req.requests_per_s = 5;
  req.tpot_target_s = 0.05;
  const std::vector<Parallelism> layouts = capacity_layouts({4, 8}, s.target, std::nullopt, std::nullopt);
  const CapacitySearch r = search_capacity_layouts(s, req, layouts, {2});
  ASSERT_EQ(r.configs.size(), layouts.size());
  ASSERT_EQ(r.sequential_configs.size(), layouts.size());
  for (const auto* list : {&r.configs, &r.sequential_configs}) {
    for (const PlannedConfig& c : *list) {
      SCOPED_TRACE(describe_parallelism(c.layout()) + (c.k ? ", K 2" : ", sequential"));
      if (c.ep == 8) {
        EXPECT_NE(c.why_not.find("does not divide the 60 routed experts"), std::string::npos) << c.why_not;
      } else if (c.tp == 8 && c.dp_attention == 1) {
        EXPECT_NE(c.why_not.find("tensor-parallel degree 8 does not split model"), std::string::npos) << c.why_not;
      } else if (c.tp / c.dp_attention == 8) {
        ADD_FAILURE() << "no such layout here";
      } else {
        EXPECT_EQ(c.why_not, "") << "attention TP " << c.tp / c.dp_attention << " splits 12 heads";
      }
    }
  }
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->why_not, "");
  // TP 8 runs only with its attention split 2, 4 or 8 ways (attention TP 4, 2, 1) and the experts
  // column-split.
  const bool runs_at_8 = std::any_of(r.configs.begin(), r.configs.end(), [](const PlannedConfig& c) {
    return c.tp == 8 && c.why_not.empty() && c.dp_attention > 1 && c.ep == 1;
  });
  EXPECT_TRUE(runs_at_8);
}

// The search's size is bounded before anything is planned, and its cost is reported.
TEST(CapacityLayouts, ASearchTooLargeIsRefusedSayingHowToNarrowIt) {
  // GPT-OSS-120B on a 64-device Trainium2 instance: 55 layouts x 64 trees is 3575 configurations.
  ScenarioOptions o = capacity_options("gpt-oss-120b", "trn2-48xlarge", 200, 30);
  o.engine = "sglang";
  o.drafter = "eagle3-gpt-oss-120b";
  o.alpha = 0.7;
  o.best_tree = BestTreeGrid{{8, 16, 32, 64}, {2, 3, 4, 5}, {2, 4, 8, 10}};
  const std::string e = error_of([&] { plan_of(o); });
  for (const char* part : {"capacity planning: the search would plan 3575 configurations (55 layouts over --tp x 64 trees",
                           "more than the 2048 one search plans", "narrow it with --tp (e.g. --tp 8)",
                           "--dp-attention and --ep (e.g. --dp-attention 1,8 --ep 1,8)", "or a smaller --best-tree grid"})
    EXPECT_NE(e.find(part), std::string::npos) << part << " not in: " << e;
  EXPECT_NE(error_of([&] { plan_of(o, kKeywordSpelling); }).find("(e.g. dp_attention=[1, 8] ep=[1, 8])"), std::string::npos)
      << error_of([&] { plan_of(o, kKeywordSpelling); });
  // The same search narrowed as the message says is planned.
  o.capacity->tp = std::vector<int>{8};
  o.capacity->dp_attention = std::vector<int>{1, 8};
  o.capacity->ep = std::vector<int>{1, 8};
  const CapacityPlanning narrowed = plan_of(o);
  EXPECT_EQ(narrowed.layouts.size(), 4u);
  EXPECT_EQ(narrowed.search.configs.size() + narrowed.search.skipped.size() * narrowed.layouts.size(), 4u * 64u);
  // The core search holds the bound too.
  SpecLibrary lib;
  Scenario s = test::scenario("gpt-oss-120b", "h200", "eagle3-gpt-oss-120b", 2, 0.7);
  std::vector<Parallelism> many(kMaxCapacityConfigurations / 2, Parallelism{8, 1, 1});
  CapacityRequest req;
  EXPECT_NE(error_of([&] { search_capacity_layouts(s, req, many, {1, 2}); }).find("the search would plan 3072 configurations"),
            std::string::npos);

  // The largest default search (every layout of an MoE model at TP 1..64, K 1..8) is within the
  // bound, and its cost is what it planned.
  ScenarioOptions d = capacity_options("qwen3-30b-a3b", "trn2-48xlarge", 200, 30);
  d.engine = "vllm";
  d.drafter = "eagle3-qwen3-30b-a3b";
  d.alpha = 0.7;
  const nlohmann::json j = json_of(d);
  EXPECT_EQ(j["capacity_search"]["layouts"].size(), 55u);
  EXPECT_EQ(j["capacity_search"]["configurations"], 495) << "55 layouts x (K 1..8 + sequential)";
  EXPECT_EQ(j["capacity_search"]["configurations"].get<size_t>(),
            j["capacity_search"]["configs"].size() + j["capacity_search"]["sequential"].size());
  const CapacityPlanning dp = plan_of(d);
  long long priced = 0;
  for (const auto* list : {&dp.search.configs, &dp.search.sequential_configs})
    for (const auto& c : *list) priced += (long long)c.plan.options.size();
  EXPECT_EQ(dp.search.batches_priced, priced);
  EXPECT_EQ(j["capacity_search"]["batches_priced"], priced);
  EXPECT_GT(priced, 495) << "most configurations price more than one batch size";
}

}  // namespace
}  // namespace specdec::sim
