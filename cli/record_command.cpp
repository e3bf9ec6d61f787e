// specdec record: decode a prompt and write every step to an HDF5 trace (traces/SCHEMA.md).
#include <ostream>

#include "cli/options.hpp"
#include "runtime/record_run.hpp"

namespace specdec::cli {

int run_record(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  RecordOptions o;
  po::options_description desc("record options");
  add_decode_options(desc, a);
  desc.add_options()
      ("out", po::value(&o.out)->required(), "trace file to write (HDF5; written atomically)")
      ("logits", po::value(&o.logits)->default_value(o.logits), "how logits rows are kept: full | topk (top-k ids and values, logsumexp, checksum)")
      ("logit-top-k", po::value(&o.logit_top_k)->default_value(o.logit_top_k), "k for --logits topk");
  if (!parse_options(args, desc, io, "specdec record --model DIR (--prompt TEXT | --prompt-ids IDS) --out TRACE.h5 [options]")) return 0;
  const RecordResult r = record_run(a, o);
  if (a.json) {
    io.out << r.to_json().dump() << "\n";
  } else {
    io.out << "wrote " << r.trace << ": " << a.method.label() << ", " << r.steps << " steps, " << r.output_tokens.size()
           << " tokens, stop: " << r.stop_reason << ", logits "
           << (o.logits == "full" ? "full" : "top-" + std::to_string(o.logit_top_k)) << "\n";
  }
  return 0;
}

}  // namespace specdec::cli
