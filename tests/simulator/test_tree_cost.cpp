// Draft trees cost rows and host work, not depth: a tree step costs more than the chain of its
// depth, a dynamic tree more than a static one of the same levels, each node of a dynamic tree a
// little more; the engine's tree terms are checked and calibration fits them from trees of several
// sizes.
#include <gtest/gtest.h>

#include "simulator/calibration.hpp"
#include "simulator/tree_shape.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

Scenario sglang_eagle3(int batch) {
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 3, 0.7);
  s.engine = SpecLibrary().engine("sglang");
  s.workload.batch = batch;
  s.measured_tokens_per_step = 2.5;  // the same AL, so only the step's cost differs
  return s;
}

TEST(TreeCost, SmallTreesCostMoreThanTheChainOfTheirDepth) {
  for (int batch : {1, 8}) {
    const Scenario chain = sglang_eagle3(batch);
    for (auto [total, top_k] : {std::pair{4, 3}, std::pair{8, 3}, std::pair{8, 4}}) {
      Scenario tree = chain;
      set_dynamic_tree(tree.plan, *tree.acceptance, total, 3, top_k);
      const Prediction c = predict(chain), t = predict(tree);
      EXPECT_GT(t.step.total_s(), c.step.total_s()) << "tree " << total << "/3/" << top_k << " at batch " << batch;
      EXPECT_GT(t.step.overhead_s, c.step.overhead_s) << "the tree's host work";
      // Without the engine's tree terms a tree still costs its rows, but less.
      Scenario bare = tree;
      bare.engine.tree_cost = {};
      EXPECT_LT(predict(bare).step.total_s(), t.step.total_s());
    }
  }
}

TEST(TreeCost, DynamicTreesRebuildEveryStepStaticOnesDoNot) {
  Scenario s = test::scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 5, 0.7);
  s.engine = SpecLibrary().engine("hf-eager");
  s.measured_tokens_per_step = 3.5;
  s.engine.tree_cost = {2e-4, 5e-5, 5e-6};
  Scenario static_tree = s;
  static_tree.plan.tree = builtin_tree("mc_sim_7b_63");
  const Prediction st = predict(static_tree);
  double levels = 0, build = 0;
  for (const OpCost& c : st.step.ops) {
    if (std::string(c.op.name) == "tree_levels") levels += c.total_s;
    if (std::string(c.op.name) == "tree_build") build += c.total_s;
  }
  EXPECT_NEAR(levels, st.step.draft_forwards * 5e-5, 1e-12) << "one top-k of cumulative scores per drafted level";
  EXPECT_EQ(build, 0) << "a static tree's mask and indices are built once, before decoding";

  Scenario small = s, large = s;
  set_dynamic_tree(small.plan, *s.acceptance, 10, 5, 4);
  set_dynamic_tree(large.plan, *s.acceptance, 60, 5, 4);
  double small_build = 0, large_build = 0;
  for (const OpCost& c : predict(small).step.ops)
    if (std::string(c.op.name) == "tree_build") small_build += c.total_s;
  for (const OpCost& c : predict(large).step.ops)
    if (std::string(c.op.name) == "tree_build") large_build += c.total_s;
  EXPECT_NEAR(small_build, 2e-4 + 9 * 5e-6, 1e-12) << "per step plus per node of the 9-node tree";
  EXPECT_NEAR(large_build - small_build, 50 * 5e-6, 1e-12) << "each further node";
  // A chain pays none of it.
  const Prediction chain = predict(s);
  for (const OpCost& c : chain.step.ops) EXPECT_EQ(std::string(c.op.name).rfind("tree_", 0), std::string::npos);
}

TEST(TreeCost, BundledEnginesPriceTrees) {
  SpecLibrary lib;
  for (const char* name : {"sglang", "tensorrt-llm", "hf-eager"}) {
    const TreeCost t = lib.engine(name).tree_cost;
    EXPECT_GT(t.seconds(3, 8, true), 0) << name;
  }
  EXPECT_EQ(lib.engine("ideal").tree_cost.seconds(3, 8, true), 0) << "ideal: the device's time alone";
  // hf-eager's Python loops over nodes make its per-node time the largest.
  EXPECT_GT(lib.engine("hf-eager").tree_cost.per_node_s, lib.engine("sglang").tree_cost.per_node_s);
}

