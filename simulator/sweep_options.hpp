#pragma once
// The options of `specdec simulate --sweep` and of Python's specdec.simulate_sweep as plain values,
// and the one function that turns them into a SweepSpec (simulator/sweep.hpp): every check of them
// and its message, the options named as the caller spells them (`--alphas`, `alphas`). The command
// line parses its lists into these values, Python converts its arguments; neither checks more.
#include <optional>
#include <string>
#include <vector>

#include "simulator/option_spelling.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/sweep.hpp"

namespace specdec::sim {

struct SweepOptions {
  std::vector<std::string> models, hardware;        // spec names or paths; both required
  std::vector<std::string> drafters = {"none"};     // "none": sequential decoding
  std::vector<int> ks = {kDefaultDraftLength};
  std::vector<int> batches = {1}, tps = {1}, prompt_lens = {512}, output_lens = {256};
  std::vector<int> dp_attentions = {1}, eps = {1};   // the layouts over each TP's devices
  std::vector<double> alphas = {0.8};               // i.i.d. acceptance rates, unless `scenario` gives a model
  std::optional<std::string> engine, engine_version, dtype;
  bool any_target = false;                          // pair every drafter with every model
  // The options of one scenario a sweep takes too: its acceptance model (one of alpha ... trace, in
  // place of `alphas`). A single `alpha`, a measured `al`, a tree and the searches are refused (a
  // sweep prices chains over `ks`).
  ScenarioOptions scenario;
};

// The sweep of the options, checked: both lists of names given, every list non-empty, every value
// within the simulator's bounds, at most one acceptance model. Errors name options as `spelling`
// writes them.
SweepSpec sweep_spec_from_options(const SweepOptions& o, const OptionSpelling& spelling);

}  // namespace specdec::sim
