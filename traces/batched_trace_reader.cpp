// read_batched_trace: parses the 2.x layout of traces/SCHEMA.md; each sequence's run is read by
// the one-sequence reader's code (trace_file.hpp), so its objects are checked the same way.
#include <map>
#include <optional>
#include <string>

#include "reference/core/error.hpp"
#include "traces/batched_trace.hpp"
#include "traces/contained_read.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace_file.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {
namespace {
namespace L = trace_layout;

constexpr int64_t kMaxSequenceId = 0xFFFFFFFFLL;  // ids key Philox streams as uint32

// The major version and the version text, refusing files of the other layout or another major.
void check_batched_version(const std::string& name, const std::string& version, int major) {
  if (major == kTraceSchemaMajor) {
    throw Error(name + ": a trace of one sequence (schema " + version + "), not a batched trace (schema " +
                batched_trace_schema_version() + ", traces/SCHEMA.md \"Batched traces\")");
  }
  if (major > kBatchedTraceSchemaMajor) {
    throw Error(name + ": trace schema version " + version + " is newer than this specdec reads (" +
                batched_trace_schema_version() + "); use a newer specdec");
  }
  if (major != kBatchedTraceSchemaMajor) {
    throw Error(name + ": trace schema version " + version + " is not one this specdec reads (" + trace_schema_version() +
                " for one sequence, " + batched_trace_schema_version() + " for a batch)");
  }
}

// Offsets (T + 1) of the schedule: from 0, non-decreasing, ending at the number of entries.
std::vector<int64_t> read_schedule_offsets(const h5::Group& g, uint64_t entries) {
  const std::string name = std::string(L::kScheduleSequence) + L::kOffsetsSuffix;
  const std::vector<int64_t> off = g.read_vector<int64_t>(name);
  const h5::Dataset ds = g.open_dataset(name);
  if (off.empty()) ds.fail("no offsets, expected one per batch step + 1");
  if (off[0] != 0) ds.fail("first offset is " + std::to_string(off[0]) + ", expected 0");
  for (std::size_t i = 1; i < off.size(); ++i) {
    if (off[i] < off[i - 1]) {
      ds.fail("offsets decrease at index " + std::to_string(i) + " (" + std::to_string(off[i - 1]) + " then " +
              std::to_string(off[i]) + "); offsets must be non-decreasing");
    }
  }
  if (static_cast<uint64_t>(off.back()) != entries) {
    ds.fail("last offset is " + std::to_string(off.back()) + ", but " + g.path() + "/" + L::kScheduleSequence + " has " +
            std::to_string(entries) + " entries");
  }
  return off;
}

// A column aligned with /batch/schedule/sequence.
std::vector<int64_t> read_aligned(const h5::Group& g, const char* name, uint64_t entries) {
  std::vector<int64_t> v = g.read_vector<int64_t>(name);
  if (v.size() != entries) {
    g.open_dataset(name).fail(std::to_string(v.size()) + " entries, expected " + std::to_string(entries) + " (one per entry of " +
                              g.path() + "/" + L::kScheduleSequence + ")");
  }
  return v;
}

// "17" -> 17; nullopt unless canonical decimal (no sign, no leading zero) below 2^32.
std::optional<uint32_t> parse_id(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  const long long v = std::stoll(s);
  if (v > kMaxSequenceId) return std::nullopt;
  return static_cast<uint32_t>(v);
}

BatchedTrace read_here(const std::filesystem::path& path) {
  const std::string name = path.string();
  const h5::File f = h5::File::open_read_only(path);
  BatchedTrace b;
  const auto [major, minor] = trace_file::read_format_and_version(f, &b.meta.schema_version);
  check_batched_version(name, b.meta.schema_version, major);
  (void)minor;  // a newer minor only adds what this reader may ignore
  trace_file::read_file_attributes(f, b.meta);

  const h5::Group batch = f.open_group(L::kBatch);
  b.max_in_flight = batch.read_int64_attribute(L::kMaxInFlight);
  const std::vector<int64_t> ids = batch.read_vector<int64_t>(L::kSequenceIds);
  std::map<int64_t, std::size_t> first_at;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > kMaxSequenceId) {
      batch.open_dataset(L::kSequenceIds).fail("entry " + std::to_string(i) + " is " + std::to_string(ids[i]) +
                                               ", expected a sequence id in [0, 2^32)");
    }
    const auto [it, fresh] = first_at.emplace(ids[i], i);
    if (!fresh) {
      batch.open_dataset(L::kSequenceIds).fail("sequence id " + std::to_string(ids[i]) + " appears twice (entries " +
                                               std::to_string(it->second) + " and " + std::to_string(i) +
                                               "); ids must be distinct");
    }
  }
  if (ids.empty()) batch.open_dataset(L::kSequenceIds).fail("no sequences, expected at least one");

  const h5::Group schedule = batch.open_group(L::kSchedule);
  const std::vector<int64_t> seq = schedule.read_vector<int64_t>(L::kScheduleSequence);
  const std::vector<int64_t> off = read_schedule_offsets(schedule, seq.size());
  const std::vector<int64_t> step = read_aligned(schedule, L::kScheduleStep, seq.size());
  const std::vector<int64_t> rows = read_aligned(schedule, L::kScheduleRows, seq.size());
  for (std::size_t i = 0; i < seq.size(); ++i) {
    if (seq[i] < 0 || seq[i] > kMaxSequenceId) {
      schedule.open_dataset(L::kScheduleSequence).fail("entry " + std::to_string(i) + " is " + std::to_string(seq[i]) +
                                                       ", expected a sequence id in [0, 2^32)");
    }
  }
  for (std::size_t t = 0; t + 1 < off.size(); ++t) {
    std::vector<ScheduledStep>& entries = b.schedule.emplace_back();
    for (auto e = static_cast<std::size_t>(off[t]); e < static_cast<std::size_t>(off[t + 1]); ++e) {
      entries.push_back({static_cast<uint32_t>(seq[e]), step[e], rows[e]});
    }
  }

  // Every listed sequence has its group, and every group is listed.
  const h5::Group sequences = f.open_group(L::kSequences);
  for (const std::string& member : sequences.members()) {
    const std::optional<uint32_t> id = parse_id(member);
    if (!id || !first_at.count(*id)) {
      throw Error(name + ": " + sequences.path() + "/" + member + ": not a sequence listed in /" + L::kBatch + "/" +
                  L::kSequenceIds + " (expected one group per listed id, named by it in decimal)");
    }
  }
  for (const int64_t id : ids) {
    const std::string group = std::to_string(id);
    if (!sequences.has_group(group)) {
      throw Error(name + ": " + sequences.path() + "/" + group + ": group missing for sequence " + group + " (listed in /" +
                  L::kBatch + "/" + L::kSequenceIds + ")");
    }
    TraceSequence& q = b.sequences.emplace_back();
    q.id = static_cast<uint32_t>(id);
    q.trace.meta = b.meta;  // the file-level fields; read_run fills the rest
    trace_file::read_run(sequences.open_group(group), q.trace);
  }

  try {
    validate_batched_trace(b);
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  }
  return b;
}

}  // namespace

BatchedTrace trace_file::read_batched_trace_uncontained(const std::filesystem::path& path) { return read_here(path); }

BatchedTrace read_batched_trace(const std::filesystem::path& path) {
  // Once in a child first: a corrupt file may crash or hang libhdf5 before any check of ours.
  contain_read(path, [&] { read_here(path); });
  return read_here(path);
}

int trace_schema_major(const std::filesystem::path& path) {
  auto major_of = [&] {
    const h5::File f = h5::File::open_read_only(path);
    std::string version;
    return trace_file::read_format_and_version(f, &version).first;
  };
  contain_read(path, [&] { major_of(); });
  return major_of();
}

}  // namespace specdec
