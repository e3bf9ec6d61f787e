// Fuzzes tokenizer.json: loading, and for what loads, encoding a varied text, decoding what it
// encodes (all at once and streamed), and showing ids in and around the vocabulary.
#include <filesystem>

#include "tests/fuzz/fuzz_input.hpp"
#include "text/hf_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir = [] {
    auto d = specdec::fuzz::input_file("tokenizer", "");
    std::filesystem::create_directories(d);
    return d;
  }();
  specdec::fuzz::write_input(dir / "tokenizer.json", data, size);
  specdec::fuzz::expect_clean("fuzz_tokenizer", [&] {
    const auto t = specdec::text::HfTokenizer::load(dir);
    const std::string text = "Hello  world\n\tcaf\xC3\xA9 <s> 12345 \xF0\x9F\x99\x82 x";
    const std::vector<int32_t> ids = t->encode(text, true);
    (void)t->decode(ids, false);
    (void)t->decode(ids, true);
    specdec::text::TextStream stream(*t);
    for (int32_t id : ids) (void)stream.push(id);
    (void)stream.finish();
    for (int32_t id = -2; id < 300; ++id) (void)t->token_text(id);
    for (int32_t id = t->size() - 2; id < t->size() + 2; ++id) (void)t->token_text(id);
  });
  return 0;
}
