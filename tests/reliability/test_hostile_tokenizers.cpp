// Hostile tokenizer files: tokenizer.json components nested tens of thousands deep, normalizers and
// post-processor templates that multiply their input, token ids that overflow the vocabulary's
// size, a Split regex that is quadratic in the text, and pipes or devices at a tokenizer's path.
// Each case crashed, hung or ran out of memory before its fix, so each runs the specdec binary in
// a child process with a timeout (and, outside ASan, a memory limit).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/reference/error_capture.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reliability/child_process.hpp"

namespace specdec {
namespace {
namespace fs = std::filesystem;
using testing::Child;
using testing::quoted;
using testing::run_shell;
using testing::ScratchDir;
using testing::specdec_cmd;

const fs::path kSource = SPECDEC_SOURCE_DIR;
const fs::path kModel = kSource / "models/target";

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// A memory limit for the child (virtual memory, KiB), left out under ASan, whose shadow memory
// needs far more address space.
std::string memory_limit(long kib) { return std::getenv("ASAN_OPTIONS") ? "" : "ulimit -v " + std::to_string(kib) + "; "; }

// A byte-level BPE over a, b, c and space (ids 0-3, merges none), with the given components as JSON
// text. Fits the bundled target model (vocab_size 259).
std::string tokenizer_json(const std::string& normalizer = "null", const std::string& pre_tokenizer = "null",
                           const std::string& post_processor = "null", const std::string& added_tokens = "[]",
                           const std::string& decoder = "{\"type\": \"ByteLevel\"}") {
  return "{\"version\": \"1.0\", \"added_tokens\": " + added_tokens + ", \"normalizer\": " + normalizer +
         ", \"pre_tokenizer\": " + pre_tokenizer + ", \"post_processor\": " + post_processor + ", \"decoder\": " + decoder +
         ", \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"\\u0120\": 3}, \"merges\": []}}";
}

// `depth` Sequence levels of a component around `leaf`, spelled out (a JSON library would recurse
// as deep to write it).
std::string nested_sequence(int depth, const std::string& list_key, const std::string& leaf) {
  std::string s;
  s.reserve(size_t(depth) * (list_key.size() + 32) + leaf.size());
  for (int i = 0; i < depth; ++i) s += "{\"type\": \"Sequence\", \"" + list_key + "\": [";
  s += leaf;
  for (int i = 0; i < depth; ++i) s += "]}";
  return s;
}

// A checkpoint directory: the bundled target model's config and weights (linked), and `tokenizer`
// as its tokenizer.json.
fs::path checkpoint_with(const ScratchDir& dir, const std::string& tokenizer) {
  const fs::path d = dir / "model";
  fs::create_directories(d);
  fs::create_symlink(kModel / "config.json", d / "config.json");
  fs::create_symlink(kModel / "model.safetensors", d / "model.safetensors");
  write(d / "tokenizer.json", tokenizer);
  return d;
}

TEST(HostileTokenizers, ComponentsNestedFortyFiveThousandDeepAreAnErrorNotACrash) {
  ScratchDir dir("hostile-tok-nested");
  const std::string deep = nested_sequence(45000, "normalizers", "{\"type\": \"Lowercase\"}");
  const fs::path model = checkpoint_with(dir, tokenizer_json(deep));
  const std::string m = quoted(model.string());
  const struct {
    const char* what;
    std::string args;
  } commands[] = {
      {"tokenize", "tokenize --model " + m + " --text abc"},
      {"generate", "generate --model " + m + " --prompt abc --max-new-tokens 1"},
      {"inspect", "inspect " + m},
  };
  for (const auto& c : commands) {
    const Child r = run_shell(specdec_cmd(c.args), dir, 60);
    EXPECT_EQ(r.code, 1) << c.what << ": exit " << r.code << " (139 = segfault, 134 = abort)\n" << r.err;
    EXPECT_CONTAINS(r.err, (model / "tokenizer.json").string());
    EXPECT_CONTAINS(r.err, "JSON nests deeper than 128 levels");
    EXPECT_LT(r.err.size(), 2000u) << c.what << ": the message holds more than it should";
  }
  // Every kind of nested component.
  const struct {
    const char* what;
    std::string json;
  } components[] = {
      {"pre_tokenizer", tokenizer_json("null", nested_sequence(45000, "pretokenizers", "{\"type\": \"WhitespaceSplit\"}"))},
      {"decoder", tokenizer_json("null", "null", "null", "[]", nested_sequence(45000, "decoders", "{\"type\": \"Fuse\"}"))},
      {"post_processor", tokenizer_json("null", "null", nested_sequence(45000, "processors", "{\"type\": \"ByteLevel\"}"))},
  };
  for (const auto& c : components) {
    write(model / "tokenizer.json", c.json);
    const Child r = run_shell(specdec_cmd("tokenize --model " + m + " --text abc"), dir, 60);
    EXPECT_EQ(r.code, 1) << c.what << ": exit " << r.code << "\n" << r.err;
    EXPECT_CONTAINS(r.err, "JSON nests deeper than 128 levels");
  }
}

TEST(HostileTokenizers, NestedComponentsNeedLittleMemory) {
  // 20,000 levels took more than 2 GB (a field path per level, each as long as the depth).
  ScratchDir dir("hostile-tok-memory");
  const fs::path model = checkpoint_with(dir, tokenizer_json(nested_sequence(20000, "normalizers", "{\"type\": \"Lowercase\"}")));
  const Child r = run_shell(memory_limit(1500000) + specdec_cmd("tokenize --model " + quoted(model.string()) + " --text abc"), dir, 60);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_CONTAINS(r.err, "JSON nests deeper than 128 levels");
}

TEST(HostileTokenizers, ANormalizerThatMultipliesItsInputIsRefused) {
  // Six Replace steps "a" -> 100 x "a": 4 characters would become 4 * 10^12.
  ScratchDir dir("hostile-tok-replace");
  std::string steps;
  for (int i = 0; i < 6; ++i) {
    steps += std::string(i ? ", " : "") + "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"" +
             std::string(100, 'a') + "\"}";
  }
  const fs::path model = checkpoint_with(dir, tokenizer_json("{\"type\": \"Sequence\", \"normalizers\": [" + steps + "]}"));
  const auto start = std::chrono::steady_clock::now();
  const Child r = run_shell(memory_limit(3000000) + specdec_cmd("tokenize --model " + quoted(model.string()) + " --text aaaa"), dir, 60);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_CONTAINS(r.err, (model / "tokenizer.json").string());
  EXPECT_CONTAINS(r.err, "field 'normalizer.normalizers[2]' (Replace) makes the text 4000000 bytes long from 4");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);

