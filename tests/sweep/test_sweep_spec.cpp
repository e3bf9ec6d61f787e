// Sweep specs: grid expansion (blocks, normalisation, repeated configurations once, spec order),
// sharding (every run in exactly one shard), errors naming the field, and the summary statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "experiments/sweep/cell_summary.hpp"
#include "experiments/sweep/results_store.hpp"
#include "experiments/sweep/sweep_spec.hpp"
#include "reference/core/error.hpp"

namespace specdec::sweep {
namespace {

using json = nlohmann::json;

json base_spec() {
  return json::parse(R"({"model": "models/target", "prompts": {"set": "heldout", "per_category": 2}, "max_new_tokens": 8,
                         "grid": []})");
}

// The error text of parsing `j`, or "" when it parses.
std::string error_of(const json& j) {
  try {
    parse_sweep_spec(j, "spec.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SweepSpec, ExpandsBlocksInOrderAndNormalises) {
  json j = base_spec();
  j["grid"] = json::parse(R"([
      {"method": "sequential", "sampling": "greedy", "temperature": [0.5, 1.0]},
      {"method": ["draft", "eagle1"], "k": [1, 2]},
      {"method": "eagle", "tree": "dynamic", "depth": 3, "tree_top_k": 2, "total_tokens": 8, "k": [1, 2]},
      {"method": "eagle", "tree": [[0], [1], [0, 0]]},
      {"method": "peagle", "k": 3, "sampling": "sample", "temperature": [0.5, 1], "seed": "prompt"}])");
  const SweepSpec s = parse_sweep_spec(j, "spec.json");
  // Greedy ignores the temperature and a dynamic tree ignores k, so those collapse to one cell.
  ASSERT_EQ(s.cells.size(), 1u + 4u + 1u + 1u + 2u);
  EXPECT_EQ(s.cells[0].key(), R"({"backend":"reference","method":"sequential","sampling":"greedy"})");
  EXPECT_EQ(s.cells[1].method.name, "draft");
  EXPECT_EQ(s.cells[1].method.k, 1);
  EXPECT_EQ(s.cells[2].method.k, 2);
  EXPECT_EQ(s.cells[3].method.name, "eagle") << "eagle1 is the same method as eagle";
  EXPECT_EQ(s.cells[3].drafter, "models/eagle1") << "default drafter: the bundled layout beside the model";
  EXPECT_EQ(s.cells[1].drafter, "models/draft");
  EXPECT_EQ(s.cells[5].label(), "eagle tree=dynamic depth=3 top_k=2 total_tokens=8 greedy");
  EXPECT_EQ(s.cells[6].method.tree, "[[0],[1],[0,0]]") << "an inline tree is one value";
  EXPECT_EQ(s.cells[7].seed, -1);
  EXPECT_EQ(s.cells[7].label(), "peagle k=3 sample T=0.5 seed=prompt");
  EXPECT_EQ(s.prompts.size(), 4u);
  EXPECT_EQ(s.run_count(), 9 * 4);
  EXPECT_EQ(s.cell_of(5).key(), s.cells[1].key());
  EXPECT_EQ(s.prompt_of(5).id, s.prompts[1].id);
}

TEST(SweepSpec, BundledPromptSetsByName) {
  json j = base_spec();
  j["grid"] = json::parse(R"([{"method": "sequential"}])");
  j["prompts"] = json::parse(R"([{"set": "context", "per_category": 1}, {"set": "heldout", "per_category": 1}])");
  const SweepSpec s = parse_sweep_spec(j, "spec.json");
  ASSERT_EQ(s.prompts.size(), 3u + 2u);
  EXPECT_EQ(s.prompts[0].set, "context");
  EXPECT_EQ(s.prompts[0].id, "prose-repeat-0");
  EXPECT_EQ(s.prompts[3].set, "heldout");
  j["prompts"] = "context";
  EXPECT_EQ(parse_sweep_spec(j, "spec.json").prompts.size(), 24u);
  j["prompts"] = json::parse(R"({"set": "mtbench"})");
  EXPECT_NE(error_of(j).find("spec.json: prompts.set: the bundled sets are \"heldout\" and \"context\""), std::string::npos)
      << error_of(j);
}

TEST(SweepSpec, DraftersFromTheSpec) {
  json j = base_spec();
  j["drafters"] = {{"eagle1", "elsewhere/head"}};
  j["grid"] = {{"method", "eagle"}};
  EXPECT_EQ(parse_sweep_spec(j, "spec.json").cells[0].drafter, "elsewhere/head");
}

TEST(SweepSpec, ErrorsNameTheField) {
  struct Case {
    const char* name;
    json grid;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"unknown axis", json::parse(R"({"method": "eagle", "kk": 3})"), "unknown axis 'kk'"},
      {"K below one", json::parse(R"({"method": "eagle", "k": [2, 0]})"), "--k must be >= 1"},
      {"unknown method", json::parse(R"({"method": "hydra"})"), "unknown method 'hydra'; known methods: sequential, draft"},
      {"misspelt method", json::parse(R"({"method": "eagel3"})"), "did you mean eagle3?"},
      {"bad sampling", json::parse(R"({"method": "sequential", "sampling": "beam"})"), "beam"},
      {"empty list", json::parse(R"({"method": []})"), "grid.method: empty list"},
      {"wrong type", json::parse(R"({"method": "eagle", "k": "four"})"), "grid.k[0]: expected an integer"},
      {"bad seed", json::parse(R"({"method": "sequential", "sampling": "sample", "seed": -3})"), "non-negative integer or \"prompt\""},
      {"no cells", json::array(), "no cells"},
  };
  for (const Case& c : cases) {
    json j = base_spec();
    j["grid"] = c.grid;
    const std::string e = error_of(j);
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.name << ": got '" << e << "'";
    EXPECT_NE(e.find("spec.json"), std::string::npos) << c.name << ": the message names the file: " << e;
  }
  json j = base_spec();
  j["grid"] = {{"method", "eagle"}};
  j["predict"] = {{"hardware", "h100-sxm"}, {"model", "llama-3.1-8b"}};
  EXPECT_NE(error_of(j).find("predict.drafters has no simulator drafter spec for method 'eagle'"), std::string::npos) << error_of(j);
  j = base_spec();
  j["grid"] = {{"method", "sequential"}};
  j["max_new_tokens"] = 0;
  EXPECT_NE(error_of(j).find("max_new_tokens must be >= 1"), std::string::npos) << error_of(j);
  j["max_new_tokens"] = 4;
  j["grdi"] = 1;
  EXPECT_NE(error_of(j).find("unknown field 'grdi'"), std::string::npos) << error_of(j);
}

TEST(SweepShard, EveryRunInExactlyOneShard) {
  for (int n = 1; n <= 5; ++n) {
    std::vector<int> owners(23, 0);
    std::vector<int> sizes(n, 0);
    for (int i = 1; i <= n; ++i) {
      const Shard s = parse_shard(std::to_string(i) + "/" + std::to_string(n));
      for (int r = 0; r < 23; ++r)
        if (s.owns(r)) ++owners[r], ++sizes[i - 1];
    }
    for (int r = 0; r < 23; ++r) EXPECT_EQ(owners[r], 1) << "run " << r << " with " << n << " shards";
    EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()) - *std::min_element(sizes.begin(), sizes.end()), 1) << n << " shards";
  }
  for (const char* bad : {"0/3", "4/3", "1/0", "2", "a/b", "1/2x", ""}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos) << bad << ": " << e.what();
    }
  }
}

