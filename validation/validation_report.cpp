#include "validation/validation_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "reference/core/format.hpp"

namespace specdec::validation {

namespace {

// JSON has no NaN or infinity: unknown values are null, infinite ones the string "inf".
nlohmann::json number(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string g(double v) {
  if (std::isnan(v)) return "n/a";
  return format_brief(v);
}

nlohmann::json tokens_or_null(int32_t t) { return t < 0 ? nlohmann::json(nullptr) : nlohmann::json(t); }

}  // namespace

nlohmann::json to_json(const DrafterRowCounts& c) {
  return {{"recorded", c.recorded}, {"compared", c.compared}, {"passed", c.passed}, {"passed_over", c.passed_over},
          {"not_compared", c.not_compared()}};
}

std::string summary_text(const DrafterRowCounts& c) {
  if (c.recorded == 0) return "";
  return ", drafter rows: " + std::to_string(c.compared) + " of " + std::to_string(c.recorded) + " compared (" + std::to_string(c.passed) +
         " passed), " + std::to_string(c.passed_over) + " passed over";
}

std::optional<Divergence> all_passed_over(const DrafterRowCounts& c) {
  if (c.compared > 0 || c.passed_over == 0) return std::nullopt;
  Divergence d;
  d.what = "drafter rows";
  d.detail = "none of the candidate's drafter rows was compared: the " + std::to_string(c.passed_over) +
             " rows of the compared steps were each fed a token at a position where the reference's drafter ran no such row, so "
             "nothing of the candidate's drafter was validated (are its drafter_io positions absolute positions in the sequence?)";
  return d;
}

DecisionCoverage decision_coverage(const std::vector<StepRecord>& steps, int n, bool sampled) {
  DecisionCoverage c;
  c.sampled = sampled;
  for (int s = 0; s < n && s < static_cast<int>(steps.size()); ++s) {
    const StepRecord& step = steps[static_cast<std::size_t>(s)];
    if (step.draft_tokens.empty()) continue;
    c.speculative = true;
    c.tests += static_cast<long>(step.accept_decisions.size());
    for (uint8_t d : step.accept_decisions) (d ? c.accepted : c.rejected) += 1;
    // The step's last token follows the accepted path: after a rejection when the last accepted
    // node (or the root) has children, the bonus after a leaf otherwise.
    const int32_t last = step.accepted_path.empty() ? -1 : step.accepted_path.back();
    const bool has_children = std::find(step.draft_parents.begin(), step.draft_parents.end(), last) != step.draft_parents.end();
    (has_children ? c.after_rejection : c.bonus) += 1;
  }
  return c;
}

std::vector<std::string> coverage_gaps(const DecisionCoverage& c) {
  std::vector<std::string> gaps;
  if (!c.speculative) return gaps;
  const std::string more = "; a longer prompt, more tokens or other seeds would exercise it";
  if (c.rejected == 0) gaps.push_back("no draft was rejected: the acceptance test's rejections went untested" + more);
  if (c.after_rejection == 0) {
    gaps.push_back(std::string("no token followed a rejection: the ") +
                   (c.sampled ? "residual distribution max(0, p - q)" : "target's choice after a rejection") + " went untested" + more);
  }
  if (c.bonus == 0) gaps.push_back("no draft was accepted to its end: the bonus token went untested" + more);
  return gaps;
}

DecisionCoverage& operator+=(DecisionCoverage& total, const DecisionCoverage& run) {
  total.speculative = total.speculative || run.speculative;
  total.sampled = run.sampled;
  total.tests += run.tests;
  total.accepted += run.accepted;
  total.rejected += run.rejected;
  total.after_rejection += run.after_rejection;
  total.bonus += run.bonus;
  return total;
}

nlohmann::json to_json(const DecisionCoverage& c) {
  return {{"acceptance_tests", c.tests}, {"accepted", c.accepted}, {"rejected", c.rejected},
          {"after_rejection", c.after_rejection}, {"bonus", c.bonus}, {"untested", coverage_gaps(c)}};
}

std::string coverage_text(const DecisionCoverage& c) {
  const auto count = [](long n, const std::string& one, const std::string& many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  return count(c.tests, "acceptance test", "acceptance tests") + " (" + std::to_string(c.accepted) + " accepted, " +
         std::to_string(c.rejected) + " rejected), " +
         (c.sampled ? count(c.after_rejection, "residual draw", "residual draws")
                    : count(c.after_rejection, "token after a rejection", "tokens after a rejection")) +
         ", " + count(c.bonus, "bonus token", "bonus tokens");
}

nlohmann::json to_json(const ValidationReport& r) {
  nlohmann::json j;
  j["result"] = r.passed ? "pass" : "fail";
  j["candidate"] = r.candidate;
  j["reference"] = r.reference;
  j["method"] = r.method;
  j["reference_steps"] = r.reference_steps;
  j["steps_compared"] = r.steps_compared;
  j["tokens_compared"] = r.tokens_compared;
  j["candidate_runs"] = r.candidate_runs;
  j["drafter_rows"] = to_json(r.drafter_rows);
  j["coverage"] = to_json(r.coverage);
  j["near_ties"] = nlohmann::json::array();
  for (const NearTie& t : r.near_ties) {
    j["near_ties"].push_back({{"step", t.step},
                              {"position", t.position},
                              {"kind", t.kind},
                              {"row", t.row},
                              {"reference_token", tokens_or_null(t.reference_token)},
                              {"candidate_token", tokens_or_null(t.candidate_token)},
                              {"reference", t.reference},
                              {"candidate", t.candidate},
                              {"margin", number(t.margin)},
                              {"margin_units", t.margin_units},
                              {"logit_error", number(t.logit_error)}});
  }
  j["quantities"] = nlohmann::json::array();
  for (const QuantitySummary& q : r.quantities) {
    j["quantities"].push_back({{"quantity", q.quantity},
                               {"rule", q.rule},
                               {"bound", number(q.bound)},
                               {"worst", number(q.worst)},
                               {"worst_at", q.worst_at},
                               {"compared", q.compared},
                               {"passed", q.passed},
                               {"pass", q.pass}});
  }
  if (r.failure) {
    const Divergence& d = *r.failure;
    j["failure"] = {{"step", d.step},
                    {"position", d.position},
                    {"what", d.what},
                    {"detail", d.detail},
                    {"row", d.row},
                    {"drafter_call", d.drafter_call < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.drafter_call)},
                    {"reference_token", tokens_or_null(d.reference_token)},
                    {"candidate_token", tokens_or_null(d.candidate_token)},
                    {"margin", number(d.margin)},
                    {"margin_units", d.margin_units},
                    {"logit_error", number(d.logit_error)},
                    {"value", number(d.value)},
                    {"bound", number(d.bound)},
                    {"reference_emitted", d.reference_emitted},
                    {"candidate_emitted", d.candidate_emitted},
                    {"layer", d.layer < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.layer)},
                    {"substep", d.substep.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.substep)},
                    {"layer_row", d.layer_row < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.layer_row)},
                    {"layer_nmse", number(d.layer_value)}};
    if (d.draft_rule) {  // only for a "draft rule" failure: no key changes for the others
      const DraftRuleMismatch& m = *d.draft_rule;
      auto or_null = [](int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
      j["failure"]["draft_rule"] = {{"method", m.method},
                                    {"node", m.node},
                                    {"history_length", m.history},
                                    {"rule_drafts", m.rule_tokens},
                                    {"rule_parents", m.rule_parents},
                                    {"candidate_drafts", m.candidate_tokens},
                                    {"candidate_parents", m.candidate_parents},
                                    {"match_length", m.match_length},
                                    {"match_position", or_null(m.match_position)},
                                    {"copied_from", or_null(m.copied_from)},
                                    {"request", or_null(m.request)},
                                    {"candidate_copied_from", or_null(m.candidate_copied_from)},
                                    {"candidate_match_length", m.candidate_match_length < 0 ? nlohmann::json(nullptr) : nlohmann::json(m.candidate_match_length)}};
    }
  } else {
    j["failure"] = nullptr;
  }
  j["policy"] = {{"logits_nmse", r.policy.logits_nmse},
                 {"hidden_nmse", r.policy.hidden_nmse},
                 {"logsumexp_abs", r.policy.logsumexp_abs},
                 {"draft_probability_abs", r.policy.draft_probability_abs},
                 {"near_tie_logit_margin", r.policy.near_tie_logit_margin},
                 {"near_tie_probability_margin", r.policy.near_tie_probability_margin},
                 {"max_near_ties", r.policy.max_near_ties}};
  return j;
}