  // Pre-tokenizers too: each ByteLevel step with add_prefix_space doubles the text.
  std::string levels;
  for (int i = 0; i < 40; ++i) {
    levels += std::string(i ? ", " : "") + "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"use_regex\": false}";
  }
  write(model / "tokenizer.json", tokenizer_json("null", "{\"type\": \"Sequence\", \"pretokenizers\": [" + levels + "]}"));
  const Child p = run_shell(memory_limit(3000000) + specdec_cmd("tokenize --model " + quoted(model.string()) + " --text abc"), dir, 60);
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_CONTAINS(p.err, "field 'pre_tokenizer.pretokenizers[");
  EXPECT_CONTAINS(p.err, "(ByteLevel) makes the text");
}

TEST(HostileTokenizers, ATemplateOfAHundredMillionIdsIsRefusedAtLoad) {
  // 100,000 special tokens of 1,000 ids each around every prompt.
  ScratchDir dir("hostile-tok-template");
  std::string ids;
  for (int i = 0; i < 1000; ++i) ids += std::string(i ? "," : "") + "3";
  std::string single;
  single.reserve(100000 * 40);
  for (int i = 0; i < 100000; ++i) single += std::string(i ? "," : "") + "{\"SpecialToken\": {\"id\": \"X\", \"type_id\": 0}}";
  const std::string post = "{\"type\": \"TemplateProcessing\", \"single\": [" + single +
                           ", {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {\"X\": "
                           "{\"id\": \"X\", \"ids\": [" + ids + "], \"tokens\": []}}}";
  const fs::path model = checkpoint_with(dir, tokenizer_json("null", "null", post));
  const Child r = run_shell(memory_limit(3000000) + specdec_cmd("tokenize --model " + quoted(model.string()) + " --text abc"), dir, 60);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_CONTAINS(r.err, (model / "tokenizer.json").string());
  EXPECT_CONTAINS(r.err, "field 'post_processor.special_tokens.X.ids' makes the post-processor add more than 4096 token ids");
}

TEST(HostileTokenizers, TokenIdsNearTwoToTheThirtyOneAreRefusedNotOverflowed) {
  // An id of 2^31 - 1 made the vocabulary's size (largest id + 1) negative, which skipped the
  // check that the tokenizer fits the model.
  ScratchDir dir("hostile-tok-ids");
  const fs::path model = checkpoint_with(
      dir, tokenizer_json("null", "null", "null", "[{\"id\": 2147483647, \"content\": \"<x>\", \"special\": true}]"));
  const Child r = run_shell(specdec_cmd("tokenize --model " + quoted(model.string()) + " --text abc"), dir, 60);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_CONTAINS(r.err, (model / "tokenizer.json").string());
  EXPECT_CONTAINS(r.err, "field 'added_tokens[0].id' must be a token id, an integer in [0, 16777215] (got 2147483647");

  std::string j = tokenizer_json();
  j.replace(j.find("\"c\": 2"), 6, "\"c\": 2147483647");
  write(model / "tokenizer.json", j);
  const Child v = run_shell(specdec_cmd("tokenize --model " + quoted(model.string()) + " --text abc"), dir, 60);
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_CONTAINS(v.err, "field 'model.vocab' gives token 'c' the id 2147483647");
}

TEST(HostileTokenizers, AQuadraticSplitRegexEndsInAnErrorWithinSeconds) {
  // `.(?=.*b)` scans to the end of the text from every position: minutes over 100 KB.
  ScratchDir dir("hostile-tok-regex");
  const std::string split = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \".(?=.*b)\"}, \"behavior\": \"Isolated\", \"invert\": false}";
  const fs::path model = checkpoint_with(dir, tokenizer_json("null", split));
  write(dir / "prompt.txt", std::string(100000, 'a') + "b");
  const auto start = std::chrono::steady_clock::now();
  const Child r = run_shell(specdec_cmd("tokenize --model " + quoted(model.string()) + " --file " + quoted((dir / "prompt.txt").string())), dir, 30);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.code, 1) << "exit " << r.code << " (137 = killed at the 30 s timeout)\n" << r.err;
  EXPECT_CONTAINS(r.err, (model / "tokenizer.json").string() + ": field 'pre_tokenizer.pattern': the regex exceeded its search limit on this input");
  EXPECT_LT(seconds, 15.0);
}