// The concurrency axis: a cell at concurrency 1 keeps the key and label it always had; above 1 the
// key and label say it, and its runs go whole to one shard.
TEST(SweepSpec, ConcurrencyAxis) {
  json j = base_spec();
  j["grid"] = json::parse(R"({"method": "sequential", "concurrency": [1, 4]})");
  const SweepSpec s = parse_sweep_spec(j, "spec.json");
  ASSERT_EQ(s.cells.size(), 2u);
  EXPECT_EQ(s.cells[0].key(), R"({"backend":"reference","method":"sequential","sampling":"greedy"})");
  EXPECT_EQ(s.cells[0].label(), "sequential greedy");
  EXPECT_EQ(s.cells[1].concurrency, 4);
  EXPECT_EQ(s.cells[1].key(), R"({"backend":"reference","concurrency":4,"method":"sequential","sampling":"greedy"})");
  EXPECT_EQ(s.cells[1].label(), "sequential greedy B=4");
  for (const char* bad : {R"({"method": "sequential", "concurrency": 0})", R"({"method": "sequential", "concurrency": 5000})"}) {
    j["grid"] = json::parse(bad);
    const std::string e = error_of(j);
    EXPECT_NE(e.find("concurrency must be in [1, 4096]"), std::string::npos) << e;
    EXPECT_NE(e.find("spec.json: grid"), std::string::npos) << e;
  }
  j["grid"] = json::parse(R"({"method": "sequential", "concurrency": "many"})");
  EXPECT_NE(error_of(j).find("grid.concurrency[0]: expected an integer"), std::string::npos) << error_of(j);
  // Shards: the 4 runs of a batched cell (cell 1: runs 4..7) stay together; others round robin.
  for (int n = 1; n <= 3; ++n) {
    for (int r = 0; r < 8; ++r) {
      int owners = 0;
      for (int i = 1; i <= n; ++i) owners += shard_owns(Shard{i, n}, r, 4, r >= 4);
      EXPECT_EQ(owners, 1) << "run " << r << " of " << n << " shards";
    }
    for (int i = 1; i <= n; ++i) {
      const Shard sh{i, n};
      for (int r = 5; r < 8; ++r) EXPECT_EQ(shard_owns(sh, r, 4, true), shard_owns(sh, 4, 4, true));
    }
  }
}

