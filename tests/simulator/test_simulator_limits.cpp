// Hostile input to the simulator: spec files that are not regular files or nest too deep, sizes
// beyond the decoder's bounds, capacity plans beyond any deployment, absurd spec numbers and
// calibration data. Each case must end in a specdec::Error naming what was wrong, quickly and in
// bounded memory; those that hung or exhausted memory before run in a child process.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "cli/cli.hpp"
#include "simulator/calibration.hpp"
#include "simulator/capacity.hpp"
#include "simulator/drafter_spec.hpp"
#include "simulator/engine_spec.hpp"
#include "simulator/hardware_spec.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/search.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/sweep.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;
namespace fs = std::filesystem;

// Runs `f` in a forked child with a time limit and 4 GiB of address space (not under ASan); returns the message of
// the specdec::Error it threw, "" when it returned, or "<...>" when it died, hung or threw
// something else.
std::string error_in_child(const std::function<void()>& f, int timeout_s = 20) {
  int fd[2];
  if (pipe(fd) != 0) return "<pipe failed>";
  const pid_t pid = fork();
  if (pid < 0) return "<fork failed>";
  if (pid == 0) {
    close(fd[0]);
#if !defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer reserves terabytes of shadow address space up front, so a cap on the
    // address space cannot apply under it; its allocator's own size limit stands in there.
    const rlimit as{rlim_t(4) << 30, rlim_t(4) << 30};
    setrlimit(RLIMIT_AS, &as);
#endif
    alarm(unsigned(timeout_s));
    std::string msg;
    try {
      f();
    } catch (const Error& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      msg = std::string("<other exception: ") + e.what() + ">";
    }
    if (!msg.empty() && write(fd[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fd[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "<killed by signal " + std::to_string(WTERMSIG(status)) + ">";
  return out;
}

std::string simulate_error(std::vector<std::string> args) {
  std::ostringstream out, err;
  cli::CommandIO io{out, err};
  try {
    const int code = cli::run_simulate(args, io);
    return "<exit " + std::to_string(code) + ": " + out.str().substr(0, 400) + ">";
  } catch (const Error& e) {
    return e.what();
  }
}

std::vector<std::string> base_args() {
  return {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--alpha", "0.8"};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& extra) {
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

nlohmann::json bundled(const std::string& kind, const std::string& name) {
  return read_json_file(SpecLibrary::bundled_dir() / kind / (name + ".json"));
}

#define EXPECT_SAYS(message, part) EXPECT_NE(std::string(message).find(part), std::string::npos) << (message)

TEST(SimulatorLimits, SpecFilesGoThroughTheSharedReader) {
  test::TempDir dir;
  // Nesting deeper than the shared bound, inside an ignored comment field.
  std::string deep = "{\"comment\": " + std::string(300, '[') + std::string(300, ']') + "}";
  std::ofstream(dir.path() / "deep.json") << deep;
  SpecLibrary lib;
  for (const auto& e : {error_of([&] { lib.hardware((dir.path() / "deep.json").string()); }),
                        error_of([&] { lib.engine((dir.path() / "deep.json").string()); }),
                        error_of([&] { lib.model((dir.path() / "deep.json").string()); }),
                        error_of([&] { lib.drafter_spec((dir.path() / "deep.json").string()); }),
                        error_of([&] { load_calibration_set(dir.path() / "deep.json", lib); })}) {
    EXPECT_SAYS(e, "nests deeper than");
    EXPECT_SAYS(e, "deep.json");
  }
  EXPECT_SAYS(simulate_error({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b",
                              "--tree-acceptance", "[" + std::string(300, '[') + std::string(301, ']')}),
              "--tree-acceptance: JSON nests deeper than");

  // A FIFO as a spec (given as a path, or as a name inside --specs-dir) and as calibration data:
  // refused by name, not opened (which would block forever).
  ASSERT_EQ(mkfifo((dir.path() / "fifo.json").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((dir.path() / "fifo.csv").c_str(), 0600), 0);
  fs::create_directories(dir.path() / "specs" / "hardware");
  ASSERT_EQ(mkfifo((dir.path() / "specs" / "hardware" / "pipe-gpu.json").c_str(), 0600), 0);
  const std::string fifo = (dir.path() / "fifo.json").string();
  for (const auto& [label, e] : std::vector<std::pair<std::string, std::string>>{
           {"--hardware FIFO", error_in_child([&] { throw Error(simulate_error({"--model", "llama-3.1-8b", "--hardware", fifo})); })},
           {"--specs-dir FIFO", error_in_child([&] {
              throw Error(simulate_error({"--model", "llama-3.1-8b", "--hardware", "pipe-gpu", "--specs-dir",
                                          (dir.path() / "specs").string()}));
            })},
           {"--calibrate FIFO CSV", error_in_child([&] {
              throw Error(simulate_error({"--calibrate", (dir.path() / "fifo.csv").string(), "--hardware", "h100-sxm"}));
            })},
           {"--tree FIFO",
            error_in_child([&] { throw Error(simulate_error(with(base_args(), {"--engine", "sglang", "--tree", fifo}))); })},
       }) {
    EXPECT_SAYS(e, "expected a regular file") << label;
  }
}

TEST(SimulatorLimits, DraftLengthAndSearchesAreBoundedLikeTheDecoder) {
  // --k beyond the decoder's depth bound.
  EXPECT_SAYS(simulate_error(with(base_args(), {"--k", "100000"})), "--k: K is 100000, more than specdec supports (64)");
  EXPECT_SAYS(simulate_error(with(base_args(), {"--k", "65"})), "more than specdec supports (64)");
  // --best-k 1000000 grew to 18 GB before: refused at once, in bounded memory.
  for (const std::string n : {"1000000", "65", "1-1000000", "2,4,100"}) {
    const std::string e = error_in_child([&] { throw Error(simulate_error(with(base_args(), {"--best-k", n}))); });
    EXPECT_SAYS(e, "--best-k") << "--best-k " << n;
    EXPECT_SAYS(e, "more than specdec supports") << "--best-k " << n;
  }
  // The library's search refuses it too.
  const Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  EXPECT_SAYS(error_of([&] { best_k(s, {1, 2, 65}); }), "the best K: K is 65, more than specdec supports (64)");
  Scenario deep = s;
  deep.plan.k = 1000;
  EXPECT_SAYS(error_of([&] { predict(deep); }), "draft length K is 1000, more than specdec supports (64)");
  // Dynamic trees: the decoder's node, depth and top-k bounds; a search grid is counted first.
  EXPECT_SAYS(simulate_error(with(base_args(), {"--engine", "sglang", "--dynamic-tree", "100000,8,8"})), "more than specdec supports");
  EXPECT_SAYS(simulate_error(with(base_args(), {"--engine", "sglang", "--dynamic-tree", "60,8,1000"})), "more than specdec supports");
  EXPECT_SAYS(error_of([&] { best_tree(*iid_acceptance(0.8), 2000, 8, 8); }), "more than specdec supports (1024)");
  EXPECT_SAYS(error_of([&] { best_tree(*iid_acceptance(0.8), 60, 8, 65); }), "top_k is 65");
  const std::string grid = error_in_child([&] {
    throw Error(simulate_error(with(base_args(), {"--engine", "sglang", "--best-tree", "2-1025/1-64/1-64"})));
  });
  EXPECT_SAYS(grid, "the number of settings");
  // chain100000 listed 5e9 ranks (20 GB) before the tree's bounds were checked.
  EXPECT_SAYS(error_in_child([&] { builtin_tree("chain100000"); }), "more than specdec supports (64)");
}

// A tensor-parallel degree must split the heads as engines split them (Llama-3.1-8B: 32 query heads,
// 8 KV heads); before, TP 3 was priced as if a third of a head fitted each device.
TEST(SimulatorLimits, TensorParallelDegreeMustSplitTheHeads) {
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  for (int tp : {3, 6, 12, 64}) {
    s.workload.tp = tp;
    const std::string e = error_of([&] { predict(s); });
    EXPECT_SAYS(e, "tensor-parallel degree " + std::to_string(tp) + " does not split model 'llama-3.1-8b' (32 attention heads, 8 KV heads)")
        << "tp " << tp;
    EXPECT_SAYS(e, "degrees that do: 1, 2, 4, 8, 16, 32") << "tp " << tp;
  }
  for (int tp : {1, 2, 4, 8}) {  // 16 and 32 split too (KV heads replicated) but exceed an 8-GPU instance
    s.workload.tp = tp;
    EXPECT_NO_THROW(predict(s)) << "tp " << tp;
  }
  EXPECT_SAYS(simulate_error(with(base_args(), {"--tp", "3"})), "does not split model");
}

TEST(SimulatorLimits, SweepGridsAndSizeOptionsAreCountedBeforeTheyRun) {
  const std::vector<std::string> sweep = {"--sweep", "-", "--model", "llama-3.1-8b", "--hardware", "h100-sxm",
                                          "--drafter", "eagle3-llama3.1-8b"};
  for (const auto& [opt, value, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--k", "1-1000000", "--k: 1000000 is more than specdec supports (64)"},
           {"--k", "-1000000000-5", "--k: the number of values is 1000000006"},
           {"--batch", "1-100000000", "--batch: 100000000 is more than specdec supports (65536)"},
           {"--tp", "1-5000", "--tp: 5000 is more than specdec supports (1024)"},
           {"--prompt-len", "1-100001", "--prompt-len: the number of values is 100001"},
       }) {
    const std::string e = error_in_child([&] { throw Error(simulate_error(with(sweep, {opt + "=" + value}))); });
    EXPECT_SAYS(e, says) << opt << " " << value;
  }
  // Within each list's bounds, the grid itself is counted: 64 K x 64 batches x 64 output lengths.
  const std::string cells = error_in_child(
      [&] { throw Error(simulate_error(with(sweep, {"--k", "1-64", "--batch", "1-64", "--output-len", "1-64"}))); });
  EXPECT_SAYS(cells, "sweep: the grid has 262144 cells");
  // The library refuses K beyond the bound rather than skipping it row by row.
  SweepSpec spec;
  spec.hardware = {"h100-sxm"};
  spec.models = {"llama-3.1-8b"};
  spec.drafters = {"eagle3-llama3.1-8b"};
  spec.ks = {4, 1000};
  EXPECT_SAYS(error_of([&] { run_sweep(spec, SpecLibrary{}, [](const SweepRow&) {}); }), "sweep: K is 1000");
  // One scenario's sizes.
  EXPECT_SAYS(simulate_error(with(base_args(), {"--batch", "1000000"})), "--batch: the batch size is 1000000, more than");
  EXPECT_SAYS(simulate_error(with(base_args(), {"--tp", "100000"})), "--tp: the tensor-parallel degree is 100000");
  EXPECT_SAYS(simulate_error(with(base_args(), {"--prompt-len", "1000000000"})), "--prompt-len: the prompt length is");
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.workload.prompt_len = s.workload.output_len = 1 << 24;
  EXPECT_SAYS(error_of([&] { predict(s); }), "prompt length + output length is 33554432");
}

TEST(SimulatorLimits, CapacityPlansNeverWrapTheirDeviceCount) {
  const auto capacity = [](const std::string& rate) {
    return simulate_error({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate=" + rate,
                           "--tpot-target-ms", "50"});
  };
  // 1e10 requests/s reported -2147483648 devices and a negative cost before.
  EXPECT_SAYS(capacity("1e10"), "needs more than 1000000 devices");
  for (const std::string bad : {"inf", "nan", "-1", "0"}) EXPECT_SAYS(capacity(bad), "--capacity-rate: the offered load must be") << bad;
  // What a plan can serve is still planned, in whole devices.
  std::ostringstream out, err;
  cli::CommandIO io{out, err};
  ASSERT_EQ(cli::run_simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate", "1e4",
                               "--tpot-target-ms", "50", "--json"},
                              io),
            0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_GT(j["capacity"]["devices"].get<long long>(), 0) << out.str();
  EXPECT_LE(j["capacity"]["devices"].get<long long>(), 1000000);
  EXPECT_GT(j["capacity"]["cost_per_hour_usd"].get<double>(), 0);
  // The library checks the request too.
  const Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  CapacityRequest req;
  req.requests_per_s = std::numeric_limits<double>::infinity();
  EXPECT_SAYS(error_of([&] { plan_capacity(s, req); }), "request rate must be > 0");
  req.requests_per_s = 1e12;
  EXPECT_SAYS(error_of([&] { plan_capacity(s, req); }), "more than 1000000 devices");
  req.requests_per_s = 1;
  req.price_per_device_hour = std::numeric_limits<double>::infinity();
  EXPECT_SAYS(error_of([&] { plan_capacity(s, req); }), "price per device-hour must be finite");
}

TEST(SimulatorLimits, EveryNumericSpecFieldIsRangeChecked) {
  const nlohmann::json hw = bundled("hardware", "h100-sxm");
  struct Case {
    std::string pointer;
    double value;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"/memory_bandwidth_bytes_per_s", 1e-308, "memory_bandwidth_bytes_per_s"},
      {"/memory_bandwidth_bytes_per_s", 0, "memory_bandwidth_bytes_per_s"},
      {"/memory_bandwidth_bytes_per_s", 1e300, "memory_bandwidth_bytes_per_s"},
      {"/peak_flops_per_s/bf16", 1e30, "peak_flops_per_s.bf16"},
      {"/peak_flops_per_s/bf16", 1e-300, "peak_flops_per_s.bf16"},
      {"/memory_bytes", 1e300, "memory_bytes"},
      {"/interconnect_bandwidth_bytes_per_s", 1e-300, "interconnect_bandwidth_bytes_per_s"},
      {"/price_per_instance_hour", 1e300, "price_per_instance_hour"},
      {"/devices_per_instance", 1e9, "devices_per_instance"},
      {"/gemm/l2_bandwidth_bytes_per_s", 1e-300, "l2_bandwidth_bytes_per_s"},
      {"/overhead/kernel_floor_s", 1e10, "kernel_floor_s"},
      {"/overhead/comm_latency_s", -1, "comm_latency_s"},
      {"/gemm/tiles/0/0", 4294967360.0, "tile rows"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = hw;
    if (c.pointer == "/gemm/tiles/0/0") j[nlohmann::json::json_pointer(c.pointer)] = 4294967360ULL;  // 2^32 + 64
    else j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string e = error_of([&] { parse_hardware_spec(j, "h100-sxm.json"); });
    EXPECT_SAYS(e, "h100-sxm.json") << c.pointer << " = " << c.value;
    EXPECT_SAYS(e, c.field) << c.pointer << " = " << c.value;
  }
  // Engines: host seconds.
  nlohmann::json engine = bundled("engines", "vllm");
  engine["overhead"]["step_s"] = 1e300;
  EXPECT_SAYS(error_of([&] { parse_engine_spec(engine, "vllm.json"); }), "vllm.json (overhead): field 'step_s' must be >= 0 and at most 1");
  // Models: sizes whose int products would wrap, and a mistyped field that escaped as nlohmann's error.
  const nlohmann::json model = bundled("models", "llama-3.1-8b");
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"hidden_size", 2000000000}, {"num_hidden_layers", 1000000}, {"num_attention_heads", 65536},
           {"vocab_size", 1000000000}, {"intermediate_size", 2000000000}, {"expert_weight_bytes", 1e300}}) {
    nlohmann::json j = model;
    j[field] = value;
    EXPECT_SAYS(error_of([&] { parse_model_shape(j, "m.json"); }), "m.json") << field;
  }
  nlohmann::json typed = model;
  typed["model_type"] = 7;
  EXPECT_SAYS(error_of([&] { parse_model_shape(typed, "m.json"); }), "field 'model_type' must be a string");
  nlohmann::json moe = bundled("models", "qwen3-30b-a3b");
  moe.erase("shared_expert_intermediate_size");
  moe["n_shared_experts"] = 2000000000;
  EXPECT_SAYS(error_of([&] { parse_model_shape(moe, "moe.json"); }), "n_shared_experts x moe_intermediate_size");
  // Drafters.
  nlohmann::json drafter = bundled("drafters", "peagle-llama3.1-8b");
  drafter["trained_depth"] = 1000000;
  EXPECT_SAYS(error_of([&] { parse_drafter_spec(drafter, "d.json"); }), "d.json: field 'trained_depth' must be in [0, 64]");
  drafter = bundled("drafters", "peagle-llama3.1-8b");
  drafter["num_layers"] = 2000000000;
  EXPECT_SAYS(error_of([&] { parse_drafter_spec(drafter, "d.json"); }), "field 'num_layers' is 2000000000");
  // A float rank in a tree is refused, not cast.
  EXPECT_SAYS(simulate_error(with(base_args(), {"--engine", "sglang", "--tree", "[[0],[1e300]]"})), "--tree: a rank must be an integer");
}

TEST(SimulatorLimits, NonFiniteResultsAreErrorsNotRows) {
  // Specs built in code skip the loaders' checks: the predictor still refuses to report inf/NaN.
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.hardware.memory_bandwidth_bytes_per_s = 1e-308;
  const std::string e = error_of([&] { predict(s); });
  EXPECT_SAYS(e, "not a finite number");
  EXPECT_SAYS(e, "h100-sxm");
  s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.hardware.peak_flops_per_s["bf16"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_SAYS(error_of([&] { predict(s); }), "not a finite number");
  // Through the command: a spec file with such a number is refused at load, naming file and field.
  test::TempDir dir;
  nlohmann::json hw = bundled("hardware", "h100-sxm");
  hw["memory_bandwidth_bytes_per_s"] = 1e-308;
  std::ofstream(dir.path() / "tiny.json") << hw.dump();
  const std::string cmd = simulate_error(with({"--model", "llama-3.1-8b", "--hardware", (dir.path() / "tiny.json").string(),
                                               "--drafter", "eagle3-llama3.1-8b", "--alpha", "0.8"}, {}));
  EXPECT_SAYS(cmd, "tiny.json: field 'memory_bandwidth_bytes_per_s' must be > 0 and within");
}

TEST(SimulatorLimits, AbsurdCalibrationDataIsRefusedAtLoad) {
  SpecLibrary lib;
  const auto set = [](const std::string& rows) {
    return nlohmann::json::parse(R"({"hardware": "h100-sxm", "defaults": {"model": "llama-3.1-8b", "batch": 1}, "rows": )" +
                                 rows + "}");
  };
  EXPECT_SAYS(error_of([&] { parse_calibration_json(set(R"([{"step_ms": 1e300}])"), "c.json", lib); }),
              "c.json row 0: field 'step_ms' must be > 0 and within");
  EXPECT_SAYS(error_of([&] { parse_calibration_json(set(R"([{"tpot_ms": -3}])"), "c.json", lib); }), "c.json row 0: field 'tpot_ms'");
  EXPECT_SAYS(error_of([&] { parse_calibration_json(set(R"([{"step_ms": 7, "context": 1e300}])"), "c.json", lib); }),
              "c.json row 0: field 'context'");
  EXPECT_SAYS(error_of([&] { parse_calibration_json(set(R"([{"step_ms": 7, "batch": 1e9}])"), "c.json", lib); }),
              "c.json row 0: field 'batch' must be in [1, 65536]");
  EXPECT_SAYS(error_of([&] { parse_calibration_json(set("[]"), "c.json", lib); }), "'rows' must be a non-empty list");
  EXPECT_SAYS(error_of([&] {
                parse_calibration_json(set(R"([{"step_ms": 7, "label": "a"}, {"step_ms": 9, "batch": 2}, {"step_ms": 8, "label": "b"}])"),
                                       "c.json", lib);
              }),
              "c.json row 2: the same configuration as c.json row 0");
  // Two sources measuring one configuration are two points (cross-validation holds one out).
  EXPECT_EQ(parse_calibration_json(set(R"([{"step_ms": 7, "source": "lab A"}, {"step_ms": 8, "source": "lab B"}])"), "c.json", lib)
                .rows.size(),
            2u);
  EXPECT_SAYS(error_of([&] {
                parse_calibration_csv("model,batch,step_ms\nllama-3.1-8b,1,7\nllama-3.1-8b,1,7.5\n", "c.csv", lib);
              }),
              "c.csv line 3: the same configuration as c.csv line 2");
  EXPECT_SAYS(error_of([&] { parse_calibration_csv("model,batch,step_ms\nllama-3.1-8b,1,inf\n", "c.csv", lib); }),
              "c.csv line 2");
  EXPECT_SAYS(error_of([&] { parse_calibration_csv("model,batch,step_ms\n", "c.csv", lib); }), "no measured configurations");
  // A sane set still fits, every fitted term finite and >= 0.
  const CalibrationSet ok = parse_calibration_json(
      set(R"([{"step_ms": 7.5}, {"step_ms": 8.1, "batch": 8}, {"step_ms": 10.2, "batch": 32}])"), "c.json", lib);
  const CalibrationResult r = calibrate(ok, platform_for(ok, lib));
  for (size_t i = 0; i < r.after.size(); ++i) {
    EXPECT_TRUE(std::isfinite(r.after[i]) && r.after[i] >= 0) << r.parameters[i] << " = " << r.after[i];
  }
}

}  // namespace
}  // namespace specdec::sim
