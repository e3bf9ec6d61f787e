// specdec record: decode a prompt and write every step to an HDF5 trace (traces/SCHEMA.md); with
// --prompts, decode a prompt file with continuous batching and write one batched trace.
#include <optional>
#include <ostream>

#include "cli/options.hpp"
#include "experiments/sweep/prompt_set.hpp"
#include "reference/core/error.hpp"
#include "runtime/batched_record.hpp"
#include "runtime/record_run.hpp"

namespace specdec::cli {

namespace {

std::string logits_text(const RecordOptions& o) { return o.logits == "full" ? "full" : "top-" + std::to_string(o.logit_top_k); }

int record_batch(const DecodeArgs& a, const RecordOptions& o, const std::string& prompts_file, int per_category,
                 int64_t concurrency, CommandIO& io) {
  if (per_category < 0) throw Error("--per-category must be >= 0 (0 = every prompt of each category)");
  // Prompt files as sweeps and `specdec batch` read them.
  std::vector<std::string> texts;
  for (const sweep::Prompt& p : sweep::load_prompt_file(prompts_file, per_category)) texts.push_back(p.text);
  const BatchedRecordResult r = record_batched_run(a, texts, concurrency, o);
  if (a.json) {
    io.out << r.to_json().dump() << "\n";
    return 0;
  }
  int64_t steps = 0, tokens = 0;
  for (const RecordResult& s : r.sequences) steps += s.steps, tokens += static_cast<int64_t>(s.output_tokens.size());
  io.out << "wrote " << r.trace << ": batched trace, " << a.method.label() << ", " << r.sequences.size() << " sequences (ids 0-"
         << r.sequences.size() - 1 << "), concurrency " << r.max_in_flight << ", " << r.batch_steps << " batch steps, " << steps
         << " sequence steps, " << tokens << " tokens, logits " << logits_text(o) << "\n";
  return 0;
}

}  // namespace

int run_record(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  RecordOptions o;
  std::string prompts_file;
  int per_category = 0;
  std::optional<int64_t> concurrency;
  po::options_description desc("record options");
  add_decode_options(desc, a);
  desc.add_options()
      ("out", po::value(&o.out)->required(), "trace file to write (HDF5; written atomically)")
      ("logits", po::value(&o.logits)->default_value(o.logits), "how logits rows are kept: full | topk (top-k ids and values, logsumexp, checksum)")
      ("logit-top-k", po::value(&o.logit_top_k)->default_value(o.logit_top_k), "k for --logits topk")
      ("prompts", po::value(&prompts_file), "record a batched trace of this prompt file instead of one prompt: MT-Bench / Spec-Bench JSONL questions or a JSON object of category -> texts; prompt i is sequence i")
      ("per-category", po::value(&per_category)->default_value(0), "with --prompts: at most this many prompts of each category (0 = all)")
      ("concurrency", po::value<int64_t>()->notifier([&](int64_t b) { concurrency = b; }), "with --prompts: sequences decoding at once (B; default 8)");
  if (!parse_options(args, desc, io,
                     "specdec record --model DIR (--prompt TEXT | --prompt-ids IDS) --out TRACE.h5 [options]\n"
                     "       specdec record --model DIR --prompts FILE [--concurrency B] --out BATCH.h5 [options]")) {
    return 0;
  }
  if (!prompts_file.empty()) return record_batch(a, o, prompts_file, per_category, concurrency.value_or(8), io);
  if (concurrency) throw Error("--concurrency needs --prompts FILE (a batched recording)");
  if (per_category != 0) throw Error("--per-category needs --prompts FILE");
  const RecordResult r = record_run(a, o);
  if (a.json) {
    io.out << r.to_json().dump() << "\n";
  } else {
    io.out << "wrote " << r.trace << ": " << a.method.label() << ", " << r.steps << " steps, " << r.output_tokens.size()
           << " tokens, stop: " << r.stop_reason << ", logits " << logits_text(o) << "\n";
  }
  return 0;
}

}  // namespace specdec::cli
