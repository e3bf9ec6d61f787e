// Fuzzes vocab.json: loading, and for what loads, encoding and decoding (byte-level text must
// round-trip exactly).
#include "reference/io/vocabulary.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("vocabulary", ".json");
  specdec::fuzz::write_input(path, data, size);
  specdec::fuzz::expect_clean("fuzz_vocabulary", [&] {
    const specdec::Vocabulary v = specdec::Vocabulary::load(path);
    const std::string text = "plain text, \xc3\xa9 and a broken \xe2\x82 sequence";
    const std::vector<int32_t> ids = v.encode(text);
    specdec::fuzz::require(v.decode(ids) == text, "fuzz_vocabulary", "decode(encode(text)) != text");
    // Ids around the byte range and the ends of the vocabulary (a special id may be in the millions).
    for (int32_t id = -2; id < 300; ++id) (void)v.token_text(id);
    for (int32_t id = v.size() - 2; id < v.size() + 2; ++id) (void)v.token_text(id);
  });
  return 0;
}
