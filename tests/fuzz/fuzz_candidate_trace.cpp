// Fuzzes a candidate trace as specdec validate --candidate and trace diff take it, before any model
// runs: bytes -> file -> read_checked_trace_file (every check of `specdec trace check`, then the
// reader; a batched file sequence by sequence) -> each step's drafter rows as validate reads them,
// paired and compared (validation/drafter_rows.hpp) with themselves, with a reference that ran
// only every other row and with one that ran none, then the counts the report states; and the
// trace diffed with itself (specdec trace diff). A trace that passes the checks must be handled
// without any error, and the counts must add up.
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"
#include "traces/trace_check.hpp"
#include "validation/drafter_rows.hpp"
#include "validation/trace_diff.hpp"
#include "validation/validation_report.hpp"

namespace {

using specdec::fuzz::require;
namespace v = specdec::validation;

void no_measure(const std::string&, double, const std::string&) {}

void check_drafter_rows(const specdec::Trace& t, const std::string& name) {
  const v::TolerancePolicy& policy = v::TolerancePolicy::defaults();
  v::DrafterRowCounts none_ran;
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    const std::vector<v::DrafterRow> rows = v::trace_drafter_rows(t, t.steps[s]);
    const std::string at = name + " step " + std::to_string(s);
    require(rows.size() == t.steps[s].drafter_tokens.size(), "fuzz_candidate_trace", at + ": a drafter row was lost");
    // Against itself: every row has its counterpart (the k-th row of a token and position pairs
    // with the k-th) and agrees exactly, NaN and infinities included.
    const v::DrafterComparison self = v::compare_drafter_rows(rows, rows, policy, nullptr, no_measure);
    require(!self.mismatch && self.rows_compared == static_cast<int>(rows.size()) && self.rows_passed == self.rows_compared &&
                self.unpaired == 0,
            "fuzz_candidate_trace", at + ": the rows compared with themselves do not all pair and pass");
    // Against a reference that ran every other row: each row is compared or passed over.
    std::vector<v::DrafterRow> half;
    for (std::size_t i = 0; i < rows.size(); i += 2) half.push_back(rows[i]);
    const v::DrafterComparison part = v::compare_drafter_rows(rows, half, policy, nullptr, no_measure);
    require(part.rows_passed <= part.rows_compared && part.rows_compared <= static_cast<int>(half.size()),
            "fuzz_candidate_trace", at + ": more rows compared than the reference ran");
    if (!part.mismatch) {
      require(part.rows_compared + part.unpaired == static_cast<int>(rows.size()) && part.rows_passed == part.rows_compared,
              "fuzz_candidate_trace", at + ": rows neither compared nor passed over");
    }
    // Against a reference that ran none: all passed over.
    const v::DrafterComparison empty = v::compare_drafter_rows(rows, {}, policy, nullptr, no_measure);
    require(!empty.mismatch && empty.rows_compared == 0 && empty.unpaired == static_cast<int>(rows.size()), "fuzz_candidate_trace",
            at + ": rows without any reference row were not all passed over");
    none_ran.recorded += static_cast<long>(rows.size());
    none_ran.passed_over += empty.unpaired;
  }
  // Nothing compared: the report fails exactly when there were rows to compare.
  require(v::all_passed_over(none_ran).has_value() == (none_ran.passed_over > 0), "fuzz_candidate_trace",
          name + ": a candidate whose drafter rows were all passed over is not refused");
  (void)v::to_json(none_ran).dump();
  (void)v::summary_text(none_ran);

  const v::TraceDiffReport diff = v::diff_traces(t, t);
  require(diff.drafter_rows.compared + diff.drafter_rows.passed_over <= diff.drafter_rows.recorded, "fuzz_candidate_trace",
          name + ": trace diff counts more drafter rows than the trace holds");
  (void)v::to_json(diff).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("candidate-trace", ".h5");
  specdec::fuzz::write_input(path, data, size);
  specdec::CheckedTraceFile file;
  specdec::fuzz::expect_clean("fuzz_candidate_trace", [&] { file = specdec::read_checked_trace_file(path); });
  // From here on the trace passed every check: nothing may throw, not even specdec::Error.
  try {
    if (file.trace) check_drafter_rows(*file.trace, "trace");
    if (file.batch) {
      for (const specdec::TraceSequence& q : file.batch->sequences) check_drafter_rows(q.trace, "sequence " + std::to_string(q.id));
    }
  } catch (const std::exception& e) {
    require(false, "fuzz_candidate_trace", std::string("a trace that passed its checks failed in validation: ") + e.what());
  }
  return 0;
}
