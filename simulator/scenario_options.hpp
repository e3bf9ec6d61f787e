#pragma once
// The options of `specdec simulate` and of Python's specdec.simulate / specdec.plan_capacity, as
// plain values, and the one function that turns them into a Scenario: every check of a combination
// of options and every message about one lives here, named in the caller's spelling. The command
// line parses its strings into these values, Python converts its arguments; neither checks more.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/acceptance.hpp"
#include "simulator/capacity.hpp"
#include "simulator/option_spelling.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

// K when none is given (`--k`'s default).
inline constexpr int kDefaultDraftLength = 4;

// `--best-tree TOTALS/DEPTHS/TOP_KS`: the EAGLE-2 settings searched.
struct BestTreeGrid {
  std::vector<int> total_tokens, depths, top_ks;
};

// Capacity planning (`--capacity-rate`, `--tpot-target-ms`, ...): present when either is given; the
// planner says which is missing.
struct CapacityOptions {
  std::optional<double> capacity_rate;   // requests/s
  std::optional<double> tpot_target_ms;
  double ttft_target_ms = 0;             // 0: none
  std::optional<double> price;           // USD per device-hour; unset: the hardware spec's
  std::optional<std::vector<int>> tp;    // TPs searched; unset: powers of two up to one instance
  // The layouts searched at each TP (simulator/capacity.hpp, capacity_layouts): attention DP degrees
  // and EP degrees; unset: every one the TP allows on a mixture-of-experts target, plain TP on a
  // dense one.
  std::optional<std::vector<int>> dp_attention, ep;
  // The queueing estimate (simulator/capacity.hpp): each replica's utilisation cap, in (0, 1); the
  // output lengths' coefficient of variation, in [0, kMaxOutputLenCv] (0: every output is
  // output_len tokens); the percentile of TTFT + wait the TTFT target holds, in (0, 100) (unset:
  // the mean).
  double max_utilization = kDefaultMaxUtilization;
  double output_len_cv = 0;
  // The interarrival times' coefficient of variation of the whole load, in [0, kMaxArrivalCv]
  // (1: Poisson; above 1: bursty); each replica sees its random share (replica_arrival_scv).
  double arrival_cv = 1;
  std::optional<double> ttft_percentile;
};

struct ScenarioOptions {
  std::string model, hardware;                        // spec names or JSON paths
  std::optional<std::string> engine, drafter, method, dtype;
  // The engine's release (a dotted version): selects its host_work range and that range's fitted
  // host terms; unset: the current release.
  std::optional<std::string> engine_version;
  int batch = 1, tp = 1, prompt_len = 512, output_len = 256;
  int dp_attention = 1, ep = 1;                       // the layout over tp's devices (simulator/parallelism.hpp);
                                                      // capacity planning searches capacity's lists instead
  std::optional<int> k;                               // unset: kDefaultDraftLength (capacity planning then searches K)

  // The acceptance model: at most one of alpha ... al.
  std::optional<double> alpha;                        // i.i.d.
  std::optional<std::vector<double>> acceptance;      // per-position conditional rates
  std::optional<std::map<int, double>> acceptance_table;  // measured AL by K
  std::optional<std::vector<double>> acceptance_by_depth;  // measured P(accepted >= d)
  std::optional<double> synthetic_al;                 // an engine's forced mean AL
  std::optional<std::string> tree_acceptance;         // per-depth per-rank probabilities: JSON or a JSON file
  std::optional<std::string> trace;                   // a recorded trace whose accepted lengths are replayed
  std::optional<double> al;                           // the measured AL of exactly this chain or tree
  std::optional<std::string> category;                // a drafter spec's acceptance by name
  std::optional<double> match_rate;                   // draft-free: the share of steps that draft

  // The draft shape when not a chain of K.
  std::optional<std::string> tree;                    // a built-in name, rank paths JSON or a JSON file
  std::optional<std::vector<int>> dynamic_tree;       // TOTAL_TOKENS, DEPTH, TOP_K

  // Modes beyond one prediction.
  std::optional<std::vector<int>> best_k;             // the Ks searched
  std::optional<BestTreeGrid> best_tree;
  std::optional<std::string> batching;                // static | continuous
  bool breakdown = false;
  std::optional<CapacityOptions> capacity;
};

// The scenario with what the printout and the JSON say about where its acceptance came from.
struct BuiltScenario {
  Scenario scenario;
  std::string category;           // the drafter spec's category in use ("" when none)
  bool category_default = false;  // ... taken because no acceptance model was given
  std::string measured_note;      // a category's measured AL: whose and on which tree
  std::string k_note;             // K was not given and the default is beyond the acceptance: the K used, and why
};

// The scenario of the options (K and tree as given; the searches are simulate_modes'), checked:
// at most one acceptance model, a drafter where the method needs one, a tree's acceptance fitting
// the tree, categories where the drafter spec holds them, sizes within the simulator's bounds.
// Errors name options as `spelling` writes them.
BuiltScenario build_scenario(const ScenarioOptions& o, const SpecLibrary& specs, const OptionSpelling& spelling);

// The acceptance model of whichever of alpha, acceptance, acceptance_table, acceptance_by_depth,
// synthetic_al, tree_acceptance and trace is given (null for none or al); more than one of those
// or al is an error. Sweeps take theirs from here too.
AcceptancePtr acceptance_from_options(const ScenarioOptions& o, const OptionSpelling& spelling);

// The best K's list when one number N is given: K = 1..N, N bounded first (an N below 1 is kept,
// for the search to refuse).
std::vector<int> best_k_up_to(int n, const OptionSpelling& spelling);

// Inline JSON (text starting with '[' or '{') or the path of a JSON file, read through the shared
// reader (bounded nesting; a device or pipe at the path is refused, not read).
nlohmann::json json_or_file(const std::string& text, const std::string& option_spelled);

}  // namespace specdec::sim
