#include "validation/batched_report.hpp"

#include <ostream>
#include <sstream>

namespace specdec::validation {

const SequenceReport* BatchedValidationReport::first_failure() const {
  for (const SequenceReport& s : sequences)
    if (!s.report.passed) return &s;
  return nullptr;
}

nlohmann::json to_json(const BatchedValidationReport& r) {
  nlohmann::json j;
  j["result"] = r.passed() ? "pass" : "fail";
  j["trace"] = r.trace;
  j["kind"] = r.kind;
  j["max_in_flight"] = r.max_in_flight;
  j["batch_steps"] = r.batch_steps;
  nlohmann::json failed = nlohmann::json::array();
  nlohmann::json all = nlohmann::json::array();
  for (const SequenceReport& s : r.sequences) {
    if (!s.report.passed) failed.push_back(s.sequence);
    nlohmann::json one = s.json;
    one["sequence"] = s.sequence;
    all.push_back(std::move(one));
  }
  j["sequences_failed"] = failed;
  j["failure"] = nullptr;
  if (const SequenceReport* f = r.first_failure()) {
    j["failure"] = f->json.value("failure", nlohmann::json::object());
    j["failure"]["sequence"] = f->sequence;
  }
  j["sequences"] = std::move(all);
  return j;
}

void print_report(const BatchedValidationReport& r, std::ostream& out, const text::Tokenizer* tokenizer) {
  std::size_t failed = 0;
  for (const SequenceReport& s : r.sequences) failed += s.report.passed ? 0 : 1;
  out << (r.passed() ? "PASS" : "FAIL") << "  batched " << r.kind << " " << r.trace << ": " << r.sequences.size() << " sequence"
      << (r.sequences.size() == 1 ? "" : "s") << ", " << r.batch_steps << " batch steps of up to " << r.max_in_flight << ", ";
  if (const SequenceReport* f = r.first_failure()) {
    const Divergence& d = *f->report.failure;
    out << failed << " diverge; first: sequence " << f->sequence;
    if (d.step >= 0) out << " at step " << d.step;
    out << " (" << d.what;
    if (d.layer >= 0) out << ", layer " << d.layer << " " << d.substep;
    out << ")\n";
  } else {
    out << "every one validated alone\n";
  }
  for (const SequenceReport& s : r.sequences) {
    std::ostringstream one;
    print_report(s.report, one, tokenizer);
    const std::string text = one.str();
    // Each report names its side "... FILE sequence N".
    out << (s.report.passed ? text.substr(0, text.find('\n') + 1) : text);
  }
}

}  // namespace specdec::validation
