// Independent evaluation (simulator/evaluation): published speedups predicted from the specs
// alone, every field of a row reaching the scenario, every refusal, and the reserved sets.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "simulator/calibration.hpp"
#include "simulator/evaluation.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/tree_shape.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

nlohmann::json one_row_set(nlohmann::json row) {
  return {{"source", "test set"}, {"reserved", true}, {"rows", nlohmann::json::array({row})}};
}

nlohmann::json base_row() {
  return {{"model", "llama-3.1-8b"}, {"method", "eagle3"},     {"drafter", "eagle3-llama3.1-8b"},
          {"k", 3},                  {"hardware", "h100-sxm"}, {"engine", "sglang"},
          {"batch", 4},              {"prompt_len", 200},      {"output_len", 300},
          {"acceptance_length", 2.8}, {"speedup", 2.0}};
}

// The speedup the predictor gives the scenario the row describes, built here by hand.
double hand_built_speedup() {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("llama-3.1-8b");
  s.hardware = lib.hardware("h100-sxm");
  s.engine = lib.engine("sglang");
  s.drafter = lib.drafter("eagle3-llama3.1-8b", s.target);
  s.plan.method = Method::eagle3;
  s.plan.k = 3;
  s.workload.batch = 4;
  s.workload.prompt_len = 200;
  s.workload.output_len = 300;
  s.measured_tokens_per_step = 2.8;
  return predict(s, false).speedup;
}

TEST(Evaluation, EveryRowFieldReachesTheScenario) {
  SpecLibrary lib;
  const double expected = hand_built_speedup();
  nlohmann::json row = base_row();
  row["speedup"] = expected * 1.25;  // published 25% above the prediction
  const EvaluationSet set = parse_evaluation_json(one_row_set(row), "t", lib);
  ASSERT_EQ(set.rows.size(), 1u);
  EXPECT_TRUE(set.reserved);
  const EvaluationResult r = evaluate_published(set);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].predicted_speedup, expected);
  EXPECT_NEAR(r.rows[0].relative_error, 1.0 / 1.25 - 1.0, 1e-12);
  EXPECT_EQ(r.rows[0].hardware, "h100-sxm");
  EXPECT_EQ(r.rows[0].engine, "sglang");
  EXPECT_DOUBLE_EQ(r.rows[0].acceptance_length, 2.8);
  EXPECT_NEAR(r.rms_log_error, std::log(1.25), 1e-12);
  EXPECT_NEAR(r.mean_error, 1.0 / 1.25 - 1.0, 1e-12);
  EXPECT_NEAR(r.mean_abs_error, std::fabs(1.0 / 1.25 - 1.0), 1e-12);

  // A different batch, K or AL changes the prediction (each field is read).
  for (auto [field, value] : {std::pair<const char*, nlohmann::json>{"batch", 64}, {"k", 5}, {"acceptance_length", 3.5},
                              {"output_len", 4000}, {"engine", "hf-eager"}, {"hardware", "a100-80gb-sxm"}}) {
    nlohmann::json changed = base_row();
    changed[field] = value;
    const double p = evaluate_published(parse_evaluation_json(one_row_set(changed), "t", lib)).rows[0].predicted_speedup;
    EXPECT_NE(p, expected) << "changing '" << field << "' left the prediction unchanged";
  }
}

