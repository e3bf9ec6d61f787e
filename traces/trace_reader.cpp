// read_trace: parses the HDF5 layout of traces/SCHEMA.md, checking every length and dtype; and
// the parts of it a batched file repeats per sequence (trace_file.hpp).
#include <climits>
#include <cstdlib>
#include <functional>

#include "reference/core/error.hpp"
#include "traces/contained_read.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"
#include "traces/batched_trace.hpp"
#include "traces/trace_diagnostics.hpp"
#include "traces/trace_file.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {
namespace {
namespace L = trace_layout;

// "/steps" + "draft_tokens" -> "/steps/draft_tokens", for messages that name a second object.
std::string member_path(const h5::Group& g, const std::string& name) {
  return g.path() == "/" ? "/" + name : g.path() + "/" + name;
}

// Offsets (S + 1) of a ragged column: start at 0, never decrease, end at the flat length.
std::vector<int64_t> read_offsets(const h5::Group& g, const std::string& name, std::size_t S, uint64_t flat_len,
                                  const std::string& flat_name) {
  const std::vector<int64_t> off = g.read_vector<int64_t>(name);
  const h5::Dataset ds = g.open_dataset(name);
  if (off.size() != S + 1) {
    ds.fail(std::to_string(off.size()) + " offsets, expected " + std::to_string(S + 1) + " (number of steps + 1)");
  }
  if (off[0] != 0) ds.fail("first offset is " + std::to_string(off[0]) + ", expected 0");
  for (std::size_t i = 1; i < off.size(); ++i) {
    if (off[i] < off[i - 1]) {
      ds.fail("offsets decrease at index " + std::to_string(i) + " (" + std::to_string(off[i - 1]) + " then " +
              std::to_string(off[i]) + "); offsets must be non-decreasing");
    }
  }
  if (static_cast<uint64_t>(off.back()) != flat_len) {
    ds.fail("last offset is " + std::to_string(off.back()) + ", but " + member_path(g, flat_name) + " has " +
            std::to_string(flat_len) + " entries");
  }
  return off;
}

template <class T>
void split(const std::vector<T>& flat, const std::vector<int64_t>& off, std::vector<StepRecord>& steps,
           const std::function<std::vector<T>&(StepRecord&)>& dst) {
  for (std::size_t s = 0; s < steps.size(); ++s) {
    dst(steps[s]).assign(flat.begin() + off[s], flat.begin() + off[s + 1]);
  }
}

// A ragged column with its own `<name>_offsets`; returns the offsets for aligned columns.
template <class T>
std::vector<int64_t> read_ragged(const h5::Group& g, const std::string& name, std::vector<StepRecord>& steps,
                                 const std::function<std::vector<T>&(StepRecord&)>& dst) {
  const std::vector<T> flat = g.read_vector<T>(name);
  const std::vector<int64_t> off = read_offsets(g, name + L::kOffsetsSuffix, steps.size(), flat.size(), name);
  split(flat, off, steps, dst);
  return off;
}

// A column aligned with another column's offsets (one entry per entry of that column).
template <class T>
void read_aligned(const h5::Group& g, const std::string& name, const std::string& base, const std::vector<int64_t>& off,
                  std::vector<StepRecord>& steps, const std::function<std::vector<T>&(StepRecord&)>& dst) {
  const std::vector<T> flat = g.read_vector<T>(name);
  if (flat.size() != static_cast<uint64_t>(off.back())) {
    g.open_dataset(name).fail(std::to_string(flat.size()) + " entries, expected " + std::to_string(off.back()) +
                              " (one per entry of " + member_path(g, base) + ")");
  }
  split(flat, off, steps, dst);
}

void read_logits(const h5::Group& steps_group, const std::string& name, std::vector<StepRecord>& steps, bool draft) {
  const h5::Group g = steps_group.open_group(name);
  auto rows_of = [draft](StepRecord& s) -> std::vector<LogitRecord>& { return draft ? s.draft_logits : s.target_logits; };
  const std::string storage = g.read_string_attribute(L::kStorage);
  const int64_t V = g.read_int64_attribute(L::kVocabSize);
  if (V < 1 || V > INT32_MAX) g.fail("attribute 'vocab_size' is " + std::to_string(V) + ", expected a positive int32");

  uint64_t R = 0;
  const std::string data_name = storage == L::kStorageFull ? L::kFull : L::kTopkIds;
  if (storage == L::kStorageFull) {
    const h5::Dataset full = g.open_dataset(L::kFull);
    if (full.dtype() != h5::Dtype::float32) {
      full.fail(std::string("dtype is ") + h5::dtype_name(full.dtype()) + ", expected float32");
    }
    const std::vector<uint64_t> shape = full.shape();
    if (shape.size() != 2 || shape[1] != static_cast<uint64_t>(V)) {
      full.fail("expected shape (rows, " + std::to_string(V) + ") matching attribute 'vocab_size'");
    }
    full.checked_elements();  // (R, V) must fit in the file before rows are allocated
    R = shape[0];
    const std::vector<int64_t> off = read_offsets(g, L::kRowOffsets, steps.size(), R, L::kFull);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const auto n = static_cast<uint64_t>(off[s + 1] - off[s]);
      std::vector<float> block(n * static_cast<uint64_t>(V));  // (n, V)
      full.read_rows<float>(static_cast<uint64_t>(off[s]), n, block.data());
      auto& rows = rows_of(steps[s]);
      rows.resize(n);
      for (uint64_t r = 0; r < n; ++r) rows[r].full.assign(block.begin() + r * V, block.begin() + (r + 1) * V);
    }
  } else if (storage == L::kStorageTopk) {
    const int64_t k = g.read_int64_attribute(L::kK);
    if (k < 1 || k > V) g.fail("attribute 'k' is " + std::to_string(k) + ", expected 1 <= k <= vocab_size (" + std::to_string(V) + ")");
    uint64_t rows = 0, cols = 0;
    const std::vector<int32_t> ids = g.read_matrix<int32_t>(L::kTopkIds, &rows, &cols);
    if (cols != static_cast<uint64_t>(k)) {
      g.open_dataset(L::kTopkIds).fail("has " + std::to_string(cols) + " columns, expected k = " + std::to_string(k));
    }
    R = rows;
    const std::vector<float> values = g.read_matrix<float>(L::kTopkValues, &rows, &cols);
    if (rows != R || cols != static_cast<uint64_t>(k)) {
      g.open_dataset(L::kTopkValues).fail("shape (" + std::to_string(rows) + ", " + std::to_string(cols) +
                                          "), expected (" + std::to_string(R) + ", " + std::to_string(k) + ") like " +
                                          member_path(g, L::kTopkIds));
    }
    const std::vector<double> lse = g.read_vector<double>(L::kLogsumexp);
    const std::vector<uint64_t> checksum = g.read_vector<uint64_t>(L::kChecksum);
    if (lse.size() != R) g.open_dataset(L::kLogsumexp).fail(std::to_string(lse.size()) + " rows, expected " + std::to_string(R));
    if (checksum.size() != R) {
      g.open_dataset(L::kChecksum).fail(std::to_string(checksum.size()) + " rows, expected " + std::to_string(R));
    }
    const std::vector<int64_t> off = read_offsets(g, L::kRowOffsets, steps.size(), R, L::kTopkIds);
    const auto ku = static_cast<std::size_t>(k);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      auto& out = rows_of(steps[s]);
      for (auto r = static_cast<std::size_t>(off[s]); r < static_cast<std::size_t>(off[s + 1]); ++r) {
        LogitRecord rec;
        rec.summary.vocab_size = static_cast<int32_t>(V);
        rec.summary.topk_ids.assign(ids.begin() + r * ku, ids.begin() + (r + 1) * ku);
        rec.summary.topk_values.assign(values.begin() + r * ku, values.begin() + (r + 1) * ku);
        rec.summary.logsumexp = lse[r];
        rec.summary.checksum = checksum[r];
        out.push_back(std::move(rec));
      }
    }
  } else {
    g.fail("attribute 'storage' is '" + storage + "', expected 'full' or 'topk'");
  }

  if (draft) {
    std::vector<int64_t> off{0};
    for (StepRecord& s : steps) off.push_back(off.back() + static_cast<int64_t>(s.draft_logits.size()));
    read_aligned<int32_t>(g, L::kRowNodes, data_name, off, steps, [](StepRecord& s) -> auto& { return s.draft_logit_nodes; });
  }
}

