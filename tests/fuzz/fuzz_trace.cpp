// Fuzzes the trace readers: bytes -> file -> read_trace, or read_batched_trace for a batched (2.x)
// file (each validates) -> write back -> read again. A trace that reads must write, and read back
// semantically equal (every sequence of a batch, and its schedule).
#include <string>

#include "tests/fuzz/fuzz_input.hpp"
#include "traces/batched_trace.hpp"
#include "traces/trace.hpp"

namespace {

void batched_round_trip(const std::filesystem::path& path, const std::filesystem::path& copy) {
  const specdec::BatchedTrace b = specdec::read_batched_trace(path);
  specdec::validate_batched_trace(b);
  try {
    specdec::write_batched_trace(copy, b);
    const specdec::BatchedTrace again = specdec::read_batched_trace(copy);
    specdec::fuzz::require(again.sequences.size() == b.sequences.size() && again.schedule.size() == b.schedule.size(),
                           "fuzz_trace", "a batched trace read back has other sequences or batch steps");
    for (std::size_t i = 0; i < b.sequences.size(); ++i) {
      std::string difference;
      specdec::fuzz::require(again.sequences[i].id == b.sequences[i].id &&
                                 specdec::semantically_equal(b.sequences[i].trace, again.sequences[i].trace, &difference),
                             "fuzz_trace", "sequence " + std::to_string(b.sequences[i].id) + " read back differs: " + difference);
    }
  } catch (const specdec::Error& e) {
    specdec::fuzz::require(false, "fuzz_trace", std::string("a batched trace that reads cannot be written back: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("trace", ".h5");
  static const auto copy = specdec::fuzz::input_file("trace-copy", ".h5");
  specdec::fuzz::write_input(path, data, size);
  specdec::fuzz::expect_clean("fuzz_trace", [&] {
    if (specdec::trace_schema_major(path) == specdec::kBatchedTraceSchemaMajor) return batched_round_trip(path, copy);
    const specdec::Trace t = specdec::read_trace(path);
    specdec::validate_trace(t);
    std::string difference;
    try {
      specdec::write_trace(copy, t);
      const specdec::Trace again = specdec::read_trace(copy);
      specdec::fuzz::require(specdec::semantically_equal(t, again, &difference), "fuzz_trace",
                             "a trace read back differs from what was written: " + difference);
    } catch (const specdec::Error& e) {
      specdec::fuzz::require(false, "fuzz_trace", std::string("a trace that reads cannot be written back: ") + e.what());
    }
  });
  return 0;
}