TEST(Evaluation, ThroughputPairsTreesAndOverrides) {
  SpecLibrary lib;
  nlohmann::json row = base_row();
  row.erase("speedup");
  row["throughput"] = 300.0;
  row["baseline_throughput"] = 120.0;
  EXPECT_DOUBLE_EQ(parse_evaluation_json(one_row_set(row), "t", lib).rows[0].published_speedup, 2.5);

  nlohmann::json tree = base_row();
  tree.erase("k");
  tree["tree"] = "mc_sim_7b_63";
  const auto t = parse_evaluation_json(one_row_set(tree), "t", lib).rows[0].scenario.plan;
  ASSERT_TRUE(t.tree.has_value());
  EXPECT_EQ(t.tree->size(), builtin_tree("mc_sim_7b_63").size());
  EXPECT_EQ(t.dynamic_depth, 0);

  nlohmann::json dyn = base_row();
  dyn.erase("k");
  dyn["dynamic_tree"] = {60, 6, 10};
  const auto d = parse_evaluation_json(one_row_set(dyn), "t", lib).rows[0].scenario.plan;
  ASSERT_TRUE(d.tree.has_value());
  EXPECT_EQ(d.tree->size(), 59);  // total tokens count the root
  EXPECT_EQ(d.tree->max_depth(), 6);
  EXPECT_EQ(d.dynamic_depth, 6);
  EXPECT_EQ(d.dynamic_top_k, 10);

  // Set-level hardware/engine fill rows that name none; the overrides replace every row's.
  nlohmann::json bare = base_row();
  bare.erase("hardware");
  bare.erase("engine");
  nlohmann::json set = one_row_set(bare);
  set["hardware"] = "b200";
  set["engine"] = "vllm";
  EvaluationSet s = parse_evaluation_json(set, "t", lib);
  EXPECT_EQ(s.rows[0].scenario.hardware.name, "b200");
  EXPECT_EQ(s.rows[0].scenario.engine.name, "vllm");
  s = parse_evaluation_json(one_row_set(base_row()), "t", lib, "a100-80gb-sxm", "hf-eager");
  EXPECT_EQ(s.rows[0].scenario.hardware.name, "a100-80gb-sxm");
  EXPECT_EQ(s.rows[0].scenario.engine.name, "hf-eager");
  // No engine anywhere: the hardware kind's default.
  nlohmann::json no_engine = base_row();
  no_engine.erase("engine");
  EXPECT_EQ(parse_evaluation_json(one_row_set(no_engine), "t", lib).rows[0].scenario.engine.name, "vllm");
}

TEST(Evaluation, RowsWithoutASpecAreListedNotEvaluated) {
  SpecLibrary lib;
  nlohmann::json set = one_row_set(base_row());
  set["rows"].push_back({{"label", "Qwen2-7B EAGLE-2"}, {"missing_spec", "no model spec for Qwen2-7B"}});
  const EvaluationSet s = parse_evaluation_json(set, "t", lib);
  EXPECT_EQ(s.rows.size(), 1u);
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0].label, "Qwen2-7B EAGLE-2");
  EXPECT_EQ(s.skipped[0].reason, "no model spec for Qwen2-7B");
  const EvaluationResult r = evaluate_published(s);
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.skipped.size(), 1u);
  const EvaluationResult pooled = pool_evaluations({r, r});
  EXPECT_EQ(pooled.rows.size(), 2u);
  EXPECT_EQ(pooled.skipped.size(), 2u);
  EXPECT_DOUBLE_EQ(pooled.max_abs_error, r.max_abs_error);
}