// /steps/draft_sources (schema 1.3): four columns of one length, split by the group's row_offsets.
// The per-step count (none or one per draft node) and the positions are validate_trace's to check.
void read_draft_sources(const h5::Group& steps_group, std::vector<StepRecord>& steps) {
  const h5::Group g = steps_group.open_group(L::kDraftSources);
  const std::vector<uint8_t> origin = g.read_vector<uint8_t>(L::kSourceOrigin);
  const std::vector<int64_t> position = g.read_vector<int64_t>(L::kSourcePosition);
  const std::vector<int32_t> match_length = g.read_vector<int32_t>(L::kSourceMatchLength);
  const std::vector<int64_t> request = g.read_vector<int64_t>(L::kSourceRequest);
  const std::size_t n = origin.size();
  auto same_length = [&](const char* name, std::size_t size) {
    if (size != n) {
      g.open_dataset(name).fail(std::to_string(size) + " entries, expected " + std::to_string(n) + " (one per entry of " +
                                member_path(g, L::kSourceOrigin) + ")");
    }
  };
  same_length(L::kSourcePosition, position.size());
  same_length(L::kSourceMatchLength, match_length.size());
  same_length(L::kSourceRequest, request.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (origin[i] > 1) {
      g.open_dataset(L::kSourceOrigin).fail("entry " + std::to_string(i) + " is " + std::to_string(origin[i]) +
                                            ", expected 0 (context) or 1 (responses)");
    }
  }
  const std::vector<int64_t> off = read_offsets(g, L::kRowOffsets, steps.size(), n, L::kSourceOrigin);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (auto i = static_cast<std::size_t>(off[s]); i < static_cast<std::size_t>(off[s + 1]); ++i) {
      steps[s].draft_sources.push_back(
          {static_cast<DraftSourceRecord::Origin>(origin[i]), position[i], match_length[i], request[i]});
    }
  }
}

