// The invariants of a batched trace (traces/SCHEMA.md, "Batched traces").
#include "traces/batched_trace.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "reference/core/error.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

[[noreturn]] void invalid(const std::string& where, const std::string& what) {
  throw Error("invalid batched trace: " + where + ": " + what);
}

std::string entry_at(std::size_t t, std::size_t e) {
  return "schedule[" + std::to_string(t) + "][" + std::to_string(e) + "]";
}

// The ids held, for messages: all of a small batch ("0, 1, 2"), the first few of a large one.
std::string id_list(const BatchedTrace& b) {
  std::string s;
  for (std::size_t i = 0; i < b.sequences.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(b.sequences[i].id);
  if (b.sequences.size() > 8) s += ", ... (" + std::to_string(b.sequences.size()) + " sequences)";
  return s;
}

// The sequence's config_json must carry its id: that is what its random streams were keyed by,
// and what a replay of it alone is given.
void check_sequence_key(const TraceSequence& q) {
  const std::string where = "sequence " + std::to_string(q.id) + ": meta.config_json";
  nlohmann::json j;
  try {
    j = parse_json(q.trace.meta.config_json, where);
  } catch (const Error& e) {
    invalid(where, std::string("not a JSON object: ") + e.what());
  }
  if (!j.is_object()) invalid(where, "not a JSON object");
  if (!j.contains("sequence")) {
    invalid(where, "has no \"sequence\" key, expected " + std::to_string(q.id) + " (its sequence id)");
  }
  const nlohmann::json& v = j["sequence"];
  if (!v.is_number_integer() || v.get<int64_t>() != static_cast<int64_t>(q.id)) {
    invalid(where, "\"sequence\" is " + v.dump() + ", expected " + std::to_string(q.id) + " (its sequence id)");
  }
}

}  // namespace

std::string batched_trace_schema_version() {
  return std::to_string(kBatchedTraceSchemaMajor) + "." + std::to_string(kBatchedTraceSchemaMinor);
}

void validate_batched_trace(const BatchedTrace& b) {
  if (b.sequences.empty()) invalid("sequences", "none, expected at least one sequence");
  if (b.max_in_flight < 1) invalid("max_in_flight", std::to_string(b.max_in_flight) + ", expected >= 1");
  std::map<uint32_t, std::size_t> index;  // id -> position in b.sequences
  for (std::size_t i = 0; i < b.sequences.size(); ++i) {
    const TraceSequence& q = b.sequences[i];
    const auto [it, fresh] = index.emplace(q.id, i);
    if (!fresh) {
      invalid("sequences[" + std::to_string(i) + "]", "sequence id " + std::to_string(q.id) + " repeats sequences[" +
                                                          std::to_string(it->second) + "]'s; ids must be distinct");
    }
    try {
      validate_trace(q.trace);
      validate_trace_diagnostics(q.trace);
    } catch (const Error& e) {
      throw Error("invalid batched trace: sequence " + std::to_string(q.id) + ": " + e.what());
    }
    check_sequence_key(q);
  }

  if (b.schedule.empty()) invalid("schedule", "no batch steps, expected one per target forward of the batch");
  std::map<uint32_t, int64_t> next;  // id -> its next step to be scheduled
  for (std::size_t t = 0; t < b.schedule.size(); ++t) {
    const auto& entries = b.schedule[t];
    const std::string w = "schedule[" + std::to_string(t) + "]";
    if (entries.empty()) invalid(w, "holds no sequence, expected at least one per batch step");
    if (static_cast<int64_t>(entries.size()) > b.max_in_flight) {
      invalid(w, "holds " + std::to_string(entries.size()) + " sequences, more than max_in_flight " +
                     std::to_string(b.max_in_flight));
    }
    std::set<uint32_t> seen;
    for (std::size_t e = 0; e < entries.size(); ++e) {
      const ScheduledStep& s = entries[e];
      const std::string we = entry_at(t, e);
      const auto it = index.find(s.sequence);
      if (it == index.end()) {
        invalid(we, "names sequence " + std::to_string(s.sequence) + ", which the trace does not hold (it holds " +
                        id_list(b) + ")");
      }
      if (!seen.insert(s.sequence).second) {
        invalid(we, "names sequence " + std::to_string(s.sequence) + " a second time in one batch step");
      }
      const Trace& tr = b.sequences[it->second].trace;
      int64_t& expected = next[s.sequence];
      if (expected >= static_cast<int64_t>(tr.steps.size())) {
        invalid(we, "runs a step of sequence " + std::to_string(s.sequence) + ", which has only " +
                        std::to_string(tr.steps.size()) + " steps, all scheduled earlier");
      }
      if (s.step != expected) {
        invalid(we, "runs step " + std::to_string(s.step) + " of sequence " + std::to_string(s.sequence) +
                        ", expected its step " + std::to_string(expected) + " (each step runs once, in order)");
      }
      const StepRecord& st = tr.steps[static_cast<std::size_t>(expected)];
      if (expected == 0) {
        if (s.rows < 1 || s.rows > static_cast<int64_t>(tr.prompt.size())) {
          invalid(we, std::to_string(s.rows) + " rows for sequence " + std::to_string(s.sequence) +
                          "'s prefill, expected 1 to its prompt length " + std::to_string(tr.prompt.size()));
        }
      } else if (s.rows != 1 + static_cast<int64_t>(st.draft_tokens.size())) {
        invalid(we, std::to_string(s.rows) + " rows for step " + std::to_string(expected) + " of sequence " +
                        std::to_string(s.sequence) + ", expected " + std::to_string(1 + st.draft_tokens.size()) +
                        " (the pending token + its draft nodes)");
      }
      ++expected;
    }
  }
  for (const TraceSequence& q : b.sequences) {
    const int64_t ran = next[q.id];
    if (ran != static_cast<int64_t>(q.trace.steps.size())) {
      invalid("schedule", "runs " + std::to_string(ran) + " of sequence " + std::to_string(q.id) + "'s " +
                              std::to_string(q.trace.steps.size()) + " steps, expected every step once");
    }
  }
}

Trace sequence_trace(const BatchedTrace& b, std::size_t index) {
  Trace t = b.sequences.at(index).trace;
  t.meta.specdec_version = b.meta.specdec_version;
  t.meta.created_utc = b.meta.created_utc;
  t.meta.exactness_contract = b.meta.exactness_contract;
  t.meta.schema_version = b.meta.schema_version;
  return t;
}

}  // namespace specdec