TEST(Evaluation, EveryBadRowIsRefusedNamingTheProblem) {
  SpecLibrary lib;
  auto refuse = [&](nlohmann::json row, const std::string& expected) {
    const std::string e = error_of([&] { parse_evaluation_json(one_row_set(row), "set.json", lib); });
    EXPECT_NE(e.find(expected), std::string::npos) << "expected '" << expected << "' in: " << e;
    EXPECT_NE(e.find("set.json row 0"), std::string::npos) << e;
  };
  // Each case: fields removed from the base row, fields set on it, and what the error must say.
  struct Case {
    std::vector<std::string> erase;
    nlohmann::json set;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"method"}, nlohmann::json::object(), "'method' is missing"},
      {{}, {{"method", "sequential"}}, "has no speedup"},
      {{"k"}, nlohmann::json::object(), "exactly one draft shape"},
      {{}, {{"tree", "mc_sim_7b_63"}}, "exactly one draft shape"},
      {{"k"}, {{"dynamic_tree", {60, 6}}}, "[total_tokens, depth, top_k]"},
      {{"k"}, {{"tree", 5}}, "list of rank paths"},
      {{}, {{"acceptance_length", 4.5}}, "'acceptance_length' must be in [1, 4]"},  // K = 3: at most 4
      {{"acceptance_length"}, nlohmann::json::object(), "acceptance_length"},
      {{}, {{"throughput", 10.0}}, "exactly one of 'speedup' and the pair"},
      {{"speedup"}, {{"throughput", 10.0}}, "baseline_throughput"},
      {{}, {{"speedup", -1.0}}, "speedup"},
      {{"hardware"}, nlohmann::json::object(), "no hardware"},
      {{}, {{"speedup_percent", 3}}, "speedup_percent"},
      {{}, {{"k", 0}}, "'k' must be >= 1"},
  };
  for (const Case& c : cases) {
    nlohmann::json r = base_row();
    for (const auto& f : c.erase) r.erase(f);
    for (const auto& [k, v] : c.set.items()) r[k] = v;
    SCOPED_TRACE("row " + r.dump());
    refuse(r, c.expected);
  }
  nlohmann::json r = base_row();
  r["drafter"] = "eagle1-llama3-8b";  // an EAGLE-1 head for an eagle3 row
  EXPECT_NE(error_of([&] { parse_evaluation_json(one_row_set(r), "set.json", lib); }), "");

  EXPECT_NE(error_of([&] { parse_evaluation_json({{"rows", nlohmann::json::array()}}, "s", lib); }).find("non-empty"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_evaluation_json(nlohmann::json::array(), "s", lib); }).find("expected an object"),
            std::string::npos);
  test::TempDir dir;
  EXPECT_NE(error_of([&] { load_evaluation_sets(dir.path(), lib); }).find("holds no .json sets"), std::string::npos);
}

TEST(Evaluation, ReservedSetsCannotBeCalibratedAgainst) {
  SpecLibrary lib;
  nlohmann::json set = {{"hardware", "h100-sxm"},
                        {"reserved", true},
                        {"rows", {{{"model", "llama-3.1-8b"}, {"tpot_ms", 7.0}}}}};
  EXPECT_NE(error_of([&] { parse_calibration_json(set, "paper.json", lib); }).find("reserved for independent evaluation"),
            std::string::npos);
  set["reserved"] = false;
  EXPECT_EQ(error_of([&] { parse_calibration_json(set, "paper.json", lib); }), "");
  // Every bundled evaluation set is reserved, so none can be fitted by mistake.
  for (const auto& e : std::filesystem::directory_iterator(test::source_dir() / "simulator/evaluation")) {
    if (e.path().extension() != ".json") continue;
    EXPECT_NE(error_of([&] { load_calibration_set(e.path(), lib); }).find("reserved"), std::string::npos) << e.path();
  }
}

// The bundled sets: each loads, is reserved, names its source, quotes every row it evaluates, and
// gives a finite prediction for each.
TEST(Evaluation, BundledSetsLoadAndQuoteTheirSources) {
  SpecLibrary lib;
  const auto dir = test::source_dir() / "simulator/evaluation";
  const auto sets = load_evaluation_sets(dir, lib);
  ASSERT_GE(sets.size(), 3u);
  size_t rows = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    const nlohmann::json j = read_json_file(e.path());
    EXPECT_TRUE(j.value("reserved", false)) << e.path();
    EXPECT_GT(j.value("source", std::string()).size(), 40u) << e.path() << ": the source should be a full citation";
    for (const auto& r : j.at("rows"))
      EXPECT_TRUE(r.contains("quote") || r.contains("missing_spec")) << e.path() << ": " << r.dump();
  }
  for (const auto& s : sets) {
    const EvaluationResult r = evaluate_published(s);
    for (const auto& row : r.rows) {
      EXPECT_TRUE(std::isfinite(row.predicted_speedup) && row.predicted_speedup > 0) << s.source << ": " << row.label;
      ++rows;
    }
  }
  EXPECT_GE(rows, 20u);
}

}  // namespace
}  // namespace specdec::sim
