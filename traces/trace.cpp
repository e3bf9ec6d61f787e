#include "traces/trace.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "reference/core/error.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

[[noreturn]] void invalid(const std::string& where, const std::string& what) {
  throw Error("invalid trace: " + where + ": " + what);
}

std::string at(const std::string& field, std::size_t i) { return field + "[" + std::to_string(i) + "]"; }

// Names that become HDF5 object names: letters, digits, '_', '-', '.'; not "." or "..".
bool valid_name(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

void check_json(const std::string& where, const std::string& text) {
  try {
    (void)parse_json(text, "invalid trace: " + where);  // nesting bounded: readers walk it later
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (expected a JSON document, e.g. \"{}\")");
  }
}

// All rows of one logits group share form, V and k.
void check_logit_rows(const Trace& t, bool draft) {
  const std::string field = draft ? "draft_logits" : "target_logits";
  const LogitRecord* first = nullptr;
  std::string first_where;
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    const auto& rows = draft ? t.steps[s].draft_logits : t.steps[s].target_logits;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const LogitRecord& row = rows[r];
      const std::string where = at("steps", s) + "." + at(field, r);
      if (!row.is_full()) {
        const LogitSummary& sum = row.summary;
        if (sum.vocab_size < 1) invalid(where, "summary vocab_size is " + std::to_string(sum.vocab_size) + ", expected >= 1");
        if (sum.topk_ids.empty()) invalid(where, "empty row: expected full logits or a top-k summary with k >= 1");
        if (sum.topk_values.size() != sum.topk_ids.size()) {
          invalid(where, std::to_string(sum.topk_ids.size()) + " top-k ids but " + std::to_string(sum.topk_values.size()) +
                             " top-k values");
        }
        if (sum.topk_ids.size() > static_cast<std::size_t>(sum.vocab_size)) {
          invalid(where, "k = " + std::to_string(sum.topk_ids.size()) + " exceeds vocab_size " + std::to_string(sum.vocab_size));
        }
        for (std::size_t i = 0; i < sum.topk_ids.size(); ++i) {
          if (sum.topk_ids[i] < 0 || sum.topk_ids[i] >= sum.vocab_size) {
            invalid(where + "." + at("topk_ids", i), "id " + std::to_string(sum.topk_ids[i]) + " outside [0, " +
                                                         std::to_string(sum.vocab_size) + ")");
          }
        }
      }
      if (first == nullptr) {
        first = &row;
        first_where = where;
        continue;
      }
      if (row.is_full() != first->is_full()) {
        invalid(where, std::string(row.is_full() ? "full" : "top-k") + " row, but " + first_where + " is " +
                           (first->is_full() ? "full" : "top-k") + " (one form per logits group)");
      }
      if (row.is_full() && row.full.size() != first->full.size()) {
        invalid(where, "has " + std::to_string(row.full.size()) + " logits, but " + first_where + " has " +
                           std::to_string(first->full.size()));
      }
      if (!row.is_full() && (row.summary.vocab_size != first->summary.vocab_size ||
                             row.summary.topk_ids.size() != first->summary.topk_ids.size())) {
        invalid(where, "summary of V = " + std::to_string(row.summary.vocab_size) + ", k = " +
                           std::to_string(row.summary.topk_ids.size()) + ", but " + first_where + " has V = " +
                           std::to_string(first->summary.vocab_size) + ", k = " +
                           std::to_string(first->summary.topk_ids.size()));
      }
    }
  }
}

// A draft-free drafter's sources (schema 1.3): none, or one per draft node; a copied token of
// this sequence lies before the step's drafts (the history they were drafted from).
void check_draft_sources(const StepRecord& st, const std::string& w) {
  if (st.draft_sources.empty()) return;
  if (st.draft_sources.size() != st.draft_tokens.size()) {
    invalid(w + ".draft_sources", std::to_string(st.draft_sources.size()) + " sources for " + std::to_string(st.draft_tokens.size()) +
                                      " draft nodes (expected none, or one per draft node)");
  }
  for (std::size_t i = 0; i < st.draft_sources.size(); ++i) {
    const DraftSourceRecord& src = st.draft_sources[i];
    const std::string wi = w + "." + at("draft_sources", i);
    if (src.match_length < 0) invalid(wi + ".match_length", std::to_string(src.match_length) + ", expected >= 0");
    switch (src.origin) {
      case DraftSourceRecord::Origin::context:
        if (src.position < -1 || src.position >= st.position) {
          invalid(wi + ".position", std::to_string(src.position) + " is not inside the sequence the step drafted from: expected 0 <= position < " +
                                        std::to_string(st.position) + " (the step's position), or -1 (unknown)");
        }
        if (src.request != -1) invalid(wi + ".request", std::to_string(src.request) + ", expected -1 for a source in the sequence itself (origin context)");
        break;
      case DraftSourceRecord::Origin::responses:
        if (src.position < -1) invalid(wi + ".position", std::to_string(src.position) + ", expected a position in the response (>= 0) or -1 (unknown)");
        if (src.request < 0) invalid(wi + ".request", std::to_string(src.request) + ", expected the earlier request's index (>= 0) for origin responses");
        break;
      default:
        invalid(wi + ".origin", std::to_string(static_cast<int>(src.origin)) + ", expected 0 (context) or 1 (responses)");
    }
  }
}

