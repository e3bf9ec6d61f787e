#pragma once
// `specdec bench`: measured performance of every backend and method on this machine — memory
// read bandwidth, sequential decode speed against the bandwidth limit, verify-forward cost
// against the number of tokens verified, drafter cost per step, end-to-end tokens/s and the
// speedup of every method and of the optimized backend over the reference (docs/benchmarks.md).
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/bench/bench_models.hpp"
#include "experiments/bench/read_bandwidth.hpp"
#include "reference/acceptance/forced_acceptor.hpp"
#include "reference/methods/method_spec.hpp"
#include "reference/policies/policy_spec.hpp"

namespace specdec::bench {

struct BenchOptions {
  std::vector<std::string> backends = {"reference"};
  std::vector<MethodSpec> methods;    // sequential is always measured (the decode table)
  int tokens = 32;                    // new tokens per decode
  int prompt_length = 16;             // random prompt tokens (the context of every measurement)
  int repeat = 3;                     // runs per measurement; the fastest counts
  int max_verify = 64;                // verify-cost table: 1, 2, 4, ... up to this
  int threads = 0;                    // 0 = the OpenMP default
  std::vector<int> accepted;          // replayed accepted drafts per step; empty = the real greedy rule
  std::string acceptance = "greedy";  // what `accepted` came from, for the tables
  // Forced acceptance (ForcedAcceptor) instead of the greedy rule; not with `accepted`. The
  // outputs are then not the model's text.
  std::optional<ForcedAcceptance> forced;
  // --policy: each speculative run's draft depth per step (reference/policies; fixed: the whole shape).
  PolicySpec policy;
  std::size_t bandwidth_bytes = 0;    // 0 = twice the last-level cache, 256 MiB to 1 GiB
  int bandwidth_passes = 5;           // per probe; probed once, then before every decode run after the first
  uint64_t seed = 0;                  // prompt tokens
};

struct DecodeRow {
  std::string backend, precision;
  double weight_bytes_per_token = 0;  // one single-token forward's weight reads
  double tokens_per_s = 0;            // sequential greedy decode, best run
  double achieved_bytes_per_s = 0;    // weight_bytes_per_token × tokens_per_s
  double bandwidth_fraction = 0;      // achieved / measured read bandwidth
};

struct VerifyRow {
  std::string backend;
  int tokens = 0;       // T tokens verified in one forward after the prompt
  double ms = 0;        // best run
  double ratio = 0;     // ms / ms at T = 1
};

struct MethodRow {
  std::string backend, method, shape, drafter, acceptance;
  int steps = 0;                     // verification steps of the best run
  double acceptance_length = 0;      // tokens per step, bonus included (sequential: 1)
  double mean_draft_depth = 0;       // depth drafted per step under the policy (sequential: 0)
  double drafter_ms_per_step = 0;
  double drafter_forwards_per_step = 0;
  double drafter_per_target_forward = 0;  // drafter ms per step / one-token target forward ms
  double verify_ms_per_step = 0;
  double tokens_per_s = 0;           // decode tokens per second (after the prefill)
  double speedup = 0;                // over sequential decoding on the same backend
  double over_reference = std::numeric_limits<double>::quiet_NaN();  // over the same method on the reference
};

struct BenchReport {
  std::string model;      // BenchModels::description
  std::string precision;
  std::string cpu_isa;  // the cpu backend's kernel path (runtime/backend.hpp cpu_kernel_path); "" when not measured
  ReadBandwidth bandwidth;
  BenchOptions options;
  std::vector<DecodeRow> decode;
  std::vector<VerifyRow> verify;
  std::vector<MethodRow> methods;
  // What makes this run's timings unreliable: other processes busy on this machine's cores when
  // it began, repeats of one measurement more than 20% apart.
  std::vector<std::string> warnings;
};

// Runs every measurement; progress lines go to `progress` when given. Throws specdec::Error for
// invalid options (tokens < 1, repeat < 1, both accepted and forced, ...) or a method whose
// drafter is missing.
BenchReport run_bench(const BenchModels& models, const BenchOptions& options, std::ostream* progress = nullptr);

// "greedy", "replayed from FILE" or "forced al=2.5": the acceptance every method row used.
std::string acceptance_label(const BenchOptions& options);
// Whether the decoded tokens are the target's own (false under replayed or forced acceptance).
bool output_meaningful(const BenchOptions& options);

// The three tables, for a terminal.
void print_bench(const BenchReport& report, std::ostream& out);
nlohmann::json bench_json(const BenchReport& report);
std::string decode_csv(const BenchReport& report);
std::string verify_csv(const BenchReport& report);
std::string methods_csv(const BenchReport& report);
// bench.json, decode.csv, verify_cost.csv and methods.csv in `dir` (created if missing), each
// written atomically.
void write_bench(const BenchReport& report, const std::filesystem::path& dir);

}  // namespace specdec::bench
