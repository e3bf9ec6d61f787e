// specdec trace check FILE.h5 | specdec trace diff A.h5 B.h5: for traces written by other
// engines. check: every schema problem (exit 0 valid, 1 problems, 2 not HDF5 at all). diff: the
// first divergent step under the tolerance policy (exit 0 same, 1 divergent, 2 unusable input).
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/cli.hpp"
#include "validation/trace_diff.hpp"
#include "reference/core/error.hpp"
#include "traces/trace.hpp"
#include "traces/trace_check.hpp"

namespace specdec::cli {
namespace {

const char* kUsage =
    "usage: specdec trace check FILE.h5 [--json]      validate a trace against traces/SCHEMA.md, listing every problem\n"
    "                                                 (exit 0 valid, 1 problems found, 2 not an HDF5 file)\n"
    "       specdec trace diff A.h5 B.h5 [--json]     compare two traces step by step under the tolerance policy\n"
    "                                                 (A is the reference; exit 0 same, 1 divergent, 2 unusable input)\n";

int check(const std::vector<std::string>& files, bool as_json, CommandIO& io) {
  int code = 0;
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& file : files) {
    const TraceCheckResult r = check_trace_file(file);
    const int c = !r.opened ? 2 : (r.problems.empty() ? 0 : 1);
    code = std::max(code, c);
    if (as_json) {
      nlohmann::json problems = nlohmann::json::array();
      for (const TraceProblem& p : r.problems) problems.push_back({{"file", file}, {"where", p.where}, {"what", p.what}});
      nlohmann::json one = {{"file", file}, {"valid", r.valid()}, {"opened", r.opened}, {"schema_version", r.schema_version},
                            {"steps", r.steps}, {"problems", problems}};
      if (r.sequences >= 0) one["sequences"] = r.sequences;
      all.push_back(std::move(one));
      continue;
    }
    for (const TraceProblem& p : r.problems) io.out << file << ": " << p.where << ": " << p.what << "\n";
    if (r.valid()) {
      io.out << file << ": valid specdec trace (schema " << r.schema_version << ", ";
      if (r.sequences >= 0) io.out << "batched, " << r.sequences << (r.sequences == 1 ? " sequence, " : " sequences, ");
      io.out << r.steps << " steps)\n";
    } else {
      io.out << file << ": " << r.problems.size() << (r.problems.size() == 1 ? " problem" : " problems") << "\n";
    }
  }
  if (as_json) io.out << (files.size() == 1 ? all[0]["problems"] : all).dump() << "\n";
  return code;
}

int diff(const std::string& a_path, const std::string& b_path, bool as_json, CommandIO& io) {
  Trace a, b;
  try {
    // Both pass every check of `trace check` first: diff compares only what check accepts.
    a = read_checked_trace(a_path);
    b = read_checked_trace(b_path);
  } catch (const std::exception& e) {
    io.err << "specdec trace diff: error: " << e.what() << " (run specdec trace check for every problem)\n";
    return 2;
  }
  if (a.meta.method != b.meta.method) {
    io.err << "specdec trace diff: error: the traces record different methods (" << a.meta.method << " vs " << b.meta.method << ")\n";
    return 2;
  }
  if (a.prompt != b.prompt) {
    io.err << "specdec trace diff: error: the traces record different prompts; they are not runs of the same input\n";
    return 2;
  }
  const validation::TraceDiffReport r = validation::diff_traces(a, b);
  if (as_json) {
    nlohmann::json j = validation::to_json(r);
    j["a"] = a_path;
    j["b"] = b_path;
    io.out << j.dump() << "\n";
    return r.same ? 0 : 1;
  }
  io.out << (r.same ? "SAME" : "DIVERGENT") << ": " << a_path << " (A) vs " << b_path << " (B), " << a.meta.method << "\n";
  if (!r.config_differences.empty()) {
    io.out << "configurations differ, so the outputs need not agree (a divergence here is no error):\n";
    for (const std::string& d : r.config_differences) io.out << "  " << d << "\n";
  }
  if (r.first_divergence) {
    const validation::Divergence& d = *r.first_divergence;
    io.out << "first divergence: step " << d.step << ", position " << d.position << ": " << d.what << ": " << d.detail << "\n";
    if (d.layer >= 0) {
      io.out << "  first out of tolerance inside the target forward: layer " << d.layer << ", " << d.substep << " (layer row "
             << d.layer_row << ", NMSE " << d.layer_value << ")\n";
    }
    if (d.step >= 0) {
      auto ids = [](const std::vector<int32_t>& v) {
        std::string s;
        for (int32_t t : v) s += (s.empty() ? "" : ",") + std::to_string(t);
        return "[" + s + "]";
      };
      io.out << "  emitted A " << ids(d.reference_emitted) << "  B " << ids(d.candidate_emitted) << "\n";
    }
  }
  io.out << "steps compared " << r.steps_compared << " of " << r.steps_a << " (B has " << r.steps_b << "), tokens equal "
         << r.tokens_equal;
  io.out << validation::summary_text(r.drafter_rows) << "\n";  // B's drafter rows, when both traces record them
  for (const validation::QuantitySummary& q : r.quantities) {
    io.out << "  " << q.quantity << ": worst " << q.worst << (q.worst_at.empty() ? "" : " at " + q.worst_at) << " (bound "
           << q.bound << ", " << q.compared << " rows, " << q.passed << " within) " << (q.pass ? "ok" : "FAIL") << "\n";
  }
  return r.same ? 0 : 1;
}

}  // namespace

int run_trace(const std::vector<std::string>& args, CommandIO& io) {
  std::vector<std::string> rest;
  bool as_json = false, help = false;
  for (const std::string& a : args) {
    if (a == "--json") as_json = true;
    else if (a == "--help" || a == "-h") help = true;
    else rest.push_back(a);
  }
  if (help) {
    io.out << kUsage;
    return 0;
  }
  if (rest.empty()) {
    io.err << kUsage;
    return 2;
  }
  const std::string sub = rest[0];
  rest.erase(rest.begin());
  if (sub == "check" && !rest.empty()) return check(rest, as_json, io);
  if (sub == "diff" && rest.size() == 2) return diff(rest[0], rest[1], as_json, io);
  io.err << "specdec trace: " << (sub == "check" || sub == "diff" ? "wrong number of files for '" + sub + "'" : "unknown subcommand '" + sub + "'")
         << "\n" << kUsage;
  return 2;
}

}  // namespace specdec::cli
