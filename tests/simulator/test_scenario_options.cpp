// The simulate options' one builder: each check written once, its message naming options in the
// caller's spelling (the command line's --acceptance-by-depth, Python's acceptance_by_depth).
#include <gtest/gtest.h>

#include "simulator/capacity_planning.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/simulate_modes.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

TEST(ScenarioOptions, SpellingsNameOptionsAndSettings) {
  EXPECT_EQ(kCommandLineSpelling("acceptance-by-depth"), "--acceptance-by-depth");
  EXPECT_EQ(kKeywordSpelling("acceptance-by-depth"), "acceptance_by_depth");
  EXPECT_EQ(kCommandLineSpelling("tp", "16"), "--tp 16");
  EXPECT_EQ(kKeywordSpelling("tp", "16"), "tp=16");
  EXPECT_EQ(kKeywordSpelling.list({"k", "tree", "dynamic-tree"}), "k, tree or dynamic_tree");
  EXPECT_EQ(kCommandLineSpelling.list({"capacity-rate", "tpot-target-ms"}, "and"), "--capacity-rate and --tpot-target-ms");
  // An option a caller names otherwise (Python's specdec.calibrate takes measured= for --calibrate).
  const OptionSpelling calibrate = kKeywordSpelling.renaming({{"calibrate", "measured"}});
  EXPECT_EQ(calibrate("calibrate"), "measured");
  EXPECT_EQ(calibrate("calibrate-traces"), "calibrate_traces");
  EXPECT_EQ(calibrate("calibrate", "a.json"), "measured=a.json");
  EXPECT_EQ(kKeywordSpelling("calibrate"), "calibrate");
}

ScenarioOptions eagle1() {
  ScenarioOptions o;
  o.model = "vicuna-7b";
  o.hardware = "a100-80gb-sxm";
  o.engine = "sglang";
  o.drafter = "eagle1-vicuna-7b";
  return o;
}

// The message of `o` in both spellings: the same words, the options named each caller's way.
void says_in_both(const ScenarioOptions& o, const std::string& command_line, const std::string& keywords) {
  const SpecLibrary specs;
  for (const auto& [spelling, want] : {std::pair{kCommandLineSpelling, command_line}, std::pair{kKeywordSpelling, keywords}}) {
    const std::string e = test::error_of([&, &sp = spelling] {
      const SimulateResult r = simulate_modes(o, build_scenario(o, specs, sp), sp);
      if (o.capacity) run_capacity_planning(o, r.built.scenario, specs, sp);
    });
    EXPECT_NE(e.find(want), std::string::npos) << "expected '" << want << "' in: " << e;
  }
}

TEST(ScenarioOptions, MessagesNameOptionsInTheCallersSpelling) {
  ScenarioOptions o = eagle1();
  o.alpha = 0.8;
  o.al = 3.0;
  says_in_both(o, "give one acceptance model: --alpha, --acceptance, --acceptance-table, --acceptance-by-depth, --synthetic-al, "
                  "--tree-acceptance, --trace or --al",
               "give one acceptance model: alpha, acceptance, acceptance_table, acceptance_by_depth, synthetic_al, "
               "tree_acceptance, trace or al");
  o = eagle1();
  o.tree = "mc_sim_7b_63";
  o.acceptance_by_depth = std::vector<double>{0.8, 0.6};
  says_in_both(o, "--acceptance-by-depth gives 2 depths, the tree has 5", "acceptance_by_depth gives 2 depths, the tree has 5");
  o = eagle1();
  o.alpha = 0.8;
  o.best_k = std::vector<int>{2, 4};
  o.tree = "mc_sim_7b_63";
  says_in_both(o, "--best-k searches draft shapes under an acceptance model; it cannot be combined with --tree or --dynamic-tree",
               "best_k searches draft shapes under an acceptance model; it cannot be combined with tree or dynamic_tree");
  o = eagle1();
  o.alpha = 0.8;
  o.capacity = CapacityOptions{};
  o.capacity->capacity_rate = 3;
  says_in_both(o, "capacity planning needs both --capacity-rate and --tpot-target-ms",
               "capacity planning needs both capacity_rate and tpot_target_ms");
  o.capacity->tpot_target_ms = 40;
  o.capacity->tp = std::vector<int>{1, 16};
  says_in_both(o, "--tp 16 exceeds the 8 devices of one a100-80gb-sxm instance", "tp=16 exceeds the 8 devices");
  // The queueing settings: checked once, in capacity planning, named as each caller spells them.
  o.capacity->tp = std::vector<int>{1};
  o.capacity->max_utilization = 1;
  says_in_both(o, "--max-utilization: must be a number > 0 and < 1", "max_utilization: must be a number > 0 and < 1");
  o.capacity->max_utilization = kDefaultMaxUtilization;
  o.capacity->output_len_cv = -1;
  says_in_both(o, "--output-len-cv: the coefficient of variation of output lengths must be a number in [0, 4] (0: every output is "
                  "--output-len tokens",
               "output_len_cv: the coefficient of variation of output lengths must be a number in [0, 4] (0: every output is "
               "output_len tokens");
  o.capacity->output_len_cv = 0;
  o.capacity->ttft_percentile = 100;
  says_in_both(o, "--ttft-percentile: must be a number between 0 and 100 (exclusive)",
               "ttft_percentile: must be a number between 0 and 100 (exclusive)");
  o = eagle1();
  o.category = "chat";
  says_in_both(o, "--category: drafter 'eagle1-vicuna-7b' has no prompt category 'chat'", "category: drafter 'eagle1-vicuna-7b'");
  o = eagle1();
  o.drafter.reset();
  o.method = "eagle";
  says_in_both(o, "--method eagle needs --drafter (bundled eagle drafters: ", "method=eagle needs drafter (bundled eagle drafters: ");
}

// What a category's measured AL is (part of the result) reads the same to every caller.
TEST(ScenarioOptions, ResultsNameNoOption) {
  ScenarioOptions o = eagle1();
  o.engine = "hf-eager";
  const SpecLibrary specs;
  const BuiltScenario cli = build_scenario(o, specs, kCommandLineSpelling), py = build_scenario(o, specs, kKeywordSpelling);
  EXPECT_TRUE(cli.category_default);
  EXPECT_EQ(cli.category, "mt-bench");
  EXPECT_EQ(cli.measured_note, py.measured_note);
  EXPECT_EQ(cli.measured_note.find("--"), std::string::npos) << cli.measured_note;
  EXPECT_EQ(simulate_json(simulate_modes(o, cli, kCommandLineSpelling), false),
            simulate_json(simulate_modes(o, py, kKeywordSpelling), false));
}

TEST(ScenarioOptions, BestKUpToN) {
  EXPECT_EQ(best_k_up_to(3, kKeywordSpelling), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(best_k_up_to(0, kKeywordSpelling), (std::vector<int>{0})) << "kept for the search to refuse";
  EXPECT_NE(test::error_of([] { best_k_up_to(1000, kKeywordSpelling); }).find("best_k: K is 1000, more than specdec supports"),
            std::string::npos);
}

}  // namespace
}  // namespace specdec::sim
