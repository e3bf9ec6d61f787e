// write_trace: the HDF5 layout of traces/SCHEMA.md, written atomically; and the parts of it a
// batched file repeats per sequence (trace_file.hpp).
#include <unistd.h>

#include <ctime>
#include <random>

#include "reference/core/error.hpp"
#include "specdec/version.hpp"
#include "traces/hdf5.hpp"
#include "reference/io/atomic_file.hpp"
#include "traces/trace.hpp"
#include "traces/trace_diagnostics.hpp"
#include "traces/trace_file.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {
namespace {
namespace L = trace_layout;

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A ragged per-step column: flat values plus offsets (S + 1), CSR style.
template <class T, class Get>
void write_ragged(h5::Group& steps, const std::string& name, const std::vector<StepRecord>& all, Get get,
                  bool with_offsets = true) {
  std::vector<T> flat;
  std::vector<int64_t> offsets{0};
  for (const StepRecord& s : all) {
    const auto& v = get(s);
    flat.insert(flat.end(), v.begin(), v.end());
    offsets.push_back(static_cast<int64_t>(flat.size()));
  }
  steps.write_vector<T>(name, flat);
  if (with_offsets) steps.write_vector<int64_t>(name + L::kOffsetsSuffix, offsets);
}

template <class Get> bool any_nonempty(const std::vector<StepRecord>& all, Get get) {
  for (const StepRecord& s : all) {
    if (!get(s).empty()) return true;
  }
  return false;
}

// One logits group: full rows (R, V) or top-k summaries, and row_offsets (S + 1).
void write_logits(h5::Group& steps, const char* name, const std::vector<StepRecord>& all, bool draft) {
  auto rows_of = [draft](const StepRecord& s) -> const std::vector<LogitRecord>& {
    return draft ? s.draft_logits : s.target_logits;
  };
  if (!any_nonempty(all, rows_of)) return;
  h5::Group g = steps.create_group(name);
  std::vector<int64_t> offsets{0};
  const LogitRecord* first = nullptr;
  for (const StepRecord& s : all) {
    const auto& rows = rows_of(s);
    if (first == nullptr && !rows.empty()) first = &rows.front();
    offsets.push_back(offsets.back() + static_cast<int64_t>(rows.size()));
  }
  const auto R = static_cast<uint64_t>(offsets.back());
  g.write_vector<int64_t>(L::kRowOffsets, offsets);
  if (draft) {
    write_ragged<int32_t>(g, L::kRowNodes, all, [](const StepRecord& s) -> const auto& { return s.draft_logit_nodes; },
                          false);
  }

  if (first->is_full()) {
    const uint64_t V = first->full.size();
    g.write_attribute(L::kStorage, L::kStorageFull);
    g.write_attribute(L::kVocabSize, static_cast<int64_t>(V));
    h5::Dataset full = g.create_matrix(L::kFull, h5::Dtype::float32, R, V);
    // One step's rows per write: rows: (n, V)
    std::vector<float> block;
    uint64_t row = 0;
    for (const StepRecord& s : all) {
      const auto& rows = rows_of(s);
      block.clear();
      for (const LogitRecord& r : rows) block.insert(block.end(), r.full.begin(), r.full.end());
      full.write_rows<float>(row, rows.size(), block.data());
      row += rows.size();
    }
    return;
  }
  const uint64_t k = first->summary.topk_ids.size();
  g.write_attribute(L::kStorage, L::kStorageTopk);
  g.write_attribute(L::kVocabSize, static_cast<int64_t>(first->summary.vocab_size));
  g.write_attribute(L::kK, static_cast<int64_t>(k));
  std::vector<int32_t> ids;  // (R, k)
  std::vector<float> values;  // (R, k)
  std::vector<double> lse;
  std::vector<uint64_t> checksum;
  for (const StepRecord& s : all) {
    for (const LogitRecord& r : rows_of(s)) {
      ids.insert(ids.end(), r.summary.topk_ids.begin(), r.summary.topk_ids.end());
      values.insert(values.end(), r.summary.topk_values.begin(), r.summary.topk_values.end());
      lse.push_back(r.summary.logsumexp);
      checksum.push_back(r.summary.checksum);
    }
  }
  g.write_matrix<int32_t>(L::kTopkIds, R, k, ids.data());
  g.write_matrix<float>(L::kTopkValues, R, k, values.data());
  g.write_vector<double>(L::kLogsumexp, lse);
  g.write_vector<uint64_t>(L::kChecksum, checksum);
}

// The draft-free drafters' sources (schema 1.3): one group, its own row offsets (a step has none
// or one per draft node), four columns.
void write_draft_sources(h5::Group& steps, const std::vector<StepRecord>& all) {
  auto sources = [](const StepRecord& s) -> const auto& { return s.draft_sources; };
  if (!any_nonempty(all, sources)) return;
  h5::Group g = steps.create_group(L::kDraftSources);
  std::vector<int64_t> offsets{0}, position, request;
  std::vector<uint8_t> origin;
  std::vector<int32_t> match_length;
  for (const StepRecord& s : all) {
    for (const DraftSourceRecord& r : s.draft_sources) {
      origin.push_back(static_cast<uint8_t>(r.origin));
      position.push_back(r.position);
      match_length.push_back(r.match_length);
      request.push_back(r.request);
    }
    offsets.push_back(static_cast<int64_t>(origin.size()));
  }
  g.write_vector<int64_t>(L::kRowOffsets, offsets);
  g.write_vector<uint8_t>(L::kSourceOrigin, origin);
  g.write_vector<int64_t>(L::kSourcePosition, position);
  g.write_vector<int32_t>(L::kSourceMatchLength, match_length);
  g.write_vector<int64_t>(L::kSourceRequest, request);
}

void write_steps(h5::Group& run, const Trace& t) {
  const auto& all = t.steps;
  h5::Group steps = run.create_group(L::kSteps);
  std::vector<int64_t> positions;
  for (const StepRecord& s : all) positions.push_back(s.position);
  steps.write_vector<int64_t>(L::kPositions, positions);
  write_ragged<int32_t>(steps, L::kEmittedTokens, all, [](const StepRecord& s) -> const auto& { return s.emitted_tokens; });

  // Optional columns: written when some step has them.
  auto draft_tokens = [](const StepRecord& s) -> const auto& { return s.draft_tokens; };
  if (any_nonempty(all, draft_tokens)) {
    write_ragged<int32_t>(steps, L::kDraftTokens, all, draft_tokens);
    write_ragged<int32_t>(steps, L::kDraftParents, all, [](const StepRecord& s) -> const auto& { return s.draft_parents; },
                          false);
  }
  auto accepted = [](const StepRecord& s) -> const auto& { return s.accepted_path; };
  if (any_nonempty(all, accepted)) write_ragged<int32_t>(steps, L::kAcceptedPath, all, accepted);
  auto decisions = [](const StepRecord& s) -> const auto& { return s.accept_decisions; };
  if (any_nonempty(all, decisions)) write_ragged<uint8_t>(steps, L::kAcceptDecisions, all, decisions);
  auto nodes = [](const StepRecord& s) -> const auto& { return s.accept_nodes; };
  if (any_nonempty(all, nodes)) write_ragged<int32_t>(steps, L::kAcceptNodes, all, nodes, false);
  auto uniforms = [](const StepRecord& s) -> const auto& { return s.accept_uniforms; };
  if (any_nonempty(all, uniforms)) write_ragged<double>(steps, L::kAcceptUniforms, all, uniforms);

  bool any_bonus = false;
  std::vector<int32_t> bonus;
  for (const StepRecord& s : all) {
    any_bonus |= s.bonus_token != -1;
    bonus.push_back(s.bonus_token);
  }
  if (any_bonus) steps.write_vector<int32_t>(L::kBonusToken, bonus);

  auto counters = [](const StepRecord& s) -> const auto& { return s.random_counters; };
  if (any_nonempty(all, counters)) {
    std::vector<uint32_t> flat;  // (N, 4)
    std::vector<int64_t> offsets{0};
    for (const StepRecord& s : all) {
      for (const auto& c : s.random_counters) flat.insert(flat.end(), c.begin(), c.end());
      offsets.push_back(offsets.back() + static_cast<int64_t>(s.random_counters.size()));
    }
    steps.write_matrix<uint32_t>(L::kRandomCounters, static_cast<uint64_t>(offsets.back()), 4, flat.data());
    steps.write_vector<int64_t>(std::string(L::kRandomCounters) + L::kOffsetsSuffix, offsets);
  }

  write_draft_sources(steps, all);
  write_logits(steps, L::kTargetLogits, all, false);
  write_logits(steps, L::kDraftLogits, all, true);
  write_trace_diagnostics(steps, t);  // optional per-layer and drafter tensors (1.2)
}

}  // namespace