void read_steps(const h5::Group& run, Trace& t) {
  const h5::Group g = run.open_group(L::kSteps);
  const std::vector<int64_t> positions = g.read_vector<int64_t>(L::kPositions);
  auto& steps = t.steps;
  steps.resize(positions.size());
  for (std::size_t s = 0; s < steps.size(); ++s) steps[s].position = positions[s];

  read_ragged<int32_t>(g, L::kEmittedTokens, steps, [](StepRecord& s) -> auto& { return s.emitted_tokens; });
  if (g.has(L::kDraftTokens)) {
    const std::vector<int64_t> off =
        read_ragged<int32_t>(g, L::kDraftTokens, steps, [](StepRecord& s) -> auto& { return s.draft_tokens; });
    read_aligned<int32_t>(g, L::kDraftParents, L::kDraftTokens, off, steps,
                          [](StepRecord& s) -> auto& { return s.draft_parents; });
  }
  if (g.has(L::kAcceptedPath)) {
    read_ragged<int32_t>(g, L::kAcceptedPath, steps, [](StepRecord& s) -> auto& { return s.accepted_path; });
  }
  if (g.has(L::kAcceptDecisions)) {
    const std::vector<int64_t> off =
        read_ragged<uint8_t>(g, L::kAcceptDecisions, steps, [](StepRecord& s) -> auto& { return s.accept_decisions; });
    if (g.has(L::kAcceptNodes)) {
      read_aligned<int32_t>(g, L::kAcceptNodes, L::kAcceptDecisions, off, steps,
                            [](StepRecord& s) -> auto& { return s.accept_nodes; });
    }
  }
  if (g.has(L::kAcceptUniforms)) {
    read_ragged<double>(g, L::kAcceptUniforms, steps, [](StepRecord& s) -> auto& { return s.accept_uniforms; });
  }
  if (g.has(L::kBonusToken)) {
    const std::vector<int32_t> bonus = g.read_vector<int32_t>(L::kBonusToken);
    if (bonus.size() != steps.size()) {
      g.open_dataset(L::kBonusToken).fail(std::to_string(bonus.size()) + " entries, expected one per step (" +
                                          std::to_string(steps.size()) + ")");
    }
    for (std::size_t s = 0; s < steps.size(); ++s) steps[s].bonus_token = bonus[s];
  }
  if (g.has(L::kRandomCounters)) {
    uint64_t rows = 0, cols = 0;
    const std::vector<uint32_t> flat = g.read_matrix<uint32_t>(L::kRandomCounters, &rows, &cols);
    if (cols != 4) g.open_dataset(L::kRandomCounters).fail("has " + std::to_string(cols) + " columns, expected 4 (one Philox4x32 counter block per row)");
    const std::vector<int64_t> off = read_offsets(g, std::string(L::kRandomCounters) + L::kOffsetsSuffix, steps.size(),
                                                  rows, L::kRandomCounters);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      for (auto r = static_cast<std::size_t>(off[s]); r < static_cast<std::size_t>(off[s + 1]); ++r) {
        steps[s].random_counters.push_back({flat[4 * r], flat[4 * r + 1], flat[4 * r + 2], flat[4 * r + 3]});
      }
    }
  }
  if (g.has(L::kDraftSources)) read_draft_sources(g, steps);
  if (g.has(L::kTargetLogits)) read_logits(g, L::kTargetLogits, steps, false);
  if (g.has(L::kDraftLogits)) read_logits(g, L::kDraftLogits, steps, true);
  read_trace_diagnostics(g, t);  // optional per-layer and drafter tensors (1.2)
}

}  // namespace

