// Draft-free methods (n-gram lookup, suffix decoding) in the simulator: no drafter term, the
// engine's host lookup per step priced as docs/simulator.md says, verification of a chain of K (or
// a tree's nodes), and acceptance taken from the prompt category of the method's drafter spec.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "cli/cli.hpp"
#include "reference/methods/registry.hpp"
#include "simulator/calibration.hpp"
#include "simulator/policy_pricing.hpp"
#include "simulator/search.hpp"
#include "simulator/spec_json.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

// Llama-3.1-8B on an H100, prompt 512, output 256, i.i.d. acceptance.
Scenario lookup_scenario(Method m, const std::string& engine, int k = 5, double alpha = 0.7, int batch = 1) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("llama-3.1-8b");
  s.hardware = lib.hardware("h100-sxm");
  s.engine = lib.engine(engine);
  s.plan.method = m;
  s.plan.k = k;
  s.acceptance = iid_acceptance(alpha);
  s.workload.batch = batch;
  return s;
}

double context_of(const Scenario& s) { return s.workload.prompt_len + 0.5 * s.workload.output_len; }

// The engine that runs each draft-free method (docs/simulator.md "Draft-free methods").
struct Case {
  Method method;
  const char* engine;
};
const std::vector<Case> kCases = {{Method::ngram, "vllm"},
                                  {Method::suffix, "vllm"},
                                  {Method::ngram, "tensorrt-llm"},
                                  {Method::ngram_tree, "sglang"},
                                  {Method::prompt_lookup, "hf-eager"},
                                  {Method::suffix_tree, "specdec-cpu"},
                                  {Method::ngram, "specdec-cpu"}};

// Every registry method is priced, by name (the simulator's enum keeps its own order; MTP and
// Medusa sit in the middle of the registry's).
TEST(DraftFree, EveryRegistryMethodIsPricedByName) {
  const auto& table = method_registry();
  ASSERT_EQ(table.size(), size_t(kPricedMethods)) << "a registry method the simulator does not price";
  int free = 0;
  std::set<Method> seen;
  for (const MethodEntry& e : table) {
    const Method m = parse_method(e.name, "test");
    EXPECT_EQ(method_name(m), e.name);
    ASSERT_NE(registry_entry(m), nullptr) << e.name;
    EXPECT_EQ(registry_entry(m)->name, e.name);
    for (const std::string& alias : e.aliases) EXPECT_EQ(parse_method(alias, "test"), m) << alias;
    EXPECT_EQ(draft_free(m), e.drafter.kind == DrafterNeed::Kind::context) << e.name;
    free += draft_free(m);
    seen.insert(m);
  }
  EXPECT_EQ(seen.size(), size_t(kPricedMethods)) << "two registry entries map to one priced method";
  EXPECT_EQ(free, 5);
  EXPECT_TRUE(draft_free_tree(Method::ngram_tree));
  EXPECT_TRUE(draft_free_tree(Method::suffix_tree));
  EXPECT_FALSE(draft_free_tree(Method::ngram));
  EXPECT_EQ(draft_free_nodes(Method::ngram_tree, 5, 0), 8) << "the registry's default 'nodes'";
  EXPECT_EQ(draft_free_nodes(Method::ngram_tree, 5, 16), 16);
  EXPECT_EQ(draft_free_nodes(Method::suffix_tree, 5, 0), 5) << "suffix-tree: up to K nodes";
}