TEST(TreeCost, SpecFieldsAreCheckedAndRoundTrip) {
  const auto parse = [](const std::string& tree) {
    return parse_engine_spec(nlohmann::json::parse(R"({"name": "x", "overhead": {"tree": )" + tree + "}}"), "x.json");
  };
  const EngineSpec e = parse(R"({"per_step_s": 1e-4, "per_level_s": 2e-5, "per_node_s": 3e-6})");
  EXPECT_EQ(e.tree_cost, (TreeCost{1e-4, 2e-5, 3e-6}));
  EXPECT_EQ(parse_engine_spec(engine_spec_to_json(e), "round trip").tree_cost, e.tree_cost);
  EXPECT_EQ(parse(R"({"per_level_s": 2e-5})").tree_cost.per_node_s, 0) << "an absent field is 0";
  auto err = [&](const std::string& tree) { return error_of([&] { parse(tree); }); };
  EXPECT_NE(err(R"({"per_node_s": -1e-6})").find("x.json (overhead.tree): field 'per_node_s' must be >= 0"), std::string::npos)
      << err(R"({"per_node_s": -1e-6})");
  EXPECT_NE(err(R"({"per_node": 1e-6})").find("per_node"), std::string::npos) << "a misspelt field is named";
  EXPECT_NE(err("0.001").find("x.json (overhead.tree): must be an object {per_step_s, per_level_s, per_node_s}"),
            std::string::npos)
      << err("0.001");
  EXPECT_NE(err(R"({"per_step_s": 5})").find("per_step_s"), std::string::npos) << "at most a second";
}

// Step times generated from known tree terms are fitted back from dynamic trees of several sizes.
TEST(TreeCost, CalibrationRecoversTreeTerms) {
  SpecLibrary lib;
  const Platform start{lib.hardware("h100-sxm"), lib.engine("sglang")};
  Platform truth = start;
  truth.engine.tree_cost.per_step_s = 0.3e-3;
  truth.engine.tree_cost.per_node_s = 8e-6;
  nlohmann::json j = {{"hardware", "h100-sxm"},
                      {"engine", "sglang"},
                      {"defaults", {{"model", "llama-3.1-8b"}, {"prompt_len", 256}, {"output_len", 128}}},
                      {"rows", nlohmann::json::array()}};
  j["rows"].push_back({{"method", "sequential"}, {"step_ms", 1.0}});
  for (auto [total, depth, top_k] : {std::tuple{4, 3, 3}, std::tuple{8, 3, 3}, std::tuple{16, 5, 4}, std::tuple{32, 6, 6},
                                     std::tuple{64, 8, 8}})
    j["rows"].push_back({{"method", "eagle3"}, {"drafter", "eagle3-llama3.1-8b"},
                         {"dynamic_tree", {total, depth, top_k}}, {"acceptance_length", 3.0}, {"step_ms", 1.0}});
  CalibrationSet set = parse_calibration_json(j, "synthetic trees", lib);
  for (auto& row : set.rows) row.measured_step_s = predicted_step_s(row, truth);
  const auto defaults = default_fit_parameters(set, start.engine);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "tree_node_s"), defaults.end());
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "tree_step_s"), defaults.end());
  const CalibrationResult r = calibrate(set, start, {"tree_step_s", "tree_node_s"});
  EXPECT_LT(r.max_abs_error, 0.005);
  EXPECT_NEAR(r.engine.tree_cost.per_step_s, 0.3e-3, 0.03e-3);
  EXPECT_NEAR(r.engine.tree_cost.per_node_s, 8e-6, 1e-6);
  EXPECT_THROW(get_parameter(start, "tree_nodes_s"), Error);
}

}  // namespace
}  // namespace specdec::sim
