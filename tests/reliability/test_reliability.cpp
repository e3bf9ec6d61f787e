// Untrusted files and hostile options: each case here once crashed, hung, overflowed, allocated
// gigabytes or damaged a file. Cases that could crash or hang before their fix run the specdec
// binary in a child process (with a timeout), so a regression fails the test instead of the suite.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/vocabulary.hpp"
#include "runtime/method_runner.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reliability/child_process.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {
namespace fs = std::filesystem;
using testing::error_of;
using testing::ScratchDir;
using testing::Child;
using testing::quoted;
using testing::run_shell;
using testing::slurp;
using testing::specdec_cmd;

const fs::path kSource = SPECDEC_SOURCE_DIR;
const fs::path kInputs = kSource / "tests/reliability/inputs";
const std::string kModel = (kSource / "models/target").string();

// Entries of a directory other than the test's own capture files.
std::vector<std::string> listing(const ScratchDir& dir) {
  std::vector<std::string> names;
  for (const std::string& n : dir.entries()) {
    if (n != ".child.out" && n != ".child.err") names.push_back(n);
  }
  return names;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A process id that is certainly not running: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// ---- 1. the atomic writer replaces only regular files --------------------------------------------

TEST(AtomicWriter, RefusesToReplaceAPipeALinkOrADevice) {
  ScratchDir dir("reliability-dest");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_CONTAINS(error_of([&] { write_file_atomically(fifo, "x"); }), "pipe or socket");
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced";

  const fs::path target = dir / "target.txt", link = dir / "link.txt";
  write_file_atomically(target, "old");
  fs::create_symlink(target, link);
  EXPECT_CONTAINS(error_of([&] { write_file_atomically(link, "new"); }), "symbolic link");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "old");

  // A regular file is still replaced, and nothing temporary is left behind.
  write_file_atomically(target, "new");
  EXPECT_EQ(slurp(target), "new");
  EXPECT_EQ(joined(listing(dir)), "link.txt, pipe, target.txt");

  // A character device like /dev/full (made here, when the test may create device nodes).
  const fs::path dev = dir / "full";
  if (mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 7)) == 0) {
    EXPECT_CONTAINS(error_of([&] { write_file_atomically(dev, "x"); }), "is a device");
    EXPECT_TRUE(fs::is_character_file(dev)) << "the device node was replaced by a file";
  }
}

TEST(AtomicWriter, RecordToDevFullFailsAndLeavesTheDevice) {
  ScratchDir dir("reliability-devfull");
  if (!fs::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const Child c = run_shell(specdec_cmd("record --model " + quoted(kModel) + " --prompt-ids 5,6 --max-new-tokens 2 --out /dev/full"), dir);
  EXPECT_EQ(c.code, 1) << c.err;
  EXPECT_CONTAINS(c.err, "is a device");
  EXPECT_TRUE(fs::is_character_file("/dev/full")) << "/dev/full is no longer a device node";
}

// ---- 8. temporary files of killed writers are cleaned up; a kill leaves nothing or a whole file --

TEST(AtomicWriter, RemovesTemporariesOfDeadWritersOnly) {
  ScratchDir dir("reliability-stale");
  const fs::path out = dir / "out.txt";
  const fs::path dead = dir / (".out.txt.tmp-" + std::to_string(dead_pid()) + "-0");
  const fs::path alive = dir / (".out.txt.tmp-" + std::to_string(getpid()) + "-99");
  const fs::path other = dir / ".other.txt.tmp-1-0";
  for (const fs::path& p : {dead, alive, other}) std::ofstream(p) << "partial";
  fs::create_directory(dir / (".out.txt.tmp-" + std::to_string(dead_pid()) + "-1"));  // a directory writer's
  write_file_atomically(out, "done");
  EXPECT_FALSE(fs::exists(dead)) << "the dead writer's temporary file was left";
  EXPECT_TRUE(fs::exists(alive)) << "a live writer's temporary file was removed";
  EXPECT_TRUE(fs::exists(other)) << "another destination's temporary file was removed";
  EXPECT_EQ(joined(listing(dir)), ".other.txt.tmp-1-0, " + alive.filename().string() + ", out.txt");
}

TEST(AtomicWriter, RecordKilledAtAnyMomentLeavesNothingOrACompleteTrace) {
  ScratchDir dir("reliability-kill");
  const fs::path out = dir / "t.h5";
  const std::string record =
      specdec_cmd("record --model " + quoted(kModel) + " --prompt-ids 5,6,7 --max-new-tokens 24 --logits full --out " +
                  quoted(out.string()) + " >/dev/null 2>&1");
  // Kill a loop of records at several moments (seeded delays), each time checking what is there.
  std::minstd_rand rng(23);
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);  // its own process group: the loop and the record it runs are killed together
      execl("/bin/bash", "bash", "-c", ("while true; do " + record + "; done").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 400));
    ::kill(-pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the group's last process is reaped by init
    if (fs::exists(out)) {
      EXPECT_NO_THROW(read_trace(out)) << "round " << round << ": a killed record left an incomplete trace";
    }
  }
  // The next run cleans up whatever temporaries the killed ones left.
  const Child c = run_shell(record, dir);
  EXPECT_EQ(c.code, 0);
  EXPECT_EQ(joined(listing(dir)), "t.h5");
}

