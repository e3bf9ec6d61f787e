// Fuzzes the safetensors reader: header parsing and validation on open, then every tensor read
// through each conversion the loaders use.
#include "reference/io/safetensors.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("safetensors", ".safetensors");
  specdec::fuzz::write_input(path, data, size);
  specdec::fuzz::expect_clean("fuzz_safetensors", [&] {
    const specdec::SafetensorsFile f(path);
    for (const specdec::TensorInfo& t : f.tensors()) {
      specdec::fuzz::expect_clean("fuzz_safetensors", [&] { (void)f.floats(t.name); });
      specdec::fuzz::expect_clean("fuzz_safetensors", [&] { (void)f.int64s(t.name); });
      (void)f.raw(t.name);
    }
  });
  return 0;
}