TEST(HostileTokenizers, APipeOrADeviceAtATokenizersPathIsRefusedNotOpened) {
  ScratchDir dir("hostile-tok-fifo");
  const fs::path d = dir / "tok";
  fs::create_directories(d);
  const std::string cmd = specdec_cmd("tokenize --model " + quoted(d.string()) + " --text abc");
  // tokenizer.model, read by libsentencepiece itself.
  ASSERT_EQ(mkfifo((d / "tokenizer.model").c_str(), 0600), 0);
  Child r = run_shell(cmd, dir, 20);
  EXPECT_EQ(r.code, 1) << "exit " << r.code << " (137 = blocked until the timeout)\n" << r.err;
  EXPECT_CONTAINS(r.err, "tokenizer model '" + (d / "tokenizer.model").string() + "' is a pipe (FIFO)");
  fs::remove(d / "tokenizer.model");
  fs::create_symlink("/dev/zero", d / "tokenizer.model");
  r = run_shell(memory_limit(3000000) + cmd, dir, 20);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_CONTAINS(r.err, "is a character device");
  fs::remove(d / "tokenizer.model");
  // tokenizer.json and the tokenizer_config.json beside it.
  ASSERT_EQ(mkfifo((d / "tokenizer.json").c_str(), 0600), 0);
  r = run_shell(cmd, dir, 20);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_CONTAINS(r.err, "tokenizer file '" + (d / "tokenizer.json").string() + "' is a pipe (FIFO)");
  fs::remove(d / "tokenizer.json");
  write(d / "tokenizer.json", tokenizer_json());
  ASSERT_EQ(mkfifo((d / "tokenizer_config.json").c_str(), 0600), 0);
  r = run_shell(cmd, dir, 20);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_CONTAINS(r.err, "tokenizer config '" + (d / "tokenizer_config.json").string() + "' is a pipe (FIFO)");
}

}  // namespace
}  // namespace specdec
