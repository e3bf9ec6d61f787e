// Fuzzes the trace reader: bytes -> file -> read_trace (which validates) -> write_trace -> read
// again. A trace that reads must write, and read back semantically equal.
#include <string>

#include "tests/fuzz/fuzz_input.hpp"
#include "traces/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("trace", ".h5");
  static const auto copy = specdec::fuzz::input_file("trace-copy", ".h5");
  specdec::fuzz::write_input(path, data, size);
  specdec::fuzz::expect_clean("fuzz_trace", [&] {
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