// The policy axis: lists of spec strings and objects expand like methods and Ks; "fixed" (given or
// not) keeps the key, label and manifest cell a sweep had before policies; methods without a
// drafter have no depth to choose, so their policy cells collapse into one.
TEST(SweepSpec, PolicyAxis) {
  json j = base_spec();
  j["grid"] = json::parse(R"([{"method": ["eagle", "sequential"], "k": 8,
      "policy": ["fixed", "hf-heuristic", {"policy": "trtllm", "window": 8, "threshold": 0.3, "probe": 16}, "vllm-batch,window=4"]},
      {"method": "eagle", "k": 8}])");
  const SweepSpec s = parse_sweep_spec(j, "spec.json");
  ASSERT_EQ(s.cells.size(), 5u) << "4 EAGLE policies, sequential once; the second block repeats the fixed cell";
  const std::string old_key = R"({"backend":"reference","drafter":"models/eagle1","k":8,"method":"eagle","sampling":"greedy","tree":"chain"})";
  EXPECT_EQ(s.cells[0].key(), old_key) << "the key a fixed cell had before the policy axis";
  EXPECT_EQ(s.cells[0].label(), "eagle k=8 greedy");
  EXPECT_TRUE(is_fixed_policy(s.cells[0].policy));
  EXPECT_EQ(s.cells[1].policy.name, "hf-heuristic");
  EXPECT_EQ(s.cells[1].label(), "eagle k=8 policy=hf-heuristic greedy");
  EXPECT_EQ(s.cells[1].to_json()["policy"]["policy"], "hf-heuristic");
  EXPECT_EQ(s.cells[2].label(), "eagle k=8 policy=trtllm,probe=16,threshold=0.3,window=8 greedy");
  EXPECT_EQ(s.cells[2].to_json()["policy"]["window"], 8);
  EXPECT_EQ(s.cells[3].policy, parse_policy_spec("vllm-batch,window=4"));
  EXPECT_EQ(s.cells[4].key(), R"({"backend":"reference","method":"sequential","sampling":"greedy"})");
  EXPECT_EQ(s.cells[4].label(), "sequential greedy");
  for (size_t a = 0; a < s.cells.size(); ++a)
    for (size_t b = a + 1; b < s.cells.size(); ++b) EXPECT_NE(s.cells[a].key(), s.cells[b].key());
  // The policy sits after the method's shape: policies of one K are adjacent cells.
  j["grid"] = json::parse(R"({"method": "draft", "k": [2, 4], "policy": ["p-min", "goodput"]})");
  const SweepSpec t = parse_sweep_spec(j, "spec.json");
  ASSERT_EQ(t.cells.size(), 4u);
  EXPECT_EQ(t.cells[0].label(), "draft k=2 policy=p-min greedy");
  EXPECT_EQ(t.cells[1].label(), "draft k=2 policy=goodput greedy");
  EXPECT_EQ(t.cells[2].label(), "draft k=4 policy=p-min greedy");
}