void check_step(const Trace& t, std::size_t s, int64_t expected_position, bool target_logits_present) {
  const StepRecord& st = t.steps[s];
  const std::string w = at("steps", s);
  const auto n_draft = static_cast<int64_t>(st.draft_tokens.size());

  if (st.position != expected_position) {
    invalid(w + ".position", std::to_string(st.position) + ", expected " + std::to_string(expected_position) +
                                 " (prompt length + tokens emitted by earlier steps)");
  }
  if (st.emitted_tokens.empty()) invalid(w + ".emitted_tokens", "empty; every step emits at least one token");
  if (t.meta.method == "sequential" && st.emitted_tokens.size() != 1) {
    invalid(w + ".emitted_tokens", std::to_string(st.emitted_tokens.size()) +
                                       " tokens; a sequential step emits exactly one");
  }
  for (std::size_t i = 0; i < st.draft_tokens.size(); ++i) {
    if (st.draft_tokens[i] < 0) invalid(w + "." + at("draft_tokens", i), "negative token id");
  }
  if (st.draft_parents.size() != st.draft_tokens.size()) {
    invalid(w + ".draft_parents", std::to_string(st.draft_parents.size()) + " parents for " +
                                      std::to_string(st.draft_tokens.size()) + " draft tokens (expected one each)");
  }
  for (std::size_t j = 0; j < st.draft_parents.size(); ++j) {
    const int32_t p = st.draft_parents[j];
    if (p < -1 || p >= static_cast<int64_t>(j)) {
      invalid(w + "." + at("draft_parents", j),
              "parent " + std::to_string(p) + ", expected -1 (root) or an earlier node in [0, " + std::to_string(j) + ")");
    }
  }
  if (target_logits_present && static_cast<int64_t>(st.target_logits.size()) != n_draft + 1) {
    invalid(w + ".target_logits", std::to_string(st.target_logits.size()) + " rows, expected " +
                                      std::to_string(n_draft + 1) + " (1 + number of draft tokens)");
  }
  if (st.draft_logit_nodes.size() != st.draft_logits.size()) {
    invalid(w + ".draft_logit_nodes", std::to_string(st.draft_logit_nodes.size()) + " entries for " +
                                          std::to_string(st.draft_logits.size()) + " draft_logits rows (expected one each)");
  }
  std::set<int32_t> seen;
  for (std::size_t r = 0; r < st.draft_logit_nodes.size(); ++r) {
    const int32_t n = st.draft_logit_nodes[r];
    if (n < -1 || n >= n_draft) {
      invalid(w + "." + at("draft_logit_nodes", r),
              "node " + std::to_string(n) + " outside [-1, " + std::to_string(n_draft) + ")");
    }
    if (!seen.insert(n).second) invalid(w + "." + at("draft_logit_nodes", r), "node " + std::to_string(n) + " repeated");
  }
  for (std::size_t i = 0; i < st.accepted_path.size(); ++i) {
    const int32_t n = st.accepted_path[i];
    const std::string wi = w + "." + at("accepted_path", i);
    if (n < 0 || n >= n_draft) invalid(wi, "node " + std::to_string(n) + " outside [0, " + std::to_string(n_draft) + ")");
    const int32_t expected_parent = i == 0 ? -1 : st.accepted_path[i - 1];
    if (st.draft_parents[static_cast<std::size_t>(n)] != expected_parent) {
      invalid(wi, "node " + std::to_string(n) + " is not a child of " +
                      (i == 0 ? std::string("the root") : "node " + std::to_string(expected_parent)));
    }
    if (i < st.emitted_tokens.size() && st.emitted_tokens[i] != st.draft_tokens[static_cast<std::size_t>(n)]) {
      invalid(w + "." + at("emitted_tokens", i), "token " + std::to_string(st.emitted_tokens[i]) +
                                                     " differs from accepted draft node " + std::to_string(n) +
                                                     " token " + std::to_string(st.draft_tokens[static_cast<std::size_t>(n)]));
    }
  }
  for (std::size_t i = 0; i < st.accept_decisions.size(); ++i) {
    if (st.accept_decisions[i] > 1) invalid(w + "." + at("accept_decisions", i), "expected 0 (reject) or 1 (accept)");
  }
  for (std::size_t i = 0; i < st.accept_nodes.size(); ++i) {
    if (st.accept_nodes[i] < 0 || st.accept_nodes[i] >= n_draft) {
      invalid(w + "." + at("accept_nodes", i),
              "node " + std::to_string(st.accept_nodes[i]) + " outside [0, " + std::to_string(n_draft) + ")");
    }
  }
  if (st.bonus_token < -1) invalid(w + ".bonus_token", std::to_string(st.bonus_token) + ", expected -1 (none) or a token id");
  check_draft_sources(st, w);
}

}  // namespace

