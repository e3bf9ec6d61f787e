// specdec sweep: an ablation study in one command. `specdec sweep SPEC.json --out DIR` runs every
// (cell, prompt) of the spec's grid that DIR does not hold yet, appending one row per run;
// `--shard I/N` runs every N-th; `specdec sweep merge --out DIR SHARD_DIR...` joins shards.
#include <ostream>

#include "cli/options.hpp"
#include "experiments/sweep/sweep_runner.hpp"
#include "reference/core/error.hpp"

namespace specdec::cli {

namespace {

int run_merge(const std::vector<std::string>& args, CommandIO& io) {
  std::string out;
  std::vector<std::string> shards;
  po::options_description desc("sweep merge options");
  desc.add_options()("out", po::value(&out)->required(), "directory for the merged results (must not hold rows yet)")(
      "shards", po::value(&shards)->multitoken(), "the shard directories (positional)");
  po::positional_options_description pos;
  pos.add("shards", -1);
  if (!parse_options(args, desc, io, "specdec sweep merge --out DIR SHARD_DIR...", &pos)) return 0;
  std::vector<std::filesystem::path> dirs(shards.begin(), shards.end());
  sweep::merge_sweep_shards(dirs, out, io.out);
  return 0;
}

}  // namespace

int run_sweep(const std::vector<std::string>& args, CommandIO& io) {
  if (!args.empty() && args[0] == "merge") return run_merge(std::vector<std::string>(args.begin() + 1, args.end()), io);
  std::string spec_path, out, prompts, shard = "1/1";
  double interval = 30;
  po::options_description desc("sweep options");
  desc.add_options()("spec", po::value(&spec_path)->required(), "the sweep specification, a JSON file (positional; see docs/ablations.md)")(
      "out", po::value(&out)->required(), "results directory: created, or resumed when it holds results of the same spec")(
      "prompts", po::value(&prompts), "decode the questions of this file instead of the spec's prompts: MT-Bench / Spec-Bench JSONL (question_id, category, turns) or a JSON object of category -> texts")(
      "shard", po::value(&shard)->default_value(shard), "run only shard I of N (every N-th run, I = 1..N), e.g. $SLURM_ARRAY_TASK_ID/N")(
      "progress-interval", po::value(&interval)->default_value(interval), "seconds between progress lines when the output is not a terminal");
  po::positional_options_description pos;
  pos.add("spec", 1);
  if (!parse_options(args, desc, io, "specdec sweep SPEC.json --out DIR [--shard I/N] [--prompts FILE.jsonl]\n       specdec sweep merge --out DIR SHARD_DIR...", &pos)) {
    return 0;
  }
  if (!(interval > 0)) throw Error("--progress-interval must be > 0 seconds");
  sweep::SweepRunOptions o;
  o.out = out;
  o.shard = sweep::parse_shard(shard);
  o.progress_interval_s = interval;
  const sweep::SweepSpec spec = sweep::load_sweep_spec(spec_path, prompts);
  return sweep::run_sweep_spec(spec, o, io.out, io.out_is_terminal);
}

}  // namespace specdec::cli