namespace trace_file {

void write_file_attributes(h5::File& f, const TraceMeta& meta, const std::string& schema_version) {
  f.write_attribute(L::kFormat, kTraceFormat);
  f.write_attribute(L::kSchemaVersion, schema_version);
  f.write_attribute(L::kSpecdecVersion, meta.specdec_version.empty() ? std::string(kVersion) : meta.specdec_version);
  f.write_attribute(L::kCreatedUtc, meta.created_utc.empty() ? now_utc() : meta.created_utc);
  if (!meta.exactness_contract.empty()) f.write_attribute(L::kExactnessContract, meta.exactness_contract);
}

void write_run(h5::Group& run, const Trace& t) {
  run.write_attribute(L::kMethod, t.meta.method);
  {
    h5::Group meta = run.create_group(L::kMeta);
    meta.write_attribute(L::kSeed, t.meta.seed);
    meta.write_string(L::kConfigJson, t.meta.config_json);
    meta.write_string(L::kSamplingJson, t.meta.sampling_json);
    h5::Group models = meta.create_group(L::kModels);
    for (const auto& [role, m] : t.meta.models) {
      h5::Group g = models.create_group(role);
      g.write_attribute(L::kPath, m.path);
      g.write_attribute(L::kFingerprint, m.fingerprint);
      g.write_string(L::kConfigJson, m.config_json);
    }
  }
  run.write_vector<int32_t>(L::kPromptTokens, t.prompt);
  write_steps(run, t);
  run.write_vector<int32_t>(L::kOutputTokens, t.output);
  run.write_string(L::kStopReason, t.stop_reason);

  h5::Group timing = run.create_group(L::kTiming);
  timing.write_attribute(L::kPrefillNs, t.timing.prefill_ns);
  timing.write_attribute(L::kTotalNs, t.timing.total_ns);
  for (const auto& [phase, ns] : t.timing.step_ns) timing.write_vector<int64_t>(phase + L::kNsSuffix, ns);
}

void save_file(const std::filesystem::path& path, const std::function<void()>& check,
               const std::function<void(h5::File&)>& fill) {
  const std::string name = path.string();
  try {
    check();
  } catch (const Error& e) {
    throw Error(name + ": cannot write trace: " + e.what());
  }
  try {
    h5::File f = h5::File::create_in_memory(name);
    fill(f);
    f.save_atomically(path);
  } catch (const std::filesystem::filesystem_error& e) {
    throw Error(name + ": cannot write trace: " + e.code().message());
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(name + ":", 0) == 0) throw;
    throw Error(name + ": cannot write trace: " + what);
  }
}

}  // namespace trace_file

void write_trace(const std::filesystem::path& path, const Trace& trace) {
  trace_file::save_file(
      path,
      [&] {
        validate_trace(trace);
        validate_trace_diagnostics(trace);
      },
      [&](h5::File& f) {
        trace_file::write_file_attributes(f, trace.meta, trace_schema_version());
        trace_file::write_run(f, trace);
      });
}

}  // namespace specdec