// ---- 2. extents are checked against the file before anything is allocated -----------------------

TEST(TraceReader, RefusesExtentsLargerThanTheFile) {
  for (const char* name : {"trace_claims_1GiB.h5", "trace_alloc_too_big.h5"}) {
    const fs::path p = kInputs / "traces" / name;
    std::string msg;
    try {
      read_trace(p);
      ADD_FAILURE() << name << ": read without an error";
    } catch (const Error& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << typeid(e).name() << " instead of an error naming the file: " << e.what();
    }
    EXPECT_CONTAINS(msg, p.string());
    EXPECT_CONTAINS(msg, "but the file holds only");
  }
}

// ---- 4. hostile files never reach libhdf5's variable-length string bugs ---------------------------

TEST(TraceReader, HostileFilesEndInAnErrorNamingTheFile) {
  ScratchDir dir("reliability-hostile");
  int files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(kInputs / "traces")) {
    ++files;
    const std::string file = e.path().string();
    // Bounded memory: 3 GB of address space is far above what a 60 KB trace needs (but not for
    // ASan, whose shadow memory needs more: then unlimited).
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string limit = asan ? "" : "ulimit -v 3000000; ";
    const Child c = run_shell(limit + specdec_cmd("inspect " + quoted(file)), dir, 30);
    EXPECT_EQ(c.code, 1) << e.path().filename() << ": exit " << c.code << " (137 = killed at the 30 s timeout, "
                         << "139 = segfault)\n" << c.err;
    EXPECT_CONTAINS(c.err, file);
  }
  EXPECT_EQ(files, 7);
}

// ---- 3. a disk-full failure while writing a trace is a clean error -------------------------------

TEST(TraceWriter, DiskFullIsACleanErrorAndLeavesNoFile) {
  ScratchDir dir("reliability-diskfull");
  // RLIMIT_FSIZE makes writes past 16 KiB fail with EFBIG, as a full disk fails them with ENOSPC
  // (SIGXFSZ ignored so the write returns the error instead of killing the process).
  const Child c = run_shell("trap '' XFSZ; ulimit -f 16; " +
                                specdec_cmd("record --model " + quoted(kModel) +
                                            " --prompt-ids 5,6,7 --max-new-tokens 32 --logits full --out " +
                                            quoted((dir / "t.h5").string())),
                            dir);
  EXPECT_EQ(c.code, 1) << "exit " << c.code << " (139 = segfault at exit)\n" << c.err;
  EXPECT_CONTAINS(c.err, "t.h5");
  EXPECT_EQ(joined(listing(dir)), "") << "a failed record left files behind";
}

// ---- 5. sizes cannot overflow; 6. the context length and K are bounded -----------------------------

TEST(Limits, CapacityIsComputedWithoutOverflow) {
  EXPECT_EQ(checked_capacity(3, 10, 5, 2048), 18);
  EXPECT_CONTAINS(error_of([] { checked_capacity(3, INT_MAX, 9, 0); }), "more than specdec supports");
  EXPECT_CONTAINS(error_of([] { checked_capacity(3, INT_MAX, INT_MAX, 0); }), "more than specdec supports");
  EXPECT_CONTAINS(error_of([] { checked_capacity(0, 1, 0, 0); }), "prompt is empty");
  EXPECT_CONTAINS(error_of([] { checked_capacity(1, -1, 0, 0); }), "max_new_tokens must be >= 0");
  const auto r = testing::run({"generate", "--model", kModel, "--prompt-ids", "5,6", "--max-new-tokens", "2147483647"});
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, "context length is 2048");
}