// Results directories of sweeps started before the policy axis stay valid: their manifest's cells
// (here as such a version wrote them) are what the same spec expands to now.
TEST(SweepSpec, FixedPolicyKeepsOldManifests) {
  json j = base_spec();
  j["grid"] = json::parse(R"([{"method": "sequential"}, {"method": "eagle", "k": [1, 3]},
      {"method": "draft", "k": 2, "sampling": "sample", "temperature": 0.8, "seed": "prompt"},
      {"method": "eagle3", "tree": "dynamic", "depth": 2, "tree_top_k": 2, "total_tokens": 5, "concurrency": 2}])");
  const json old_cells = json::parse(R"([
      {"backend":"reference","method":"sequential","sampling":"greedy"},
      {"backend":"reference","drafter":"models/eagle1","k":1,"method":"eagle","sampling":"greedy","tree":"chain"},
      {"backend":"reference","drafter":"models/eagle1","k":3,"method":"eagle","sampling":"greedy","tree":"chain"},
      {"backend":"reference","drafter":"models/draft","k":2,"method":"draft","sampling":"sample","seed":"prompt","temperature":0.8,"top_k":0,"top_p":1.0,"tree":"chain"},
      {"backend":"reference","concurrency":2,"depth":2,"drafter":"models/eagle3","method":"eagle3","sampling":"greedy","total_tokens":5,"tree":"dynamic","tree_top_k":2}])");
  const SweepSpec s = parse_sweep_spec(j, "spec.json");
  const json cells = make_manifest(s, Shard{})["cells"];
  EXPECT_EQ(cells, old_cells) << cells.dump();
  // "policy": "fixed" given explicitly expands to the same cells.
  for (json& block : j["grid"]) block["policy"] = "fixed";
  EXPECT_EQ(make_manifest(parse_sweep_spec(j, "spec.json"), Shard{})["cells"], old_cells);
}

TEST(SweepSpec, PolicyErrorsNameTheEntryAndField) {
  struct Case {
    const char* name;
    json grid;
    std::vector<const char*> expected;
  };
  const std::vector<Case> cases = {
      {"misspelt policy", json::parse(R"([{"method": "sequential"}, {"method": "eagle", "policy": ["fixed", "hf-heuristc"]}])"),
       {"spec.json: grid[1].policy[1]", "unknown policy 'hf-heuristc'", "did you mean hf-heuristic?"}},
      {"unknown parameter", json::parse(R"({"method": "eagle", "policy": {"policy": "trtllm", "windw": 8}})"),
       {"spec.json: grid.policy[0]", "no parameter 'windw'", "did you mean window?"}},
      {"out of range", json::parse(R"({"method": "eagle", "policy": "trtllm,window=-1"})"),
       {"spec.json: grid.policy[0]", "parameter window", "expected an integer in"}},
      {"not KEY=VALUE", json::parse(R"({"method": "eagle", "policy": "p-min,0.3"})"), {"grid.policy[0]", "is not KEY=VALUE"}},
      {"wrong type", json::parse(R"({"method": "eagle", "policy": 3})"), {"grid.policy[0]", "expected a policy"}},
      {"object without name", json::parse(R"({"method": "eagle", "policy": {"window": 3}})"), {"grid.policy[0]", "{\"policy\": NAME"}},
      {"empty list", json::parse(R"({"method": "eagle", "policy": []})"), {"grid.policy: empty list"}},
  };
  for (const Case& c : cases) {
    json j = base_spec();
    j["grid"] = c.grid;
    const std::string e = error_of(j);
    for (const char* x : c.expected) EXPECT_NE(e.find(x), std::string::npos) << c.name << ": '" << x << "' not in '" << e << "'";
  }
}