namespace trace_file {

std::pair<int, int> parse_version(const std::string& file, const std::string& v) {
  const std::size_t dot = v.find('.');
  auto number = [](const std::string& s, int* out) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *out = std::atoi(s.c_str());
    return true;
  };
  int major = 0, minor = 0;
  if (dot == std::string::npos || !number(v.substr(0, dot), &major) || !number(v.substr(dot + 1), &minor)) {
    throw Error(file + ": /: attribute 'schema_version' is '" + v + "', expected \"<major>.<minor>\" such as \"" +
                trace_schema_version() + "\"");
  }
  return {major, minor};
}

std::pair<int, int> read_format_and_version(const h5::File& f, std::string* version) {
  const std::string& name = f.file_name();
  if (!f.has_attribute(L::kFormat)) {
    throw Error(name + ": not a specdec trace (root attribute 'format' missing, expected \"" + kTraceFormat + "\")");
  }
  const std::string format = f.read_string_attribute(L::kFormat);
  if (format != kTraceFormat) {
    throw Error(name + ": not a specdec trace (root attribute 'format' is \"" + format + "\", expected \"" +
                kTraceFormat + "\")");
  }
  *version = f.read_string_attribute(L::kSchemaVersion);
  return parse_version(name, *version);
}

void read_file_attributes(const h5::File& f, TraceMeta& meta) {
  meta.specdec_version = f.read_string_attribute(L::kSpecdecVersion);
  meta.created_utc = f.read_string_attribute(L::kCreatedUtc);
  // Absent before 1.1: the contract is unknown, and comparisons refuse the trace.
  meta.exactness_contract = f.has_attribute(L::kExactnessContract) ? f.read_string_attribute(L::kExactnessContract) : "";
}