std::string trace_schema_version() {
  return std::to_string(kTraceSchemaMajor) + "." + std::to_string(kTraceSchemaMinor);
}

void check_exactness_contract(const Trace& t, const std::string& file) {
  const std::string expected = exact::kContractVersion;
  if (t.meta.exactness_contract == expected) return;
  const std::string recorded = t.meta.exactness_contract.empty()
                                   ? "none (recorded before traces carried one)"
                                   : "'" + t.meta.exactness_contract + "'";
  // The golden traces are recorded by a script, with every option fixed.
  const std::filesystem::path p(file);
  const bool golden = p.parent_path().filename() == "golden" && p.parent_path().parent_path().filename() == "traces";
  const std::string how = golden ? "re-record the golden traces with scripts/record_golden.sh"
                                 : "re-record it with `specdec record` (same model, method and options)";
  throw Error(file + ": trace of exactness contract " + recorded + ", but this specdec computes under contract '" +
              expected + "' (reference/core/exact_math.hpp): its numbers come from other arithmetic and cannot be "
              "compared with this build's; " + how);
}

LogitRecord LogitRecord::full_row(const float* row, int V) {
  if (V < 1) throw Error("LogitRecord::full_row: vocabulary size is " + std::to_string(V) + ", expected at least 1");
  LogitRecord r;
  r.full.assign(row, row + V);
  return r;
}

LogitRecord LogitRecord::topk_row(const float* row, int V, int k) {
  LogitRecord r;
  r.summary = summarize_logits(row, V, k);
  return r;
}

void validate_trace(const Trace& t) {
  if (t.meta.method.empty()) invalid("meta.method", "empty (expected sequential, draft, eagle, eagle3 or peagle)");
  check_json("meta.config_json", t.meta.config_json);
  check_json("meta.sampling_json", t.meta.sampling_json);
  for (const auto& [role, model] : t.meta.models) {
    if (!valid_name(role)) {
      invalid("meta.models", "role '" + role + "' is not a valid name (letters, digits, '_', '-', '.')");
    }
    check_json("meta.models[" + role + "].config_json", model.config_json);
  }
  for (std::size_t i = 0; i < t.prompt.size(); ++i) {
    if (t.prompt[i] < 0) invalid(at("prompt", i), "negative token id " + std::to_string(t.prompt[i]));
  }
  for (std::size_t i = 0; i < t.output.size(); ++i) {
    if (t.output[i] < 0) invalid(at("output", i), "negative token id " + std::to_string(t.output[i]));
  }
  if (t.stop_reason.empty()) invalid("stop_reason", "empty (expected max_tokens or eos)");

  check_logit_rows(t, false);
  check_logit_rows(t, true);
  bool target_logits_present = false;
  bool accept_nodes_present = false;
  for (const StepRecord& st : t.steps) {
    target_logits_present |= !st.target_logits.empty();
    accept_nodes_present |= !st.accept_nodes.empty();
  }
  // accept_nodes is one column aligned with accept_decisions: all steps have it or none.
  for (std::size_t s = 0; accept_nodes_present && s < t.steps.size(); ++s) {
    if (t.steps[s].accept_nodes.size() != t.steps[s].accept_decisions.size()) {
      invalid(at("steps", s) + ".accept_nodes",
              std::to_string(t.steps[s].accept_nodes.size()) + " nodes for " +
                  std::to_string(t.steps[s].accept_decisions.size()) +
                  " decisions; when any step records accept_nodes, every step records one per decision");
    }
  }

  // The emitted tokens, step after step, are exactly the output.
  std::size_t emitted = 0;
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    check_step(t, s, static_cast<int64_t>(t.prompt.size() + emitted), target_logits_present);
    for (std::size_t i = 0; i < t.steps[s].emitted_tokens.size(); ++i, ++emitted) {
      if (emitted >= t.output.size() || t.output[emitted] != t.steps[s].emitted_tokens[i]) {
        invalid(at("steps", s) + "." + at("emitted_tokens", i),
                "token " + std::to_string(t.steps[s].emitted_tokens[i]) + " does not match " +
                    (emitted >= t.output.size() ? "the output, which is shorter"
                                                : at("output", emitted) + " = " + std::to_string(t.output[emitted])) +
                    " (the output is the concatenation of the emitted tokens)");
      }
    }
  }
  if (emitted != t.output.size()) {
    invalid("output", std::to_string(t.output.size()) + " tokens, but the steps emitted " + std::to_string(emitted));
  }

  if (t.timing.prefill_ns < 0) invalid("timing.prefill_ns", "negative");
  if (t.timing.total_ns < 0) invalid("timing.total_ns", "negative");
  for (const auto& [phase, ns] : t.timing.step_ns) {
    if (!valid_name(phase)) invalid("timing.step_ns", "phase '" + phase + "' is not a valid name (letters, digits, '_', '-', '.')");
    if (ns.size() != t.steps.size()) {
      invalid("timing.step_ns[" + phase + "]", std::to_string(ns.size()) + " values for " +
                                                   std::to_string(t.steps.size()) + " steps");
    }
  }
}

}  // namespace specdec