// No drafter forward, no drafter operator; the lookup is one host operator of exactly the engine's
// formula; the target verifies K + 1 tokens (ngram-tree: its nodes + 1).
TEST(DraftFree, NoDrafterTermAndOneHostLookup) {
  for (const Case& c : kCases) {
    const Scenario s = lookup_scenario(c.method, c.engine);
    SCOPED_TRACE(method_name(c.method) + " on " + c.engine);
    const Prediction p = predict(s);
    EXPECT_EQ(p.step.draft_s, 0.0);
    EXPECT_EQ(p.step.draft_forwards, 0);
    int lookups = 0;
    for (const OpCost& op : p.step.ops) {
      EXPECT_STRNE(op.op.phase, "draft") << op.op.name;
      EXPECT_STRNE(op.op.phase, "prefill") << op.op.name;
      if (std::string(op.op.name) == "draft_lookup") {
        ++lookups;
        EXPECT_STREQ(op.bound, "host");
        EXPECT_DOUBLE_EQ(op.total_s, p.step.lookup_s);
      }
    }
    EXPECT_EQ(lookups, 1) << "the engine gives every method it runs a lookup term";
    const double want = s.engine.lookup_cost(method_name(c.method)).seconds(1, context_of(s), p.tokens_per_step);
    EXPECT_GT(want, 0.0);
    EXPECT_DOUBLE_EQ(p.step.lookup_s, want);
    EXPECT_GE(p.step.overhead_s, p.step.lookup_s);
    const double nodes = c.method == Method::ngram_tree ? 8 : 5;
    EXPECT_DOUBLE_EQ(p.step.verify_tokens, nodes + 1);
    EXPECT_EQ(p.tree_nodes, draft_free_tree(c.method) ? int(nodes) : 0);
    EXPECT_DOUBLE_EQ(p.tokens_per_step, leviathan_expected_tokens(0.7, 5));
    // The prefill is the target's alone: a draft-free method has nothing to prefill.
    Scenario seq = s;
    seq.plan = DraftPlan{};
    seq.acceptance = nullptr;
    EXPECT_DOUBLE_EQ(p.ttft_s, predict(seq).ttft_s);
    EXPECT_DOUBLE_EQ(p.weight_bytes_per_device, predict(seq).weight_bytes_per_device) << "no drafter weights";
  }
  // With no host overheads at all the step is the verification forward alone, and the speedup is
  // AL · T(1) / T(K + 1) (Leviathan et al. with c = 0).
  Scenario ideal = lookup_scenario(Method::ngram, "ideal");
  const Prediction p = predict(ideal);
  EXPECT_EQ(p.step.lookup_s, 0.0);
  EXPECT_DOUBLE_EQ(p.step.total_s(), p.step.verify_s);
  Scenario seq = ideal;
  seq.plan = DraftPlan{};
  EXPECT_NEAR(p.speedup, p.tokens_per_step * predict(seq).step.verify_s / p.step.verify_s, 1e-12);
}