void read_run(const h5::Group& run, Trace& t) {
  t.meta.method = run.read_string_attribute(L::kMethod);
  {
    const h5::Group meta = run.open_group(L::kMeta);
    t.meta.seed = meta.read_uint64_attribute(L::kSeed);
    t.meta.config_json = meta.read_string(L::kConfigJson);
    t.meta.sampling_json = meta.read_string(L::kSamplingJson);
    const h5::Group models = meta.open_group(L::kModels);
    for (const std::string& role : models.members()) {
      if (!models.has_group(role)) continue;  // not a model: something a newer minor added
      const h5::Group g = models.open_group(role);
      ModelInfo& m = t.meta.models[role];
      m.path = g.read_string_attribute(L::kPath);
      m.fingerprint = g.read_string_attribute(L::kFingerprint);
      m.config_json = g.read_string(L::kConfigJson);
    }
  }
  t.prompt = run.read_vector<int32_t>(L::kPromptTokens);
  read_steps(run, t);
  t.output = run.read_vector<int32_t>(L::kOutputTokens);
  t.stop_reason = run.read_string(L::kStopReason);

  if (run.has_group(L::kTiming)) {
    const h5::Group timing = run.open_group(L::kTiming);
    if (timing.has_attribute(L::kPrefillNs)) t.timing.prefill_ns = timing.read_int64_attribute(L::kPrefillNs);
    if (timing.has_attribute(L::kTotalNs)) t.timing.total_ns = timing.read_int64_attribute(L::kTotalNs);
    const std::string suffix = L::kNsSuffix;
    for (const std::string& m : timing.members()) {
      if (m.size() > suffix.size() && m.compare(m.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          timing.has_dataset(m)) {
        t.timing.step_ns[m.substr(0, m.size() - suffix.size())] = timing.read_vector<int64_t>(m);
      }
    }
  }
}

std::string batched_where_one_expected(const std::string& file, const std::string& version) {
  return file + ": a batched trace (schema " + version + ", several sequences, traces/SCHEMA.md) where one sequence's trace (schema " +
         trace_schema_version() + ") is expected; specdec trace check and specdec validate read batched traces";
}

}  // namespace trace_file

namespace {
Trace read_trace_here(const std::filesystem::path& path);
}  // namespace

Trace trace_file::read_trace_uncontained(const std::filesystem::path& path) { return read_trace_here(path); }

Trace read_trace(const std::filesystem::path& path) {
  // Once in a child first: a corrupt file may crash or hang libhdf5 before any check of ours.
  contain_read(path, [&] { read_trace_here(path); });
  return read_trace_here(path);
}

namespace {

Trace read_trace_here(const std::filesystem::path& path) {
  const std::string name = path.string();
  const h5::File f = h5::File::open_read_only(path);
  Trace t;
  const auto [major, minor] = trace_file::read_format_and_version(f, &t.meta.schema_version);
  if (major == kBatchedTraceSchemaMajor) throw Error(trace_file::batched_where_one_expected(name, t.meta.schema_version));
  if (major > kTraceSchemaMajor) {
    throw Error(name + ": trace schema version " + t.meta.schema_version + " is newer than this specdec reads (" +
                trace_schema_version() + ", major version " + std::to_string(kTraceSchemaMajor) +
                "); use a newer specdec");
  }
  if (major < kTraceSchemaMajor) {
    throw Error(name + ": trace schema version " + t.meta.schema_version + " is older than any this specdec reads (major " +
                std::to_string(kTraceSchemaMajor) + ")");
  }
  (void)minor;  // a newer minor only adds what this reader may ignore

  trace_file::read_file_attributes(f, t.meta);
  trace_file::read_run(f, t);
  try {
    validate_trace(t);
    validate_trace_diagnostics(t);
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  }
  return t;
}

}  // namespace

}  // namespace specdec