namespace {

// A token id, and its text in quotes when there is a tokenizer (control characters escaped).
std::string shown(int32_t id, const text::Tokenizer* tokenizer) {
  std::string s = std::to_string(id);
  if (!tokenizer || id < 0) return s;
  s += " '";
  for (const unsigned char c : tokenizer->token_text(id)) {
    if (c == '\n') {
      s += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      s += hex;
    } else {
      s += static_cast<char>(c);
    }
  }
  s += "'";
  return s;
}

}  // namespace

void print_report(const ValidationReport& r, std::ostream& out, const text::Tokenizer* tokenizer) {
  out << (r.passed ? "PASS" : "FAIL") << "  " << r.candidate << " against " << r.reference << ", method " << r.method << ": "
      << r.steps_compared << "/" << r.reference_steps << " steps, " << r.tokens_compared << " tokens equal, "
      << r.near_ties.size() << " near-tie" << (r.near_ties.size() == 1 ? "" : "s") << ", " << r.candidate_runs << " candidate run"
      << (r.candidate_runs == 1 ? "" : "s") << summary_text(r.drafter_rows) << "\n";
  if (r.coverage.speculative) {
    out << "covered: " << coverage_text(r.coverage) << "\n";
    for (const std::string& gap : coverage_gaps(r.coverage)) out << "untested: " << gap << "\n";
  }
  if (r.failure) {
    const Divergence& d = *r.failure;
    out << "first divergence: " << d.what;
    if (d.step >= 0) out << " at step " << d.step << ", position " << d.position;
    if (d.drafter_call >= 0) out << ", drafter row " << d.row << " (drafter forward " << d.drafter_call << " of the step)";
    else if (d.row >= 0) out << ", row " << d.row;
    out << "\n  " << d.detail << "\n";
    if (d.reference_token >= 0 || d.candidate_token >= 0) {
      out << "  tokens: reference " << shown(d.reference_token, tokenizer) << ", candidate " << shown(d.candidate_token, tokenizer)
          << "; reference margin "
          << g(d.margin) << (d.margin_units.empty() ? "" : " (" + d.margin_units + ")") << ", logit error " << g(d.logit_error)
          << "\n";
    }
    if (!std::isnan(d.value)) out << "  measured " << g(d.value) << ", bound " << g(d.bound) << "\n";
    if (d.draft_rule) {
      const DraftRuleMismatch& m = *d.draft_rule;
      auto list = [&](const std::vector<int32_t>& t, const std::vector<int32_t>& p) {
        std::string s = "[";
        for (size_t i = 0; i < t.size(); ++i) s += (i ? " " : "") + shown(t[i], tokenizer);
        s += "]";
        bool chain = true;
        for (size_t i = 0; i < p.size(); ++i) chain = chain && p[i] == static_cast<int32_t>(i) - 1;
        if (!chain) {
          s += " parents [";
          for (size_t i = 0; i < p.size(); ++i) s += (i ? " " : "") + std::to_string(p[i]);
          s += "]";
        }
        return s;
      };
      out << "  " << m.method << " rule drafts: " << list(m.rule_tokens, m.rule_parents) << "\n";
      out << "  candidate drafted: " << list(m.candidate_tokens, m.candidate_parents) << "\n";
      if (m.match_position >= 0) {
        out << "  rule's match: the last " << m.match_length << " tokens occurred at position " << m.match_position << ", copied from position "
            << m.copied_from << "\n";
      }
    }
    if (d.layer >= 0) {
      out << "  first out of tolerance inside the target forward: layer " << d.layer << ", " << d.substep << " (row " << d.layer_row
          << ", NMSE " << g(d.layer_value) << ", bound " << g(r.policy.hidden_nmse) << ")\n";
    }
    if (!d.reference_emitted.empty() || !d.candidate_emitted.empty()) {
      out << "  emitted: reference [";
      for (size_t i = 0; i < d.reference_emitted.size(); ++i) out << (i ? " " : "") << d.reference_emitted[i];
      out << "], candidate [";
      for (size_t i = 0; i < d.candidate_emitted.size(); ++i) out << (i ? " " : "") << d.candidate_emitted[i];
      out << "]\n";
      if (tokenizer) {
        out << "  emitted text: reference \"" << tokenizer->decode(d.reference_emitted) << "\", candidate \""
            << tokenizer->decode(d.candidate_emitted) << "\"\n";
      }
    }
  }
  for (const NearTie& t : r.near_ties) {
    out << "near-tie at step " << t.step << ", position " << t.position << " (" << t.kind << "): reference " << t.reference
        << "; candidate " << t.candidate << "; margin " << g(t.margin) << (t.margin_units.empty() ? "" : " " + t.margin_units)
        << ", logit error " << g(t.logit_error) << "; forced the reference's and continued\n";
  }
  if (!r.quantities.empty()) {
    out << "quantity                              worst        bound        compared    passed  where\n";
    for (const QuantitySummary& q : r.quantities) {
      char line[256];
      std::snprintf(line, sizeof line, "%-36s  %-11s  %-11s  %8ld  %8ld  %s%s\n", q.quantity.c_str(), g(q.worst).c_str(), g(q.bound).c_str(),
                    q.compared, q.passed, q.worst_at.c_str(), q.pass ? "" : "  OUT OF TOLERANCE");
      out << line;
    }
  }
}

}  // namespace specdec::validation