// The documented scaling: per_step_s + ⌈B / threads⌉ · (per_sequence_s + per_context_token_s · C +
// per_emitted_token_s · AL).
TEST(DraftFree, LookupScalesAsDocumented) {
  const LookupCost c{1e-5, 2e-6, 3e-9, 4e-7, 4};
  EXPECT_DOUBLE_EQ(c.seconds(1, 1000, 2), 1e-5 + 2e-6 + 3e-6 + 8e-7);
  for (int b : {1, 3, 4, 5, 8, 9, 64})
    EXPECT_DOUBLE_EQ(c.seconds(b, 1000, 2), 1e-5 + std::ceil(b / 4.0) * (2e-6 + 3e-6 + 8e-7)) << "batch " << b;

  // vLLM's n-gram scan grows with the history and with the batch (one thread), not with the AL.
  const Scenario base = lookup_scenario(Method::ngram, "vllm");
  const LookupCost ng = base.engine.lookup_cost("ngram");
  EXPECT_GT(ng.per_context_token_s, 0.0);
  EXPECT_EQ(ng.threads, 1);
  Scenario longer = base;
  longer.workload.prompt_len = 4096;
  const double grow = predict(longer).step.lookup_s - predict(base).step.lookup_s;
  EXPECT_NEAR(grow, ng.per_context_token_s * (context_of(longer) - context_of(base)), 1e-15);
  for (int b : {2, 8, 32}) {
    Scenario batched = base;
    batched.workload.batch = b;
    EXPECT_NEAR(predict(batched).step.lookup_s, b * predict(base).step.lookup_s, 1e-15) << "batch " << b;
  }
  Scenario accepting = base;
  accepting.acceptance = iid_acceptance(0.95);
  EXPECT_DOUBLE_EQ(predict(accepting).step.lookup_s, predict(base).step.lookup_s);

  // vLLM's suffix decoding updates its tree per emitted token: it grows with the AL, not the history.
  const Scenario sfx = lookup_scenario(Method::suffix, "vllm");
  const LookupCost st = sfx.engine.lookup_cost("suffix");
  EXPECT_GT(st.per_emitted_token_s, 0.0);
  EXPECT_EQ(st.per_context_token_s, 0.0);
  Scenario sfx_long = sfx;
  sfx_long.workload.prompt_len = 4096;
  EXPECT_DOUBLE_EQ(predict(sfx_long).step.lookup_s, predict(sfx).step.lookup_s);
  Scenario sfx_acc = sfx;
  sfx_acc.acceptance = iid_acceptance(0.95);
  const Prediction a = predict(sfx), b = predict(sfx_acc);
  EXPECT_NEAR(b.step.lookup_s - a.step.lookup_s, st.per_emitted_token_s * (b.tokens_per_step - a.tokens_per_step), 1e-15);

  // The lookup is host time only speculation pays: it never raises a speedup.
  Scenario free = base;
  free.engine.lookup.clear();
  EXPECT_GT(predict(free).speedup, predict(base).speedup);
}

TEST(DraftFree, LookupTermsFallBackToCostSiblingsAndParseStrictly) {
  const auto j = nlohmann::json::parse(
      R"({"name":"e","overhead":{"step_s":1e-3,"lookup":{"ngram":{"per_sequence_s":1e-5,"per_context_token_s":1e-9,"threads":2},
          "suffix":3e-5}}})");
  const EngineSpec e = parse_engine_spec(j, "e.json");
  EXPECT_EQ(e.lookup_cost("prompt-lookup"), e.lookup_cost("ngram")) << "prompt-lookup's cost sibling";
  EXPECT_EQ(e.lookup_cost("suffix-tree").per_sequence_s, 3e-5) << "a number is seconds per sequence";
  EXPECT_EQ(e.lookup_cost("ngram").threads, 2);
  const EngineSpec back = parse_engine_spec(engine_spec_to_json(e), "round trip");
  EXPECT_EQ(back.lookup, e.lookup);
  auto says = [](const std::string& json, const std::string& what) {
    const std::string err = test::error_of([&] { parse_engine_spec(nlohmann::json::parse(json), "e.json"); });
    EXPECT_NE(err.find(what), std::string::npos) << "expected '" << what << "' in: " << err;
  };
  says(R"({"name":"e","overhead":{"lookup":{"eagle3":1e-5}}})", "drafts with a model");
  says(R"({"name":"e","overhead":{"lookup":{"ngram":{"threads":0}}}})", "'threads' must be in [1, 4096]");
  says(R"({"name":"e","overhead":{"lookup":{"ngram":{"per_token_s":1}}}})", "unknown field 'per_token_s'");
  says(R"({"name":"e","overhead":{"lookup":{"ngram":{"per_sequence_s":-1}}}})", "'per_sequence_s' must be >= 0");
  says(R"({"name":"e","overhead":{"lookup":{"ngarm":1e-5}}})", "did you mean ngram");
  says(R"({"name":"e","overhead":{"lookup":[1]}})", "must be an object {method:");
}

