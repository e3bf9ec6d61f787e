// write_batched_trace: the 2.x layout of traces/SCHEMA.md, written atomically.
#include <filesystem>

#include "reference/core/error.hpp"
#include "traces/batched_trace.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace_file.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {
namespace {
namespace L = trace_layout;

void write_batch(h5::File& f, const BatchedTrace& b) {
  trace_file::write_file_attributes(f, b.meta, batched_trace_schema_version());
  h5::Group batch = f.create_group(L::kBatch);
  batch.write_attribute(L::kMaxInFlight, b.max_in_flight);
  std::vector<int64_t> ids;
  for (const TraceSequence& q : b.sequences) ids.push_back(q.id);
  batch.write_vector<int64_t>(L::kSequenceIds, ids);

  // The schedule as the schema's other ragged columns: flat entries + offsets per batch step.
  std::vector<int64_t> sequence, step, rows, offsets{0};
  for (const auto& entries : b.schedule) {
    for (const ScheduledStep& e : entries) {
      sequence.push_back(e.sequence);
      step.push_back(e.step);
      rows.push_back(e.rows);
    }
    offsets.push_back(static_cast<int64_t>(sequence.size()));
  }
  h5::Group schedule = batch.create_group(L::kSchedule);
  schedule.write_vector<int64_t>(L::kScheduleSequence, sequence);
  schedule.write_vector<int64_t>(std::string(L::kScheduleSequence) + L::kOffsetsSuffix, offsets);
  schedule.write_vector<int64_t>(L::kScheduleStep, step);
  schedule.write_vector<int64_t>(L::kScheduleRows, rows);

  h5::Group sequences = f.create_group(L::kSequences);
  for (const TraceSequence& q : b.sequences) {
    h5::Group g = sequences.create_group(std::to_string(q.id));
    trace_file::write_run(g, q.trace);
  }
}

}  // namespace

void write_batched_trace(const std::filesystem::path& path, const BatchedTrace& batch) {
  trace_file::save_file(
      path, [&] { validate_batched_trace(batch); }, [&](h5::File& f) { write_batch(f, batch); });
}

}  // namespace specdec