TEST(Limits, TheModelsContextLengthIsEnforced) {
  ScratchDir dir("reliability-context");
  const fs::path model = dir / "short";
  fs::create_directory(model);
  for (const auto& e : fs::directory_iterator(kModel)) fs::copy(e.path(), model / e.path().filename());
  nlohmann::json config = nlohmann::json::parse(slurp(model / "config.json"));
  config["max_position_embeddings"] = 16;
  std::ofstream(model / "config.json") << config.dump(2);
  const std::vector<std::string> base = {"--model", model.string(), "--prompt-ids", "5,6,7,8"};
  for (const std::string method : {"sequential", "eagle"}) {
    std::vector<std::string> args = {"generate"};
    args.insert(args.end(), base.begin(), base.end());
    args.insert(args.end(), {"--method", method, "--max-new-tokens", "40"});
    if (method == "eagle") args.insert(args.end(), {"--drafter", (kSource / "models/eagle1").string()});
    const auto r = testing::run(args);
    EXPECT_EQ(r.code, 1) << method << ": generated past the context:\n" << r.out;
    EXPECT_CONTAINS(r.err, "needs 44 positions, but the model's context length is 16");
    args[args.size() - (method == "eagle" ? 3 : 1)] = "12";  // 4 + 12 = 16 fits exactly
    const auto ok = testing::run(args);
    EXPECT_EQ(ok.code, 0) << method << ": " << ok.err;
  }
}

TEST(Limits, DraftLengthAndTreeSizeAreBounded) {
  const std::string eagle = (kSource / "models/eagle1").string();
  const auto k = testing::run({"generate", "--model", kModel, "--prompt-ids", "5,6", "--method", "eagle", "--drafter",
                               eagle, "--k", "100000", "--max-new-tokens", "4"});
  EXPECT_EQ(k.code, 1);
  EXPECT_CONTAINS(k.err, "K is 100000, more than specdec supports (64)");
  const auto total = testing::run({"generate", "--model", kModel, "--prompt-ids", "5,6", "--method", "eagle",
                                   "--drafter", eagle, "--tree", "dynamic", "--total-tokens", "5000", "--max-new-tokens", "4"});
  EXPECT_EQ(total.code, 1);
  EXPECT_CONTAINS(total.err, "more than specdec supports (1024)");
  TreeChoices wide;
  for (int i = 0; i < kMaxDraftNodes + 1; ++i) wide.push_back({i});
  EXPECT_CONTAINS(error_of([&] { make_tree_shape(wide, "wide"); }), "more than specdec supports (1024)");
  TreeChoices deep;
  for (int d = 1; d <= kMaxDraftDepth + 1; ++d) deep.push_back(std::vector<int>(d, 0));
  EXPECT_CONTAINS(error_of([&] { make_tree_shape(deep, "deep"); }), "more than specdec supports (64)");
}

// ---- 7. init-model is atomic and creates no parents ---------------------------------------------

TEST(InitModel, AFailedWriteLeavesNoDirectory) {
  ScratchDir dir("reliability-init");
  const auto missing = testing::run({"init-model", "--out", (dir / "no/such/parent/m").string()});
  EXPECT_EQ(missing.code, 1);
  EXPECT_CONTAINS(missing.err, "does not exist");
  EXPECT_FALSE(fs::exists(dir / "no")) << "init-model created missing parent directories";

  const Child full = run_shell("trap '' XFSZ; ulimit -f 8; " +
                                   specdec_cmd("init-model --preset tiny --out " + quoted((dir / "m").string())),
                               dir);
  EXPECT_EQ(full.code, 1) << full.err;
  EXPECT_EQ(joined(listing(dir)), "") << "a failed init-model left a directory behind";

  const auto ok = testing::run({"init-model", "--preset", "tiny", "--out", (dir / "m").string()});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(dir / "m" / "config.json"));
  EXPECT_TRUE(fs::exists(dir / "m" / "vocab.json"));
}

// ---- 9. test helpers are clean under UBSan --------------------------------------------------------

// ---- numbers in a vocab.json are range-checked before they become ints ----------------------------