// A step that finds no match drafts nothing: 1 + h·K tokens verified, AL = 1 + h·(AL − 1).
TEST(DraftFree, MatchRateScalesTheVerifyAndTheAl) {
  Scenario s = lookup_scenario(Method::ngram, "vllm", 5, 0.8);
  const Prediction full = predict(s);
  s.match_rate = 0.5;
  s.acceptance = with_match_rate(iid_acceptance(0.8), 0.5);
  const Prediction half = predict(s);
  EXPECT_DOUBLE_EQ(half.step.verify_tokens, 1 + 0.5 * 5);
  EXPECT_NEAR(half.tokens_per_step, 1 + 0.5 * (full.tokens_per_step - 1), 1e-12);
  EXPECT_LT(half.step.verify_s, full.step.verify_s);
  EXPECT_LT(half.speedup, full.speedup);
  EXPECT_NEAR(s.acceptance->expected_tokens(5) - s.acceptance->expected_tokens(4), 0.5 * std::pow(0.8, 5), 1e-12)
      << "P(accepted >= d) scales by the match rate";
  s.match_rate = 0;
  s.acceptance = with_match_rate(iid_acceptance(0.8), 0);
  const Prediction none = predict(s);
  EXPECT_DOUBLE_EQ(none.tokens_per_step, 1.0);
  EXPECT_DOUBLE_EQ(none.step.verify_tokens, 1.0);
  EXPECT_LT(none.speedup, 1.0) << "a lookup that never matches costs its host time for nothing";
  EXPECT_NEAR(none.step.verify_s, predict([&] {
                Scenario q = s;
                q.plan = DraftPlan{};
                return q;
              }()).step.verify_s,
              1e-15);

  Scenario eagle = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  eagle.match_rate = 0.5;
  EXPECT_NE(test::error_of([&] { predict(eagle); }).find("draft-free"), std::string::npos);
  s.match_rate = 1.5;
  EXPECT_NE(test::error_of([&] { predict(s); }).find("must be in [0, 1]"), std::string::npos);
}

TEST(DraftFree, TreesVerifyTheirNodesAndNeedATreeEngine) {
  Scenario s = lookup_scenario(Method::ngram_tree, "sglang", 5);
  s.plan.nodes = 16;
  const Prediction p = predict(s);
  EXPECT_DOUBLE_EQ(p.step.verify_tokens, 17.0);
  EXPECT_EQ(p.tree_nodes, 16);
  EXPECT_EQ(p.k, 5);
  EXPECT_DOUBLE_EQ(p.tokens_per_step, leviathan_expected_tokens(0.7, 5));
  s.plan.nodes = 3;  // a tree of 3 nodes is at most 3 deep
  EXPECT_DOUBLE_EQ(predict(s).tokens_per_step, leviathan_expected_tokens(0.7, 3));
  s.plan.nodes = 16;
  s.plan.k = 5;
  const Prediction chain = predict(lookup_scenario(Method::ngram, "specdec-cpu", 5));
  s.engine = SpecLibrary().engine("specdec-cpu");
  EXPECT_GT(predict(s).step.verify_s, chain.step.verify_s) << "a tree of 16 nodes costs more rows than a chain of 5";

  Scenario on_vllm = lookup_scenario(Method::ngram_tree, "vllm");
  EXPECT_NE(test::error_of([&] { predict(on_vllm); }).find("does not run method ngram-tree"), std::string::npos);
  on_vllm.engine.methods.clear();  // runs every method, but verifies chains only
  EXPECT_NE(test::error_of([&] { predict(on_vllm); }).find("its chain form is ngram"), std::string::npos);
  Scenario with_tree = lookup_scenario(Method::ngram, "vllm");
  with_tree.plan.tree = builtin_tree("chain3");
  EXPECT_NE(test::error_of([&] { predict(with_tree); }).find("is draft-free"), std::string::npos);
}

