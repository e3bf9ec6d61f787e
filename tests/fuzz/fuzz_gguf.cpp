// Fuzzes GGUF files: the reader's validation on open, every metadata value shown and read through
// each typed getter, every tensor dequantized, the model config built from the metadata, the
// weights loaded, and the tokenizer rebuilt and run on a varied text.
#include <chrono>

#include "reference/io/gguf.hpp"
#include "reference/io/gguf_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/model_config.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "text/gguf_tokenizer.hpp"
#include "text/regex.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("gguf", ".gguf");
  specdec::fuzz::write_input(path, data, size);
  specdec::fuzz::expect_clean("fuzz_gguf", [&] {
    const specdec::GgufFile f(path);
    for (const auto& [key, v] : f.metadata()) {
      (void)v.summary();
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_string(key); });
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_int(key); });
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_float(key); });
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_bool(key); });
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_strings(key); });
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_floats(key); });
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.get_ints(key); });
    }
    for (const specdec::GgufTensorInfo& t : f.tensors()) {
      specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)f.floats(t.name); });
    }
    specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)specdec::parse_model_config(specdec::gguf_hf_config(f), path.string()); });
    specdec::fuzz::expect_clean("fuzz_gguf", [&] { (void)specdec::load_llama_checkpoint(path); });
    specdec::fuzz::expect_clean("fuzz_gguf", [&] {
      const specdec::text::RegexTimeBudget regex_time(std::chrono::milliseconds(100));
      const auto t = specdec::text::load_gguf_tokenizer(f);
      const std::vector<int32_t> ids = t->encode("Hello  world\n\tcaf\xC3\xA9 <s> 12345 \xF0\x9F\x99\x82 x", true);
      (void)t->decode(ids, false);
      for (int32_t id = -1; id < 40; ++id) (void)t->token_text(id);
    });
  });
  return 0;
}
