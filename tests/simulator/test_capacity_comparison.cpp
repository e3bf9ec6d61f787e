// Capacity planning across methods (simulator/capacity_comparison): every drafter planned over
// TP × K × batch for one load, the cheapest across them, each drafter's reason when it cannot be
// planned, and what is every drafter's error (the load, the targets) thrown once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "simulator/capacity_comparison.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// Llama-3.1-70B on H200 at 20 requests/s, TPOT <= 30 ms (the quick start's question).
ScenarioOptions load(std::optional<double> alpha) {
  ScenarioOptions o;
  o.model = "llama-3.1-70b";
  o.hardware = "h200";
  o.prompt_len = 1024;
  o.output_len = 256;
  o.alpha = alpha;
  CapacityOptions c;
  c.capacity_rate = 20;
  c.tpot_target_ms = 30;
  o.capacity = c;
  return o;
}

// Each drafter's entry is its own single-drafter plan, and the answer is the cheapest of them.
TEST(CapacityComparison, EachDrafterIsItsOwnPlanAndTheCheapestWins) {
  const SpecLibrary specs;
  const std::vector<std::string> drafters = {"eagle3-llama3.3-70b", "draft-llama-3.2-1b"};
  const CapacityComparison c = compare_capacity(load(0.75), drafters, specs, kCommandLineSpelling);
  ASSERT_EQ(c.drafters.size(), 2u);
  ASSERT_TRUE(c.best.has_value());
  for (size_t i = 0; i < drafters.size(); ++i) {
    const DrafterCapacity& d = c.drafters[i];
    ASSERT_TRUE(d.planning && d.planning->search.best) << d.drafter << ": " << d.why_not;
    ScenarioOptions one = load(0.75);
    one.drafter = drafters[i];
    const BuiltScenario b = build_scenario(one, specs, kCommandLineSpelling);
    const CapacityPlanning alone = run_capacity_planning(one, b.scenario, specs, kCommandLineSpelling);
    EXPECT_EQ(d.planning->search.best->plan.devices, alone.search.best->plan.devices) << d.drafter;
    EXPECT_EQ(d.planning->search.best->tp, alone.search.best->tp) << d.drafter;
    EXPECT_EQ(d.planning->search.best->k, alone.search.best->k) << d.drafter;
    EXPECT_DOUBLE_EQ(d.planning->search.best->plan.prediction.tpot_s, alone.search.best->plan.prediction.tpot_s) << d.drafter;
    if (i != *c.best)
      EXPECT_FALSE(cheaper_config(*d.planning->search.best, *c.drafters[*c.best].planning->search.best)) << d.drafter;
  }
  // EAGLE-3's head drafts cheaper than a 1B draft model at the same alpha.
  EXPECT_EQ(c.drafters[*c.best].drafter, "eagle3-llama3.3-70b");
  EXPECT_NE(c.note.find("one acceptance model was given for drafters of different methods"), std::string::npos);
  nlohmann::json j;
  capacity_comparison_json(c, j);
  ASSERT_EQ(j["capacity_by_drafter"].size(), 2u);
  EXPECT_EQ(j["capacity_best_drafter"], "eagle3-llama3.3-70b");
  EXPECT_EQ(j["capacity"]["drafter"], "eagle3-llama3.3-70b");
  EXPECT_EQ(j["capacity_by_drafter"][1]["method"], "draft");
  EXPECT_EQ(j["capacity_by_drafter"][1]["capacity"]["devices"], c.drafters[1].planning->search.best->plan.devices);
  EXPECT_TRUE(j.contains("capacity_sequential"));
}

// Without an acceptance model each drafter takes its published default; one without any is kept
// with its reason, and the others are still compared.
TEST(CapacityComparison, PublishedDefaultsAndReasonsPerDrafter) {
  ScenarioOptions o = load(std::nullopt);
  o.engine = "sglang";  // the EAGLE-3 paper's AL is measured on a dynamic tree: an engine that verifies trees
  const CapacityComparison c =
      compare_capacity(o, {"eagle3-llama3.3-70b", "draft-llama-3.2-1b"}, SpecLibrary(), kCommandLineSpelling);
  ASSERT_TRUE(c.best.has_value());
  EXPECT_EQ(c.drafters[*c.best].drafter, "eagle3-llama3.3-70b");
  EXPECT_EQ(c.drafters[0].built->category, "eagle3-paper-mt-bench");
  EXPECT_FALSE(c.drafters[1].planning.has_value());
  EXPECT_NE(c.drafters[1].why_not.find("speculative decoding needs an acceptance model"), std::string::npos) << c.drafters[1].why_not;
  EXPECT_TRUE(c.note.empty()) << "each drafter's own acceptance: " << c.note;
}

TEST(CapacityComparison, ErrorsNameTheOption) {
  const SpecLibrary specs;
  const std::vector<std::string> two = {"eagle3-llama3.3-70b", "draft-llama-3.2-1b"};
  EXPECT_NE(error_of([&] { compare_capacity(load(0.75), {"eagle3-llama3.3-70b"}, specs, kCommandLineSpelling); })
                .find("--drafter: a comparison takes at least two drafters"),
            std::string::npos);
  EXPECT_NE(error_of([&] { compare_capacity(load(0.75), {"ngram", "ngram"}, specs, kCommandLineSpelling); })
                .find("--drafter: 'ngram' is given twice"),
            std::string::npos);
  ScenarioOptions with_method = load(0.75);
  with_method.method = "eagle3";
  EXPECT_NE(error_of([&] { compare_capacity(with_method, two, specs, kCommandLineSpelling); }).find("--method sets one method"),
            std::string::npos);
  ScenarioOptions no_capacity = load(0.75);
  no_capacity.capacity.reset();
  EXPECT_NE(error_of([&] { compare_capacity(no_capacity, two, specs, kCommandLineSpelling); }).find("give --capacity-rate"),
            std::string::npos);
  // The load is every drafter's: its error is thrown, not kept per drafter.
  ScenarioOptions bad_rate = load(0.75);
  bad_rate.capacity->capacity_rate = -1;
  EXPECT_NE(error_of([&] { compare_capacity(bad_rate, two, specs, kCommandLineSpelling); }).find("--capacity-rate"),
            std::string::npos);
  // Nobody plannable: each drafter's reason, in one error.
  const std::string none = error_of([&] { compare_capacity(load(std::nullopt), {"draft-llama-3.2-1b", "nope"}, specs, kCommandLineSpelling); });
  EXPECT_NE(none.find("no drafter could be planned:\n  draft-llama-3.2-1b: "), std::string::npos) << none;
  EXPECT_NE(none.find("\n  nope: "), std::string::npos) << none;
}

}  // namespace
}  // namespace specdec::sim