TEST(DraftFree, BestKEvaluatesOnlyWhatTheAcceptanceAnswers) {
  Scenario s = lookup_scenario(Method::ngram, "vllm");
  s.acceptance = table_acceptance({{3, 1.37}, {5, 1.40}});
  const BestK b = best_k(s, {1, 2, 3, 4, 5, 6});
  ASSERT_EQ(b.all.size(), 2u);
  EXPECT_EQ(b.all[0].k, 3);
  EXPECT_EQ(b.all[1].k, 5);
  EXPECT_EQ(b.skipped.size(), 4u);
  EXPECT_EQ(b.best.step.draft_s, 0.0);
  // ngram-tree with 4 nodes: K = 6 needs depth 4 only.
  Scenario t = lookup_scenario(Method::ngram_tree, "sglang");
  t.plan.nodes = 4;
  t.acceptance = acceptance_by_depth({0.8, 0.6, 0.5, 0.4});
  const BestK bt = best_k(t, {2, 4, 6});
  EXPECT_EQ(bt.all.size(), 3u);
  t.plan.nodes = 8;
  const BestK bt8 = best_k(t, {2, 4, 6});
  EXPECT_EQ(bt8.all.size(), 2u);
  ASSERT_EQ(bt8.skipped.size(), 1u);
  EXPECT_NE(bt8.skipped[0].reason.find("has no AL for it"), std::string::npos);
}

TEST(DraftFree, PoliciesAreRefused) {
  const Scenario s = lookup_scenario(Method::ngram, "vllm");
  const std::string e = test::error_of([&] { price_fixed_depths(s); });
  EXPECT_NE(e.find("is draft-free"), std::string::npos) << e;
}

// Every bundled draft-free spec's categories say who measured them (or whose prior they are); every
// engine that runs a draft-free method prices its lookup and cites it.
TEST(DraftFree, BundledSpecsNameTheirSources) {
  SpecLibrary lib;
  int categories = 0;
  for (const auto& n : lib.names("drafters")) {
    const DrafterSpec d = lib.drafter_spec(n);
    if (!draft_free(d.method)) continue;
    SCOPED_TRACE("drafter " + n);
    EXPECT_EQ(n, method_name(d.method)) << "the bundled spec of a draft-free method is named after it (--method finds it)";
    for (const auto& [name, c] : d.categories) {
      ++categories;
      EXPECT_TRUE(c.kind == "measured" || c.kind == "prior") << name;
      EXPECT_GT(c.source.size(), 40u) << name << ": who measured it, or whose prior it is";
      EXPECT_FALSE(c.description.empty()) << name;
      ASSERT_TRUE(c.model) << name;
      const AcceptancePtr a = c.acceptance(d.name);
      EXPECT_NE(a->describe().find("category '" + name + "'"), std::string::npos);
      EXPECT_NE(a->describe().find("(" + c.kind + ")"), std::string::npos);
    }
  }
  EXPECT_GE(categories, 6);
  for (const auto& n : lib.names("engines")) {
    const EngineSpec e = lib.engine(n);
    const auto sources = read_json_file(lib.find("engines", n)).at("sources");
    for (int i = 0; i < kPricedMethods; ++i) {
      const Method m = Method(i);
      if (!draft_free(m) || e.methods.empty() || !e.runs(m)) continue;
      SCOPED_TRACE(n + " runs " + method_name(m));
      EXPECT_GT(e.lookup_cost(method_name(m)).seconds(1, 1000, 2), 0.0);
      EXPECT_TRUE(sources.contains("lookup"));
    }
  }
  EXPECT_TRUE(lib.engine("vllm").runs(Method::ngram));
  EXPECT_TRUE(lib.engine("vllm").runs(Method::suffix));
  EXPECT_FALSE(lib.engine("vllm").runs(Method::prompt_lookup));
  EXPECT_TRUE(lib.engine("sglang").runs(Method::ngram_tree));
  EXPECT_FALSE(lib.engine("sglang").runs(Method::ngram));
  EXPECT_TRUE(lib.engine("tensorrt-llm").runs(Method::ngram));
  EXPECT_TRUE(lib.engine("hf-eager").runs(Method::prompt_lookup));
  EXPECT_TRUE(lib.engine("hf-eager").runs(Method::peagle)) << "the methods list keeps what it ran before";
  EXPECT_FALSE(lib.engine("transformers-neuronx").runs(Method::ngram));
}

