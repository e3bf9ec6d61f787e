#pragma once
// What the two file layouts of traces/SCHEMA.md share. A trace file's root carries the file-level
// attributes (format, schema_version, specdec_version, created_utc, exactness_contract); a run of
// one sequence (attribute `method`, /meta, /prompt, /steps, /output, /timing) sits at the root of
// a 1.x file and in each /sequences/<id> group of a 2.x (batched) file, written and read by the
// same code.
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include "traces/batched_trace.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"

namespace specdec::trace_file {

// "1.2" -> {1, 2}; anything else is an error naming the file.
std::pair<int, int> parse_version(const std::string& file, const std::string& version);

// Checks `format` and reads `schema_version`; throws naming the file when it is not a trace.
std::pair<int, int> read_format_and_version(const h5::File& f, std::string* version);

// The provenance attributes every trace file carries at its root (into meta's fields of the same
// names; `schema_version` is written by the caller).
void write_file_attributes(h5::File& f, const TraceMeta& meta, const std::string& schema_version);
void read_file_attributes(const h5::File& f, TraceMeta& meta);

// One sequence's run under `run` (the root or a sequence group): everything of `t` but the
// file-level attributes. read_run does not validate.
void write_run(h5::Group& run, const Trace& t);
// Writes a new trace file at `path` atomically: `check` first (its errors, and those of `fill` and
// the save, become "PATH: cannot write trace: ..."), then `fill` on an in-memory file, then the save.
void save_file(const std::filesystem::path& path, const std::function<void()>& check,
               const std::function<void(h5::File&)>& fill);
void read_run(const h5::Group& run, Trace& t);

// read_trace and read_batched_trace without their containment (traces/contained_read.hpp): only for
// a file that has just been read in a contained child (check_trace_file does so), where the same
// read is safe to repeat in this process.
Trace read_trace_uncontained(const std::filesystem::path& path);
BatchedTrace read_batched_trace_uncontained(const std::filesystem::path& path);

// "<file>: a batched trace (schema <version>, ...) where one sequence's trace is expected ...": the
// one message for a batched file given where one sequence's is read.
std::string batched_where_one_expected(const std::string& file, const std::string& version);

}  // namespace specdec::trace_file
