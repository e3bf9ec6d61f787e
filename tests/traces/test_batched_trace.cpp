// Batched traces (schema 2.0, traces/SCHEMA.md "Batched traces"): a batch of sequences round-trips
// through write_batched_trace / read_batched_trace and passes trace check; one-sequence traces of
// every older version still read; each kind of malformed batch (a sequence group missing, a
// repeated sequence id, a schedule naming a sequence the file does not hold, steps scheduled out
// of order, a sequence's own invariant broken) is refused naming what and where.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"
#include "tests/traces/trace_fixtures.hpp"
#include "traces/batched_trace.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace_check.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using trace_test::TempDir;

// A fixture trace with the run configuration trace check asks for, keyed by `id`; its output ends
// at max_new_tokens, as its stop_reason says.
Trace keyed(Trace t, uint32_t id) {
  nlohmann::json method = {{"method", t.meta.method}};
  if (t.meta.method != "sequential") method["drafter"] = "models/tiny-eagle", method["tree"] = "[[0],[1],[0,0],[0,1],[0,0,0]]";
  t.meta.config_json = nlohmann::json{{"method", method}, {"max_new_tokens", int(t.output.size())}, {"stop_at_eos", true}, {"sequence", id}}.dump();
  return t;
}

// Sequences 4 (sequential, 6 steps, prompt 5) and 9 (tree-shaped, 4 steps, prompt 3), B = 2:
// both prefill together, then run side by side until sequence 9 is done.
BatchedTrace two_sequences() {
  BatchedTrace b;
  b.meta.specdec_version = "0.1.0-test";
  b.meta.created_utc = "2024-05-01T12:00:00Z";
  b.max_in_flight = 2;
  b.sequences.push_back({4, keyed(trace_test::sequential_trace(1, true), 4)});
  b.sequences.push_back({9, keyed(trace_test::speculative_trace(2), 9)});
  b.schedule.push_back({{4, 0, 5}, {9, 0, 3}});
  for (int64_t s = 1; s < 6; ++s) {
    std::vector<ScheduledStep> step = {{4, s, 1}};
    if (s < 4) step.push_back({9, s, 6});  // pending token + 5 draft nodes
    b.schedule.push_back(step);
  }
  return b;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string problems(const TraceCheckResult& r) {
  std::string out;
  for (const TraceProblem& p : r.problems) out += p.where + ": " + p.what + "\n";
  return out;
}

bool has_problem(const TraceCheckResult& r, const std::string& where, const std::string& what) {
  for (const TraceProblem& p : r.problems)
    if (p.where == where && p.what.find(what) != std::string::npos) return true;
  return false;
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "wanted: " << (part) << "\ngot: " << (text)
#define EXPECT_PROBLEM(r, where, what) EXPECT_TRUE(has_problem(r, where, what)) << "wanted " << where << ": " << what << "\ngot:\n" << problems(r)

// The written batch, edited in place with the HDF5 wrapper.
fs::path edited(const TempDir& dir, const std::string& name, const std::function<void(h5::File&)>& edit) {
  const fs::path path = dir / name;
  write_batched_trace(path, two_sequences());
  h5::File f = h5::File::open_read_write(path);
  edit(f);
  f.close();
  return path;
}

void rewrite_vector(h5::Group g, const std::string& name, const std::function<void(std::vector<int64_t>&)>& edit) {
  std::vector<int64_t> v = g.read_vector<int64_t>(name);
  edit(v);
  g.remove(name);
  g.write_vector<int64_t>(name, v);
}

TEST(BatchedTrace, RoundTripsAndPassesCheck) {
  TempDir dir;
  const BatchedTrace b = two_sequences();
  write_batched_trace(dir / "batch.h5", b);
  const BatchedTrace back = read_batched_trace(dir / "batch.h5");
  EXPECT_EQ(back.meta.schema_version, batched_trace_schema_version());
  EXPECT_EQ(back.meta.specdec_version, "0.1.0-test");
  EXPECT_EQ(back.max_in_flight, 2);
  ASSERT_EQ(back.sequences.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.sequences[i].id, b.sequences[i].id);
    std::string diff;
    EXPECT_TRUE(semantically_equal(back.sequences[i].trace, b.sequences[i].trace, &diff)) << diff;
    EXPECT_EQ(back.sequences[i].trace.timing.step_ns, b.sequences[i].trace.timing.step_ns);
  }
  ASSERT_EQ(back.schedule.size(), b.schedule.size());
  for (std::size_t t = 0; t < b.schedule.size(); ++t) {
    ASSERT_EQ(back.schedule[t].size(), b.schedule[t].size());
    for (std::size_t e = 0; e < b.schedule[t].size(); ++e) {
      EXPECT_EQ(back.schedule[t][e].sequence, b.schedule[t][e].sequence);
      EXPECT_EQ(back.schedule[t][e].step, b.schedule[t][e].step);
      EXPECT_EQ(back.schedule[t][e].rows, b.schedule[t][e].rows);
    }
  }
  // A sequence alone is a one-sequence trace with the file's provenance.
  const Trace alone = sequence_trace(back, 1);
  EXPECT_EQ(alone.meta.created_utc, "2024-05-01T12:00:00Z");
  write_trace(dir / "alone.h5", alone);
  EXPECT_TRUE(semantically_equal(read_trace(dir / "alone.h5"), b.sequences[1].trace));

  const TraceCheckResult r = check_trace_file(dir / "batch.h5");
  EXPECT_TRUE(r.valid()) << problems(r);
  EXPECT_EQ(r.schema_version, batched_trace_schema_version());
  EXPECT_EQ(r.sequences, 2);
  EXPECT_EQ(r.steps, 10);
  EXPECT_EQ(trace_schema_major(dir / "batch.h5"), 2);
}

TEST(BatchedTrace, EachReaderNamesTheOtherLayout) {
  TempDir dir;
  write_batched_trace(dir / "batch.h5", two_sequences());
  write_trace(dir / "one.h5", trace_test::sequential_trace(3, false));
  EXPECT_CONTAINS(error_of([&] { read_trace(dir / "batch.h5"); }), "a batched trace (schema " + batched_trace_schema_version());
  EXPECT_CONTAINS(error_of([&] { read_batched_trace(dir / "one.h5"); }),
                  "a trace of one sequence (schema " + trace_schema_version() + "), not a batched trace");
  EXPECT_EQ(trace_schema_major(dir / "one.h5"), 1);
}

// Traces of one sequence, of every version up to 1.2, read as they always did; a batch lists
// the same checks for its sequences.
TEST(BatchedTrace, OlderVersionsStillRead) {
  TempDir dir;
  const Trace t = trace_test::speculative_trace(5);
  for (const char* version : {"1.0", "1.1", "1.2"}) {
    const fs::path p = dir / (std::string("v") + version + ".h5");
    write_trace(p, t);
    h5::File f = h5::File::open_read_write(p);
    f.write_attribute("schema_version", std::string(version));
    f.close();
    const Trace back = read_trace(p);
    EXPECT_EQ(back.meta.schema_version, version);
    EXPECT_TRUE(semantically_equal(back, t)) << version;
    EXPECT_EQ(trace_schema_major(p), 1);
  }
  const fs::path golden = fs::path(SPECDEC_SOURCE_DIR) / "traces/golden/eagle3-chain_code_sample.h5";
  EXPECT_EQ(read_trace(golden).meta.schema_version, "1.1");
}

TEST(BatchedTrace, MalformedBatchesAreRefusedNamingWhatAndWhere) {
  TempDir dir;
  struct Case {
    const char* name;
    std::function<void(h5::File&)> edit;
    std::string read_error;          // part of read_batched_trace's message
    std::string where, check_error;  // the problem trace check lists
  };
  const std::vector<Case> cases = {
      {"missing_group", [](h5::File& f) { f.open_group("sequences").remove("9"); },
       "/sequences/9: group missing for sequence 9 (listed in /batch/sequence_ids)", "/sequences/9",
       "missing, expected the group of sequence 9"},
      {"duplicate_id",
       [](h5::File& f) { rewrite_vector(f.open_group("batch"), "sequence_ids", [](auto& v) { v = {4, 4}; }); },
       "/batch/sequence_ids: sequence id 4 appears twice (entries 0 and 1)", "/batch/sequence_ids",
       "sequence id 4 appears twice"},
      {"unknown_sequence",
       [](h5::File& f) { rewrite_vector(f.open_group("batch/schedule"), "sequence", [](auto& v) { v[3] = 7; }); },
       "schedule[1][1]: names sequence 7, which the trace does not hold (it holds 4, 9)", "/batch/schedule/sequence",
       "batch step 1 names sequence 7, which the trace does not hold"},
      {"steps_out_of_order",
       [](h5::File& f) { rewrite_vector(f.open_group("batch/schedule"), "step", [](auto& v) { v[3] = 2; }); },
       "schedule[1][1]: runs step 2 of sequence 9, expected its step 1", "/batch/schedule", "runs step 2 of sequence 9"},
      {"wrong_rows",
       [](h5::File& f) { rewrite_vector(f.open_group("batch/schedule"), "rows", [](auto& v) { v[3] = 4; }); },
       "schedule[1][1]: 4 rows for step 1 of sequence 9, expected 6", "/batch/schedule", "4 rows for step 1 of sequence 9"},
      {"positions_offset",
       [](h5::File& f) { rewrite_vector(f.open_group("sequences/4/steps"), "positions", [](auto& v) { for (auto& p : v) ++p; }); },
       "sequence 4: invalid trace: steps[0].position: 6, expected 5", "/sequences/4/steps/positions",
       "step 0 has position 6, expected 5"},
      {"sequence_key",
       [](h5::File& f) {
         h5::Group meta = f.open_group("sequences/9/meta");
         nlohmann::json j = nlohmann::json::parse(meta.read_string("config_json"));
         j["sequence"] = 4;
         meta.remove("config_json");
         meta.write_string("config_json", j.dump());
       },
       "sequence 9: meta.config_json: \"sequence\" is 4, expected 9", "/sequences/9/meta/config_json",
       "sequence is 4, expected 9 (the id of its group)"},
  };
  for (const Case& c : cases) {
    const fs::path p = edited(dir, std::string(c.name) + ".h5", c.edit);
    const std::string e = error_of([&] { read_batched_trace(p); });
    EXPECT_CONTAINS(e, p.string() + ": ") << c.name;
    EXPECT_CONTAINS(e, c.read_error) << c.name;
    const TraceCheckResult r = check_trace_file(p);
    EXPECT_FALSE(r.valid()) << c.name;
    EXPECT_PROBLEM(r, c.where, c.check_error) << c.name;
  }
}

TEST(BatchedTrace, AnInvalidBatchIsNeverWritten) {
  TempDir dir;
  BatchedTrace b = two_sequences();
  b.sequences[1].id = 4;
  EXPECT_CONTAINS(error_of([&] { write_batched_trace(dir / "dup.h5", b); }), "sequence id 4 repeats sequences[0]'s");
  b = two_sequences();
  b.schedule.pop_back();
  EXPECT_CONTAINS(error_of([&] { write_batched_trace(dir / "short.h5", b); }),
                  "schedule: runs 5 of sequence 4's 6 steps, expected every step once");
  b = two_sequences();
  b.schedule[0].push_back({4, 1, 1});
  EXPECT_CONTAINS(error_of([&] { write_batched_trace(dir / "twice.h5", b); }), "holds 3 sequences, more than max_in_flight 2");
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace specdec