TEST(DraftFree, SpecErrorsNameTheField) {
  auto says = [](const std::string& json, const std::string& what) {
    const std::string err = test::error_of([&] { parse_drafter_spec(nlohmann::json::parse(json), "d.json"); });
    EXPECT_NE(err.find(what), std::string::npos) << "expected '" << what << "' in: " << err;
  };
  says(R"({"name":"n","method":"ngram","config":{}})", "field 'config' does not apply");
  says(R"({"name":"n","method":"eagle3","categories":{},"default_category":"mt-bench"})",
       "field 'default_category' names 'mt-bench', which is not one of its categories (none)");
  says(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"measured","alpha":0.5}}})", "field 'source' is required");
  says(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"guess","source":"s","alpha":0.5}}})", "'kind' must be");
  says(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"prior","source":"s","alpha":0.5,"acceptance":[0.5]}}})",
       "exactly one of");
  says(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"prior","source":"s","acceptance_table":{"x":2}}}})",
       "maps K (an integer key)");
  says(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"prior","source":"s","acceptance_table":{"2":4}}}})",
       "d.json (categories.c): acceptance-length table: AL at K = 2 must be in [1, 3]");
  says(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"prior","source":"s","alpha":0.5,"match_rate":2}}})",
       "'match_rate' must be in [0, 1]");
  // A measured AL on a dynamic tree: the setting and the AL together, within the tree's depth.
  const std::string dyn = R"({"name":"n","method":"eagle3","categories":{"c":{"kind":"measured","source":"s",)";
  says(dyn + R"("dynamic_tree":[60,7,10]}}})", "'tree' (a built-in tree's name) or 'dynamic_tree'");
  says(dyn + R"("dynamic_tree":[60,7],"al":3}}})", "field 'dynamic_tree' must be [total_tokens, depth, top_k]");
  says(dyn + R"("dynamic_tree":[60,0,10],"al":3}}})", "field 'dynamic_tree' must hold integers in [1, ");
  says(dyn + R"("dynamic_tree":[60,7,10],"al":9}}})", "'al' must be in [1, 8] (the dynamic tree's depth is 7");
  says(dyn + R"("dynamic_tree":[60,7,10],"tree":"chain4","al":3}}})", "exactly one of");
  const DrafterSpec measured = parse_drafter_spec(nlohmann::json::parse(dyn + R"("dynamic_tree":[60,7,10],"al":5.6}}})"), "d.json");
  EXPECT_EQ(measured.category("c").tree_label(), "dynamic tree 60/7/10");
  EXPECT_DOUBLE_EQ(measured.category("c").al, 5.6);
  const DrafterSpec d = parse_drafter_spec(
      nlohmann::json::parse(R"({"name":"n","method":"ngram","categories":{"c":{"kind":"prior","source":"s","alpha":0.5}}})"), "d.json");
  EXPECT_NE(test::error_of([&] { d.category("x"); }).find("it has: c (prior)"), std::string::npos);
}

// A measured row of a draft-free method needs no drafter and may give its match rate.
TEST(DraftFree, MeasuredRowsNeedNoDrafter) {
  SpecLibrary lib;
  const auto j = nlohmann::json::parse(R"({"hardware": "h100-sxm", "engine": "vllm", "source": "test",
      "defaults": {"model": "llama-3.1-8b", "batch": 1},
      "rows": [{"method": "sequential", "tpot_ms": 7.1},
               {"method": "ngram", "k": 5, "acceptance_length": 3.07, "match_rate": 0.576, "tpot_ms": 2.5}]})");
  const CalibrationSet set = parse_calibration_json(j, "set.json", lib);
  ASSERT_EQ(set.rows.size(), 2u);
  const Scenario& s = set.rows[1].scenario;
  EXPECT_EQ(s.plan.method, Method::ngram);
  EXPECT_FALSE(s.drafter);
  EXPECT_DOUBLE_EQ(s.match_rate, 0.576);
  const CalibrationResult r = evaluate_calibration(set, platform_for(set, lib));
  EXPECT_GT(r.rows[1].predicted_s, 0.0);
  auto bad = j;
  bad["rows"][1]["method"] = "eagle3";
  bad["rows"][1]["drafter"] = "eagle3-llama3.1-8b";
  EXPECT_NE(test::error_of([&] { parse_calibration_json(bad, "set.json", lib); }).find("'match_rate'"), std::string::npos);
}

