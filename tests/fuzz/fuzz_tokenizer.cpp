// Fuzzes tokenizer.json: loading, and for what loads, encoding a varied text, decoding what it
// encodes (all at once and streamed), and showing ids in and around the vocabulary.
// The text is short, so the tokenizer's limits stay cheap to reach: normalized text may grow to
// about 1 MiB (16 times the text plus 1 MiB), a template adds at most 4096 ids, and the regex
// searches of one execution get 100 ms (instead of a second) before they are an error.
#include <chrono>
#include <filesystem>

#include "tests/fuzz/fuzz_input.hpp"
#include "text/hf_tokenizer.hpp"
#include "text/regex.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir = [] {
    auto d = specdec::fuzz::input_file("tokenizer", "");
    std::filesystem::create_directories(d);
    return d;
  }();
  specdec::fuzz::write_input(dir / "tokenizer.json", data, size);
  specdec::fuzz::expect_clean("fuzz_tokenizer", [&] {
    const specdec::text::RegexTimeBudget regex_time(std::chrono::milliseconds(100));
    const auto t = specdec::text::HfTokenizer::load(dir);
    const std::string text = "Hello  world\n\tcaf\xC3\xA9 <s> 12345 \xF0\x9F\x99\x82 x";
    std::vector<int32_t> ids = t->encode(text, true);
    // A normalizer may have grown the text a thousandfold within its limit: decoding the first
    // ids exercises the decoders as well, without an execution per million tokens.
    if (ids.size() > 4096) ids.resize(4096);
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
