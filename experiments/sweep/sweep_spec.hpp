#pragma once
// A sweep specification (a JSON file): the target, the prompt sets and a grid of decoding
// configurations. Expanding it gives the cells (distinct configurations, in spec order) and the
// runs (each cell on each prompt), which is what `specdec sweep` executes, shards and resumes.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/sweep/prompt_set.hpp"
#include "reference/methods/method_spec.hpp"
#include "reference/policies/policy_spec.hpp"

namespace specdec::sweep {

// One decoding configuration of the grid. Fields a configuration does not use are left at their
// defaults and out of its key (a greedy cell has no temperature, a chain no tree depth).
struct Cell {
  MethodSpec method;                  // the method and its shape (reference/methods)
  std::string drafter;                // checkpoint directory; empty for sequential
  std::string sampling = "greedy";    // greedy | sample | coupled
  double temperature = 1.0;
  int top_k = 0;
  double top_p = 1.0;
  int64_t seed = 0;                   // -1: the prompt's index within its category
  std::string backend = "reference";
  // Sequences decoding at once: above 1 the cell's prompts are decoded as one batched run
  // (continuous batching, reference/decoding/batched.hpp) and its rows carry latencies.
  int concurrency = 1;
  // How each step's draft depth is chosen (reference/policies); the method's K or tree depth is its
  // ceiling. "fixed" (the default) is the method's whole shape every step and is left out of the
  // key and label, so the cells of sweeps without the axis keep their keys. Methods without a
  // drafter (sequential) always have "fixed".
  PolicySpec policy;

  // The configuration as JSON with only the fields it uses; its dump is the cell's key.
  nlohmann::json to_json() const;
  std::string key() const { return to_json().dump(); }
  // "eagle k=4 greedy", "eagle3 tree=dynamic depth=7 top_k=10 total_tokens=60 sample T=0.8 seed=1",
  // "eagle k=4 greedy B=8", "eagle k=8 policy=trtllm,threshold=0.3,window=8 greedy".
  std::string label() const;
};

// Whether `p` is the default policy (the method's whole shape every step; it takes no parameters).
inline bool is_fixed_policy(const PolicySpec& p) { return p.name == "fixed"; }

// The simulator setting a sweep re-costs its runs with: a hardware and a target model spec, an
// engine spec (empty: the hardware kind's default), and per method the drafter spec (names or
// paths, as `specdec simulate` takes them).
struct PredictSpec {
  std::string hardware, model, engine;
  nlohmann::json drafters = nlohmann::json::object();  // method -> drafter spec
  int batch = 1;
};

struct SweepSpec {
  std::string source;                 // the spec file, for messages
  nlohmann::json json;                // the spec as read (with --prompts applied): the fingerprint
  std::string model;
  int max_new_tokens = 32;
  bool ignore_eos = true;
  int repeats = 1;                    // timed repetitions of each run (medians are reported)
  int threads = 1;
  std::vector<Prompt> prompts;
  std::vector<Cell> cells;
  bool predict_enabled = false;
  PredictSpec predict;

  int64_t run_count() const { return static_cast<int64_t>(cells.size()) * static_cast<int64_t>(prompts.size()); }
  // Run r is cell r / prompts, prompt r % prompts.
  const Cell& cell_of(int64_t run) const { return cells[run / prompts.size()]; }
  const Prompt& prompt_of(int64_t run) const { return prompts[run % prompts.size()]; }
};

// The spec `j` (read from `source`). `prompts_override`, when not empty, replaces the spec's
// prompt sets with that file (--prompts). Throws specdec::Error naming the field and what it
// expects; every cell is checked as `specdec generate` would check it.
SweepSpec parse_sweep_spec(const nlohmann::json& j, const std::string& source, const std::string& prompts_override = "");
SweepSpec load_sweep_spec(const std::string& path, const std::string& prompts_override = "");

// --shard I/N (1 <= I <= N): run r belongs to shard (r mod N) + 1, so shards are disjoint, cover
// every run, and differ in size by at most one.
struct Shard {
  int index = 1, count = 1;
  bool owns(int64_t run) const { return run % count == index - 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};
// Whether shard `s` runs run `run` (of a sweep with `prompts` prompts): runs are dealt round robin
// (Shard::owns), except the runs of a batched cell (concurrency > 1), which are one batched run and
// go together to the shard that owns the cell's index.
bool shard_owns(const Shard& s, int64_t run, int64_t prompts, bool batched_cell);
Shard parse_shard(const std::string& text);

}  // namespace specdec::sweep