// ---- the command ----

struct CommandResult {
  int code = 0;
  std::string out;
};
CommandResult simulate(std::vector<std::string> args) {
  std::ostringstream out, err;
  cli::CommandIO io{out, err};
  CommandResult r;
  r.code = cli::run_simulate(args, io);
  r.out = out.str();
  return r;
}
std::string simulate_error(std::vector<std::string> args) {
  return test::error_of([&] { simulate(args); });
}
std::vector<std::string> base_args(std::vector<std::string> more) {
  std::vector<std::string> a = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(DraftFree, CommandTakesTheAcceptanceFromTheCategory) {
  const CommandResult r = simulate(base_args({"--method", "ngram", "--category", "blazedit", "--k", "5", "--json"}));
  ASSERT_EQ(r.code, 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& p = j["prediction"];
  const double h = 0.576, drafted = 0.81 + 0.74 + 0.70 + 0.68 + 0.66;
  EXPECT_NEAR(p["acceptance_length"].get<double>(), 1 + h * drafted, 1e-9);
  EXPECT_NEAR(p["verify_tokens_per_sequence"].get<double>(), 1 + h * 5, 1e-12);
  EXPECT_EQ(p["draft_ms"].get<double>(), 0.0);
  EXPECT_GT(p["lookup_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["scenario"]["engine"], "vllm");
  EXPECT_EQ(j["scenario"]["category"], "blazedit");
  EXPECT_TRUE(j["scenario"]["draft_free"].get<bool>());
  EXPECT_NE(j["scenario"]["acceptance"].get<std::string>().find("category 'blazedit' of ngram (measured)"), std::string::npos);

  // Another category, another acceptance: chat repeats the prompt far less than code edits.
  const auto chat = nlohmann::json::parse(
      simulate(base_args({"--method", "ngram", "--category", "magpie-turn1", "--k", "5", "--json"})).out);
  EXPECT_DOUBLE_EQ(chat["prediction"]["acceptance_length"].get<double>(), 1.40);
  EXPECT_DOUBLE_EQ(chat["prediction"]["verify_tokens_per_sequence"].get<double>(), 6.0) << "no match rate: K + 1";
  EXPECT_LT(chat["prediction"]["speedup"].get<double>(), p["speedup"].get<double>());

  // --match-rate overrides the category's share of drafting steps.
  const auto half = nlohmann::json::parse(
      simulate(base_args({"--method", "ngram", "--category", "blazedit", "--match-rate", "0.5", "--k", "5", "--json"})).out);
  EXPECT_NEAR(half["prediction"]["acceptance_length"].get<double>(), 1 + 0.5 * drafted, 1e-9);
  EXPECT_NEAR(half["prediction"]["verify_tokens_per_sequence"].get<double>(), 3.5, 1e-12);

  // The table says where the lookup goes.
  const CommandResult t = simulate(base_args({"--method", "ngram", "--category", "blazedit", "--k", "5", "--breakdown"}));
  EXPECT_NE(t.out.find("draft-free: no drafter forward"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("of which draft lookup (host)"), std::string::npos);
  EXPECT_NE(t.out.find("overhead draft_lookup"), std::string::npos);
  EXPECT_EQ(t.out.find("draft lm_head"), std::string::npos);
}

TEST(DraftFree, CommandErrorsSayWhatIsMissing) {
  auto says = [](std::vector<std::string> args, const std::string& what) {
    const std::string e = simulate_error(base_args(args));
    EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "' in: " << e;
  };
  says({"--method", "ngram"}, "give --category (ngram's: blazedit (measured), magpie-turn1 (measured)");
  says({"--method", "ngram-tree", "--engine", "sglang"}, "give --category (ngram-tree's: none)");
  says({"--method", "ngram", "--category", "chat"}, "no prompt category 'chat'; it has: blazedit (measured)");
  says({"--method", "ngram", "--category", "magpie-turn1", "--k", "4"}, "K = 3, 5");
  says({"--method", "ngram", "--category", "blazedit", "--alpha", "0.5"}, "not both");
  says({"--drafter", "eagle3-llama3.1-8b", "--category", "blazedit"},
       "drafter 'eagle3-llama3.1-8b' has no prompt category 'blazedit'; it has: eagle3-paper-mt-bench (measured), "
       "vllm-issue-20780 (measured)");
  says({"--drafter", "eagle3-llama3.1-8b", "--match-rate", "0.5", "--alpha", "0.7"}, "is for draft-free methods");
  says({"--method", "ngram", "--engine", "sglang", "--alpha", "0.6"}, "does not run method ngram (it runs: draft, eagle, eagle3, ngram-tree, mtp)");
  says({"--method", "prompt-lookup", "--category", "spec-bench", "--k", "10"}, "engine 'vllm' does not run method prompt-lookup");
  says({"--method", "ngram", "--alpha", "0.6", "--tree", "chain3"}, "is draft-free");
  says({"--method", "ngram", "--alpha", "0.6", "--policy", "fixed"}, "is draft-free");
  says({"--method", "ngram,n_mni=2", "--alpha", "0.6"}, "n_mni");
  says({"--method", "ngram", "--alpha", "0.6", "--match-rate", "1.5"}, "must be in [0, 1]");
}

TEST(DraftFree, CommandSearchesK) {
  const auto j = nlohmann::json::parse(simulate(base_args({"--method", "ngram", "--category", "translation-trtllm",
                                                           "--engine", "tensorrt-llm", "--best-k", "5-23", "--json"}))
                                           .out);
  EXPECT_EQ(j["by_k"].size(), 9u) << "K = 7, 9, ..., 23: what the category measured";
  EXPECT_EQ(j["skipped"].size(), 10u);
  const int best = j["best_k"];
  EXPECT_EQ(best % 2, 1);
  for (const auto& row : j["by_k"]) {
    EXPECT_EQ(row["draft_ms"].get<double>(), 0.0);
    EXPECT_GE(row["tpot_ms"].get<double>(), j["prediction"]["tpot_ms"].get<double>() - 1e-12);
  }
  const auto b = nlohmann::json::parse(
      simulate(base_args({"--method", "ngram", "--category", "blazedit", "--best-k", "8", "--json"})).out);
  EXPECT_EQ(b["by_k"].size(), 5u) << "acceptance by depth measured to K = 5";
  const auto tree = nlohmann::json::parse(simulate(base_args({"--method", "ngram-tree,nodes=16", "--engine", "sglang",
                                                              "--alpha", "0.6", "--best-k", "4", "--json"}))
                                              .out);
  for (const auto& row : tree["by_k"]) {
    EXPECT_EQ(row["tree_nodes"], 16);
    EXPECT_DOUBLE_EQ(row["verify_tokens_per_sequence"].get<double>(), 17.0);
  }
  // Sweeps take draft-free drafters by name.
  const CommandResult sweep = simulate({"--sweep", "-", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "none,ngram",
                              "--k", "2,4", "--alphas", "0.6"});
  EXPECT_NE(sweep.out.find(",ngram,ngram,4,"), std::string::npos) << sweep.out;
  const CommandResult list = simulate({"--list"});
  EXPECT_NE(list.out.find("categories of ngram (--category): blazedit (measured)"), std::string::npos) << list.out;
}

}  // namespace
}  // namespace specdec::sim
