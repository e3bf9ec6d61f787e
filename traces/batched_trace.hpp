#pragma once
// A batched trace (schema 2.x, traces/SCHEMA.md "Batched traces"): several sequences decoded
// together, each with exactly what a one-sequence trace holds (prompt, configuration, its own
// steps, output) keyed by its sequence id, plus the batch schedule: which sequences each batch
// step's target forward held, which of their steps it ran and how many rows each fed. Since a
// sequence decodes in a batch bitwise as it does alone with the same sequence id
// (reference/decoding/batched.hpp), each sequence replays and validates alone.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace specdec {

inline constexpr int kBatchedTraceSchemaMajor = 2;
inline constexpr int kBatchedTraceSchemaMinor = 1;
std::string batched_trace_schema_version();  // "2.1"

// One entry of a batch step's target forward.
struct ScheduledStep {
  uint32_t sequence = 0;  // the sequence id
  int64_t step = 0;       // which of that sequence's steps (index into its Trace::steps) the entry ran
  int64_t rows = 0;       // tokens it fed the forward: its prompt at step 0, else 1 + its draft nodes
};

struct TraceSequence {
  uint32_t id = 0;  // keys the sequence's random streams; equals its config_json "sequence"
  Trace trace;      // its run; the file-level fields of trace.meta are those of BatchedTrace::meta
};

struct BatchedTrace {
  // File-level fields only: specdec_version, created_utc, schema_version (set by the reader) and
  // exactness_contract; the rest of TraceMeta is per sequence.
  TraceMeta meta;
  int64_t max_in_flight = 0;                 // B: the most sequences one batch step may hold
  std::vector<TraceSequence> sequences;      // in request order; ids distinct
  std::vector<std::vector<ScheduledStep>> schedule;  // per batch step, in the forward's row order
};

// Throws specdec::Error "invalid batched trace: <where>: <what>" for a batch that breaks the
// schema: no sequences, a repeated id, a sequence whose own trace is invalid (validate_trace,
// named by its id) or whose config_json "sequence" is not its id, a schedule entry naming a
// sequence the trace does not hold, a sequence's steps scheduled other than once each, in order.
void validate_batched_trace(const BatchedTrace& batch);

// Validates, then writes atomically (write_trace's temporary file and rename).
void write_batched_trace(const std::filesystem::path& path, const BatchedTrace& batch);

// Reads and validates a 2.x file (contained as read_trace is); throws specdec::Error naming the
// file, the object and, for a sequence's problem, the sequence. A one-sequence (1.x) file is
// refused with a message that says so.
BatchedTrace read_batched_trace(const std::filesystem::path& path);

// The major schema version of a trace file: 1 (one sequence) or 2 (a batch). Throws as the
// readers do for a file that is not a trace.
int trace_schema_major(const std::filesystem::path& path);

// The sequence's trace as a one-sequence file holds it (the file-level fields filled in from
// the batch), e.g. to write it alone with write_trace.
Trace sequence_trace(const BatchedTrace& batch, std::size_t index);

}  // namespace specdec