TEST(VocabularyReader, NumbersOutOfRangeAreErrorsNamingTheFieldAndFile) {
  ScratchDir dir("reliability-vocab");
  const std::string head = R"({"format": "specdec-vocab", "version": 1, "type": "bytes", )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("byte_offset": 4e62})", "byte_offset must be an integer, got 4e+62"},
      {R"("byte_offset": 4294967296})", "byte_offset must fit in 32 bits, got 4294967296"},
      {R"("byte_offset": 1.5})", "byte_offset must be an integer"},
      {R"("byte_offset": "3"})", "byte_offset must be an integer, got a string"},
      {R"("byte_offset": 3, "special_tokens": {"<eos>": 1e30}})", "special token <eos> must be an integer"},
      {R"("byte_offset": 3, "special_tokens": {"<eos>": -9999999999}})", "special token <eos> must fit in 32 bits"},
      {R"("byte_offset": 3, "special_tokens": [1, 2]})", "special_tokens must be an object"},
  };
  for (const auto& [body, expected] : cases) {
    const fs::path p = dir / "vocab.json";
    std::ofstream(p) << head << body;
    const std::string msg = error_of([&] { Vocabulary::load(p); });
    EXPECT_CONTAINS(msg, expected) << " for " << body;
    EXPECT_CONTAINS(msg, p.string()) << " for " << body;
  }
  // The inputs fuzzing found, kept as files.
  EXPECT_CONTAINS(error_of([&] { Vocabulary::load(kInputs / "vocabulary/byte_offset_float_overflow.json"); }),
                  "byte_offset must be an integer");
  EXPECT_CONTAINS(error_of([&] { Vocabulary::load(kInputs / "vocabulary/special_token_id_float_overflow.json"); }),
                  "special token     z<pad> must be an integer");
}

// A trace's run configuration (from another engine, perhaps) is range-checked the same way.
TEST(TraceConfig, NumbersOutOfRangeAreErrorsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("k": 1e40)", "method.k must be an integer, got 1e+40"},
      {R"("k": 4294967300)", "method.k must fit in 32 bits"},
      {R"("k": 4, "total_tokens": 2.5)", "method.total_tokens must be an integer"},
  };
  for (const auto& [field, expected] : cases) {
    const std::string config = R"({"method": {"method": "draft", "drafter": "d", "tree": "chain", )" + field +
                               R"(}, "max_new_tokens": 8, "stop_at_eos": true})";
    DecodeArgs a;
    const std::string msg = error_of([&] { decode_args_from_trace_config(config, "t.h5", a); });
    EXPECT_CONTAINS(msg, expected) << " for " << field;
    EXPECT_CONTAINS(msg, "t.h5: /meta/config_json") << " for " << field;
  }
  DecodeArgs a;
  EXPECT_CONTAINS(error_of([&] {
                    decode_args_from_trace_config(
                        R"({"method": {"method": "sequential"}, "max_new_tokens": 1e99, "stop_at_eos": true})", "t.h5", a);
                  }),
                  "max_new_tokens must be an integer");
  EXPECT_CONTAINS(error_of([&] {
                    decode_args_from_trace_config(
                        R"({"method": {"method": "sequential"}, "max_new_tokens": 4, "stop_at_eos": true, "sequence": 1e99})",
                        "t.h5", a);
                  }),
                  "is not supported");
}

TEST(TestHelpers, BitwiseEqualOfEmptyMatrices) {
  // Eigen's empty matrices have a null data(); memcmp(null, null, 0) is undefined behaviour.
  EXPECT_TRUE(testing::bitwise_equal(Matrix(0, 4), Matrix(0, 4)));
  EXPECT_FALSE(testing::bitwise_equal(Matrix(0, 4), Matrix(4, 0)));
}

// ---- 10. identical runs give identical --json results ----------------------------------------------

TEST(JsonOutput, IdenticalRunsCompareEqualWithoutTheirTimings) {
  const std::vector<std::vector<std::string>> commands = {
      {"generate", "--model", kModel, "--prompt-ids", "5,6,7", "--max-new-tokens", "8", "--json"},
      {"generate", "--model", kModel, "--prompt-ids", "5,6,7", "--max-new-tokens", "8", "--json", "--method", "eagle",
       "--drafter", (kSource / "models/eagle1").string()},
      {"compare", "--model", kModel, "--prompt-ids", "5,6,7", "--max-new-tokens", "8", "--json", "--methods",
       "sequential,eagle"},
      {"inspect", (kSource / "traces/golden/draft_code_coupled.h5").string(), "--json"},
  };
  for (const auto& args : commands) {
    const auto a = testing::run(args), b = testing::run(args);
    ASSERT_EQ(a.code, 0) << args[0] << ": " << a.err;
    nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
    auto strip = [](nlohmann::json& j) {
      j.erase("timing");
      if (j.contains("runs")) {
        for (auto& r : j["runs"]) r.erase("timing");
      }
    };
    EXPECT_TRUE(ja.contains("timing") || ja.contains("runs")) << args[0] << ": no timing object";
    strip(ja);
    strip(jb);
    EXPECT_EQ(ja, jb) << args[0] << ": identical runs differ outside \"timing\"";
  }
}

}  // namespace
}  // namespace specdec
