// Hostile options and files, round two: thread counts that crashed libgomp, JSON nested deep enough
// to overflow the stack after a successful parse, and paths that are not regular files (a FIFO
// blocks an open forever, /dev/zero never ends). Cases that crashed or hung before their fix run
// the specdec binary in a child process with a timeout.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/io/input_file.hpp"
#include "reference/io/json_input.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/io/vocabulary.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/ops.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reliability/child_process.hpp"

namespace specdec {
namespace {
namespace fs = std::filesystem;
using testing::Child;
using testing::error_of;
using testing::quoted;
using testing::run_shell;
using testing::ScratchDir;
using testing::specdec_cmd;

const fs::path kSource = SPECDEC_SOURCE_DIR;
const std::string kModel = (kSource / "models/target").string();

std::string nested(int depth, const std::string& inner = "0") {
  return std::string(size_t(depth), '[') + inner + std::string(size_t(depth), ']');
}

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// ---- threads ------------------------------------------------------------------------------------

TEST(HostileThreads, ATenThousandfoldThreadCountIsRefusedNotCrashed) {
  ScratchDir dir("hostile-threads");
  const Child c = run_shell(specdec_cmd("generate --model " + quoted(kModel) +
                                        " --prompt-ids 0,5,6 --max-new-tokens 2 --threads 100000"),
                            dir, 60);
  EXPECT_EQ(c.code, 1) << "stderr:\n" << c.err;
  EXPECT_NE(c.err.find("--threads is 100000, more than specdec supports (1024)"), std::string::npos) << c.err;
  const Child b = run_shell(specdec_cmd("bench --model " + quoted(kModel) + " --threads 50000"), dir, 60);
  EXPECT_EQ(b.code, 1) << "stderr:\n" << b.err;
  EXPECT_NE(b.err.find("more than specdec supports (1024)"), std::string::npos) << b.err;
}

TEST(HostileThreads, TheLibraryRefusesTooManyThreadsAndKeepsItsSetting) {
  const int before = ops::num_threads();
  EXPECT_CONTAINS(error_of([] { ops::set_num_threads(kMaxThreads + 1); }), "more than specdec supports (1024)");
  EXPECT_EQ(ops::num_threads(), before);
  ops::set_num_threads(before);
}

// ---- JSON nesting -------------------------------------------------------------------------------

TEST(JsonDepth, TheLimitIsExactAndStringsDoNotCount) {
  EXPECT_NO_THROW(check_json_depth(nested(kMaxJsonDepth), "x"));
  EXPECT_CONTAINS(error_of([] { check_json_depth(nested(kMaxJsonDepth + 1), "deep.json"); }),
                  "deep.json: JSON nests deeper than 128 levels (at byte 128)");
  // Brackets inside strings, and escaped quotes that do not end them, are text.
  EXPECT_NO_THROW(check_json_depth("[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]", "x"));
  // Objects count like arrays.
  std::string obj;
  for (int i = 0; i <= kMaxJsonDepth; ++i) obj += "{\"a\":";
  EXPECT_CONTAINS(error_of([&] { check_json_depth(obj, "o"); }), "nests deeper than 128");
  EXPECT_CONTAINS(error_of([] { parse_json("{\"a\": }", "bad.json"); }), "bad.json: not valid JSON");
}

TEST(JsonDepth, EveryFileReaderRefusesDeepNestingWithTheFileName) {
  ScratchDir dir("hostile-json-depth");
  const std::string deep = nested(100000);
  write(dir / "tree.json", deep);
  EXPECT_CONTAINS(error_of([&] { load_tree_choices(dir / "tree.json"); }), "nests deeper than 128 levels");
  EXPECT_CONTAINS(error_of([&] { tree_choices_from_spec(deep); }), "nests deeper than 128 levels");
  write(dir / "config.json", "{\"x\": " + deep + "}");
  EXPECT_CONTAINS(error_of([&] { load_model_config(dir / "config.json"); }), "config.json: JSON nests deeper");
  write(dir / "vocab.json", "{\"format\": " + deep + "}");
  EXPECT_CONTAINS(error_of([&] { Vocabulary::load(dir / "vocab.json"); }), "vocab.json: JSON nests deeper");
  // A safetensors header: 8-byte little-endian length, then the JSON.
  const std::string header = "{\"__metadata__\": " + nested(5000, "\"a\"") + "}";
  std::string st(8, '\0');
  for (int i = 0; i < 8; ++i) st[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  write(dir / "m.safetensors", st + header);
  EXPECT_CONTAINS(error_of([&] { SafetensorsFile f((dir / "m.safetensors").string()); }), "nests deeper than 128");
}

TEST(JsonDepth, ATreeFileOfAHundredThousandBracketsIsAnErrorNotACrash) {
  ScratchDir dir("hostile-tree-depth");
  write(dir / "tree.json", nested(100000));
  const std::string base = specdec_cmd("generate --model " + quoted(kModel) + " --prompt-ids 0,5,6 --max-new-tokens 2 "
                                       "--method eagle --drafter " + quoted((kSource / "models/eagle1").string()));
  const Child c = run_shell(base + " --tree " + quoted((dir / "tree.json").string()), dir, 60);
  EXPECT_EQ(c.code, 1) << "stderr:\n" << c.err;
  EXPECT_NE(c.err.find("JSON nests deeper than 128 levels"), std::string::npos) << c.err;
  // Inline, as deep as one argument may be (the kernel's limit is 128 KiB per argument).
  write(dir / "inline.json", nested(60000));
  const Child inline_tree = run_shell(base + " --tree \"$(cat " + quoted((dir / "inline.json").string()) + ")\"", dir, 60);
  EXPECT_EQ(inline_tree.code, 1) << "stderr:\n" << inline_tree.err.substr(0, 2000);
  EXPECT_NE(inline_tree.err.find("JSON nests deeper than 128 levels"), std::string::npos) << inline_tree.err.substr(0, 2000);
  EXPECT_LT(inline_tree.err.size(), 2000u) << "the error should quote only the start of a long inline tree";
}

// ---- paths that are not regular files -----------------------------------------------------------

TEST(InputFiles, DevicesPipesAndDirectoriesAreRefusedBeforeOpening) {
  ScratchDir dir("hostile-input-files");
  EXPECT_CONTAINS(error_of([] { read_input_file("/dev/zero", "--file"); }), "'/dev/zero' is a character device, expected a regular file");
  EXPECT_CONTAINS(error_of([&] { read_input_file(dir.path().string(), "x"); }), "is a directory");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_CONTAINS(error_of([&] { read_input_file(fifo.string(), "tree choices file"); }), "is a pipe (FIFO)");
  EXPECT_CONTAINS(error_of([&] { read_input_file((dir / "missing").string(), "model config"); }),
                  "cannot open model config '");
  write(dir / "big", std::string(100, 'x'));
  EXPECT_CONTAINS(error_of([&] { read_input_file((dir / "big").string(), "spec", 99); }), "is 100 bytes, more than the limit of 99");
  EXPECT_EQ(read_input_file((dir / "big").string(), "spec", 100), std::string(100, 'x'));
}

TEST(InputFiles, TheCommandLineRefusesAFifoOrDevZeroInsteadOfBlocking) {
  ScratchDir dir("hostile-fifo-cli");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string name, args, expect;
  };
  const std::string eagle = quoted((kSource / "models/eagle1").string());
  const Case cases[] = {
      {"tokenize --file /dev/zero", "tokenize --model " + quoted(kModel) + " --file /dev/zero", "is a character device"},
      {"tokenize --file FIFO", "tokenize --model " + quoted(kModel) + " --file " + quoted(fifo.string()), "is a pipe (FIFO)"},
      {"generate --tree FIFO",
       "generate --model " + quoted(kModel) + " --prompt-ids 5,6 --method eagle --drafter " + eagle + " --tree " + quoted(fifo.string()),
       "is a pipe (FIFO)"},
      {"generate --backend plugin:FIFO", "generate --model " + quoted(kModel) + " --prompt-ids 5,6 --backend plugin:" + quoted(fifo.string()),
       "is not a regular file"},
      {"inspect FIFO", "inspect " + quoted(fifo.string()), ""},
  };
  for (const Case& c : cases) {
    const Child r = run_shell(specdec_cmd(c.args), dir, 30);
    EXPECT_EQ(r.code, 1) << c.name << " (137 = killed by the timeout: it blocked)\nstderr:\n" << r.err;
    if (!c.expect.empty()) EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << ":\n" << r.err;
  }
}

}  // namespace
}  // namespace specdec
