#pragma once
// Sweeps: the Cartesian product of hardware (with its engine) × model × drafter × K × batch × TP × layout
// (attention DP × EP) × acceptance × prompt/output lengths, predicted and written as CSV or HDF5 (one 1-D dataset per column).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/option_spelling.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

struct SweepSpec {
  std::vector<std::string> hardware;   // names or paths
  std::vector<std::string> models;     // names or config.json paths
  std::vector<std::string> drafters;   // drafter names/paths; "none" = sequential
  std::vector<int> ks = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int> batches = {1};
  std::vector<int> tps = {1};
  // The layouts over each TP's devices (simulator/parallelism.hpp): a combination the engines do not
  // run (D not dividing the TP, EP neither 1 nor the TP, EP on a dense target) is skipped with its reason.
  std::vector<int> dp_attentions = {1}, eps = {1};
  std::vector<int> prompt_lens = {512};
  std::vector<int> output_lens = {256};
  std::vector<double> alphas = {0.8};  // i.i.d. acceptance; ignored when `acceptance` is set
  AcceptancePtr acceptance;            // one fixed acceptance model instead of alphas
  std::string dtype;                   // empty = each model's
  std::string engine;                  // engine name/path for every hardware; empty = each kind's default
  std::string engine_version;          // the engines' release (host_work range); empty = the current
  // A head (EAGLE, P-EAGLE, MTP, Medusa) whose spec names its target is paired with that model only,
  // unless any_target: a head trained on one model's hidden states says nothing about another's.
  // Draft LMs pair with any model of their vocabulary.
  bool any_target = false;
};

struct SweepRow {
  std::string hardware, engine, model, drafter, method;
  int k = 0, batch = 1, tp = 1, dp_attention = 1, ep = 1, prompt_len = 0, output_len = 0;
  double alpha = 0;  // NaN-free: 0 when a fixed acceptance model was used
  bool moe = false;  // the target routes to experts (the pivot explains where that moves the speedup)
  Prediction prediction;
};

struct SweepSummary {
  size_t scenarios = 0;  // predicted
  size_t skipped = 0;    // invalid combinations (e.g. drafter does not fit the model, tp too large)
  std::vector<std::string> skip_reasons;  // first few distinct reasons
};

// Calls `emit` for each predicted row (in a fixed nesting order). Sequential rows are emitted once
// per (hardware, model, batch, tp, layout, lengths), with k = 0 and alpha = 0. Skip reasons name options as
// `spelling` writes them.
SweepSummary run_sweep(const SweepSpec& spec, const SpecLibrary& specs, const std::function<void(const SweepRow&)>& emit,
                       const OptionSpelling& spelling = kCommandLineSpelling);

// The columns of a row, in the files' order: five strings, then numbers.
std::vector<std::string> sweep_columns();
// One row as an object with the files' columns and values (k, batch, tp, the layout and the lengths integers,
// fits_memory a boolean).
nlohmann::json sweep_row_json(const SweepRow& row);
// {"columns": sweep_columns(), "rows": [sweep_row_json...], "scenarios", "skipped", "skip_reasons"}.
nlohmann::json sweep_json(const std::vector<SweepRow>& rows, const SweepSummary& summary);
// Throws unless `path` ends in .csv, .h5 or .hdf5 (what write_sweep writes); `option_spelled` names
// the option that gave it.
void check_sweep_output(const std::filesystem::path& path, const std::string& option_spelled);
// Writes rows atomically; the format follows the extension (.csv, .h5/.hdf5).
void write_sweep(const std::filesystem::path& path, const std::vector<SweepRow>& rows);
void write_sweep_csv(std::ostream& out, const std::vector<SweepRow>& rows);
void write_sweep_hdf5(const std::filesystem::path& path, const std::vector<SweepRow>& rows);
// The speculative rows as readable tables: one block per (hardware, engine, model, drafter, TP and
// layout, lengths, α), K down and batch across, each cell the speedup over sequential decoding (the best
// K of each batch marked), sequential TPOT on the block's first line. At most `max_blocks` blocks
// (the rest counted); a block of a MoE target whose speedup grows with batch says why.
void write_sweep_pivot(std::ostream& out, const std::vector<SweepRow>& rows, size_t max_blocks = 24);

}  // namespace specdec::sim