// Rows of a results directory: one per (cell, prompt); tokens/s in timing.
json oracle_row(int64_t cell, const std::string& prompt, double tps, double al) {
  return {{"cell", cell}, {"prompt_set", "q"}, {"prompt_id", prompt}, {"category", "c"}, {"acceptance_length", al},
          {"target_forwards", 10}, {"drafter_forwards", 20}, {"timing", {{"tokens_per_s", tps}}}};
}

TEST(CellSummary, PerPromptOracleOverFixedK) {
  const json cells = json::parse(R"([
      {"method": "eagle", "k": 1, "tree": "chain", "sampling": "greedy"},
      {"method": "eagle", "k": 2, "tree": "chain", "sampling": "greedy"},
      {"method": "eagle", "k": 4, "tree": "chain", "sampling": "greedy"},
      {"method": "eagle", "k": 4, "tree": "chain", "sampling": "greedy", "policy": {"policy": "hf-heuristic"}},
      {"method": "draft", "k": 2, "tree": "chain", "sampling": "greedy"},
      {"method": "sequential", "sampling": "greedy"}])");
  // Prompt a: K=2 fastest; b: K=4; c: a tie between K=1 and 4 (the smaller wins); d lacks K=4.
  const std::vector<json> rows = {
      oracle_row(0, "a", 10, 1.5), oracle_row(0, "b", 11, 1.4), oracle_row(0, "c", 30, 1.2), oracle_row(0, "d", 99, 1),
      oracle_row(1, "a", 20, 2.0), oracle_row(1, "b", 12, 1.9), oracle_row(1, "c", 20, 1.5), oracle_row(1, "d", 99, 1),
      oracle_row(2, "a", 15, 2.5), oracle_row(2, "b", 40, 3.0), oracle_row(2, "c", 30, 2.0),
      oracle_row(3, "a", 100, 2.0), oracle_row(4, "a", 100, 2.0), oracle_row(5, "a", 100, 1.0)};
  const json o = fixed_k_oracle(cells, rows);
  ASSERT_EQ(o.size(), 1u) << "the policy cell, a single-K method and sequential form no K axis: " << o.dump();
  EXPECT_EQ(o[0]["method"], "eagle");
  EXPECT_FALSE(o[0]["config"].contains("k"));
  EXPECT_EQ(o[0]["ks"], json::parse("[1, 2, 4]"));
  EXPECT_EQ(o[0]["prompts"], 3) << "d has no K=4 row: left out";
  EXPECT_DOUBLE_EQ(o[0]["tokens_per_s"]["mean"].get<double>(), (20 + 40 + 30) / 3.0);
  EXPECT_DOUBLE_EQ(o[0]["acceptance_length"]["mean"].get<double>(), (2.0 + 3.0 + 1.2) / 3.0);
  EXPECT_DOUBLE_EQ(o[0]["k"]["mean"].get<double>(), (2 + 4 + 1) / 3.0);
  EXPECT_EQ(o[0]["chosen"][0]["prompt_id"], "a");
  EXPECT_EQ(o[0]["chosen"][0]["k"], 2);
  EXPECT_EQ(o[0]["chosen"][2]["k"], 1) << "a tie keeps the smaller K";
  EXPECT_EQ(o[0]["k_histogram"], json::parse(R"({"1": 1, "2": 1, "4": 1})"));
  EXPECT_EQ(o[0]["best_fixed"]["k"], 4) << "mean over a, b, c: K=1 17, K=2 17.3, K=4 28.3";
  EXPECT_TRUE(fixed_k_oracle(json::array({cells[5]}), {rows.back()}).empty());
}

TEST(CellSummary, NoIntervalFromOnePrompt) {
  const MeanCI one = mean_ci({2.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_EQ(one.mean, 2.5);
  EXPECT_FALSE(one.sd.has_value()) << "one prompt says nothing about spread";
  EXPECT_FALSE(one.ci95.has_value());
  EXPECT_TRUE(one.few());
  const json j = mean_ci_json({2.5});
  EXPECT_TRUE(j["sd"].is_null()) << j.dump();
  EXPECT_TRUE(j["ci95"].is_null()) << j.dump();
  EXPECT_EQ(j["few"], true) << j.dump();
  EXPECT_EQ(mean_ci({}).n, 0);
}

TEST(CellSummary, TwoPromptsGiveTheirRangeNotAStudentIntervalPastTheBounds) {
  // The case that drew acceptance lengths of -1.45..8.50: Student's t at n = 2 (12.7 standard
  // errors) leaves the quantity's range; the bootstrap's resampled means are means of the values.
  const MeanCI m = mean_ci({1.0, 8.0});
  ASSERT_TRUE(m.ci95.has_value());
  EXPECT_EQ(m.ci95->first, 1.0);
  EXPECT_EQ(m.ci95->second, 8.0);
  EXPECT_NEAR(*m.sd, 4.9497475, 1e-6);
  EXPECT_EQ(mean_ci_json({1.0, 8.0})["few"], true);
}

TEST(CellSummary, BootstrapIntervalsStayInsideTheValuesAndAreReproducible) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 30);
    std::vector<double> v(n);
    for (double& x : v) x = 1.0 + static_cast<double>(rng() % 1000) / 125.0;  // an AL in [1, 9)
    const MeanCI m = mean_ci(v);
    const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    ASSERT_TRUE(m.ci95.has_value()) << "seed 7, trial " << trial;
    EXPECT_GE(m.ci95->first, lo) << "seed 7, trial " << trial << ", n " << n;
    EXPECT_LE(m.ci95->second, hi) << "seed 7, trial " << trial << ", n " << n;
    EXPECT_LE(m.ci95->first, m.mean) << "seed 7, trial " << trial;
    EXPECT_GE(m.ci95->second, m.mean) << "seed 7, trial " << trial;
    EXPECT_EQ(m.few(), n < kFewPrompts);
    const MeanCI again = mean_ci(v);
    EXPECT_EQ(again.ci95, m.ci95) << "seed 7, trial " << trial << ": a fixed stream, the same interval";
  }
}

TEST(CellSummary, BootstrapWidthMatchesTheNormalTheoryAtModerateN) {
  // 16 values 0..15: sd 4.76, standard error 1.19; a 95% interval is about ±1.96 standard errors
  // (the bootstrap's is a little narrower: it uses the plug-in sd). The fixed stream gives 5.25..9.625,
  // as analysis/sweep_results.py computes too.
  std::vector<double> v;
  for (int i = 0; i < 16; ++i) v.push_back(i);
  const MeanCI m = mean_ci(v);
  const double se = *m.sd / 4.0;
  const double half = (m.ci95->second - m.ci95->first) / 2;
  EXPECT_GT(half, 1.6 * se);
  EXPECT_LT(half, 2.2 * se);
  EXPECT_EQ(m.ci95->first, 5.25);
  EXPECT_EQ(m.ci95->second, 9.625);
}

TEST(CellSummary, SmallSampleWarningNamesTheSmallestGroup) {
  json summary = {{"groups", json::array({{{"prompts", 8}}, {{"prompts", 1}}, {{"prompts", 3}}})}};
  const std::string w = small_sample_warning(summary);
  EXPECT_NE(w.find("2 of 3 summary groups have fewer than 5 prompts (smallest: 1)"), std::string::npos) << w;
  EXPECT_NE(w.find("no interval"), std::string::npos) << w;
  summary["groups"] = json::array({{{"prompts", 5}}});
  EXPECT_EQ(small_sample_warning(summary), "");
}

}  // namespace
}  // namespace specdec::sweep
