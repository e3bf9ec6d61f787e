// The engine's per-step host work by release (host_work: step_s + request_s per running request:
// scheduling, metadata, output processing) and whether an overlap scheduler hides it behind the
// device's forward: hidden work costs nothing while it is shorter than the device's step and its
// excess beyond; work not hidden is paid in full; the engine's release (engine_version) selects
// both; the spec fields are checked; calibration fits the host terms of the rows' release (the
// per-request term where plain and speculative rows at several batch sizes tell it from the per-row
// term), which then price that release alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "simulator/calibration.hpp"
#include "simulator/engine_defaults.hpp"
#include "simulator/evaluation.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// Llama-3.1-8B on H100, batch 8, on the `ideal` engine (no host work) plus the host work given.
Scenario base_scenario(bool speculative) {
  Scenario s = speculative ? test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 3, 0.7)
                           : test::scenario("llama-3.1-8b", "h100-sxm", "", 1, 0);
  s.engine = SpecLibrary().engine("ideal");
  s.workload.batch = 8;
  return s;
}

double step_s(const Scenario& s) { return decode_step_cost(s, 200, 2.5).total_s(); }

HostWork host_work(bool sequential, bool speculative, double request_s) {
  HostWork h;
  h.sequential = sequential;
  h.speculative = speculative;
  h.request_s = request_s;
  h.source = "test";
  return h;
}

TEST(HostWork, HiddenWhileShorterThanTheDeviceStepAndExposedBeyond) {
  for (bool speculative : {false, true}) {
    const std::string kind = speculative ? "speculative" : "plain";
    Scenario s = base_scenario(speculative);
    const double device = step_s(s);
    ASSERT_GT(device, 1e-3) << kind << ": the device's step of an 8B model at batch 8 is milliseconds";
    s.engine.host_work = host_work(true, true, 0);
    // Host work at 0.5 and 0.99 of the device's step: hidden, the step is the device's alone.
    for (double share : {0.5, 0.99}) {
      s.engine.step_overhead_s = share * device;
      EXPECT_DOUBLE_EQ(step_s(s), device) << kind << ", host work " << share << " of the device's step";
    }
    // Beyond the device's step: the step is the host work's (its excess over the device exposed).
    for (double share : {1.5, 3.0}) {
      s.engine.step_overhead_s = share * device;
      EXPECT_NEAR(step_s(s), share * device, 1e-12) << kind << ", host work " << share << " of the device's step";
    }
    // The per-request part counts with the running requests: 8 × 0.25 of the device's step.
    s.engine.step_overhead_s = 0;
    s.engine.host_work.request_s = 0.25 * device;
    EXPECT_NEAR(step_s(s), 2.0 * device, 1e-12) << kind << ": host work 8 × 0.25 of the device's step";
    s.workload.batch = 1;
    Scenario alone = base_scenario(speculative);
    alone.workload.batch = 1;
    const double device1 = step_s(alone);
    EXPECT_DOUBLE_EQ(step_s(s), device1) << kind << ": one request's host work (0.25 of the batch-8 step) hidden";
  }
}

TEST(HostWork, NonOverlappingStepsPayTheHostWorkInFull) {
  for (bool speculative : {false, true}) {
    const std::string kind = speculative ? "speculative" : "plain";
    Scenario s = base_scenario(speculative);
    const double device = step_s(s);
    s.engine.step_overhead_s = 0.4e-3;
    // Overlapped in the other kind of decoding only: this one pays 0.4 + 8 × 0.05 ms in full.
    s.engine.host_work = host_work(speculative, !speculative, 0.05e-3);
    EXPECT_NEAR(step_s(s), device + 0.8e-3, 1e-12) << kind << " decoding without overlap pays all its host work";
  }
  // The case the model is for: a release that overlaps plain decoding but not speculative decoding
  // (SGLang 0.4 to 2025, vLLM V0's output processor) hides the baseline's host work and not the
  // speculative step's, so the speedup falls as the per-request work grows with the batch.
  Scenario spec = base_scenario(true);
  spec.engine.host_work = host_work(true, false, 0.05e-3);
  Scenario both = spec;
  both.engine.host_work.speculative = true;
  double last = 1e9;
  for (int batch : {1, 8, 32, 64}) {
    spec.workload.batch = both.workload.batch = batch;
    const double s_only = predict(spec).speedup, s_both = predict(both).speedup;
    EXPECT_LT(s_only, s_both) << "batch " << batch << ": the speculative step pays what the baseline hides";
    EXPECT_LT(s_only / s_both, last) << "batch " << batch << ": and the loss grows with the running requests";
    last = s_only / s_both;
  }
}

nlohmann::json engine_json(const std::string& host_work) {
  return nlohmann::json::parse(R"({"name": "x", "overhead": {"step_s": 0.001}, "host_work": )" + host_work + "}");
}

const char* kEras = R"({"current": {"sequential": true, "speculative": true, "request_s": 0.000001, "source": "now"},
    "versions": [{"until": "0.4.0", "sequential": false, "speculative": false, "request_s": 0.0001, "step_s": 0.002,
                  "source": "old"},
                 {"from": "0.4.0", "until": "0.5.5", "sequential": true, "speculative": false, "request_s": 0.0001,
                  "source": "mid"}]})";

TEST(HostWork, TheEngineVersionSelectsTheBehaviour) {
  const EngineSpec e = parse_engine_spec(engine_json(kEras), "x.json");
  const struct {
    const char* version;
    struct {
      bool sequential, speculative;
      double request_s;
    } want;
  } cases[] = {{"", {true, true, 1e-6}},         {"0.3.9", {false, false, 1e-4}}, {"v0.4.0", {true, false, 1e-4}},
               {"0.4.4", {true, false, 1e-4}},   {"0.5.4.9", {true, false, 1e-4}}, {"0.5.5", {true, true, 1e-6}},
               {"0.10.0", {true, true, 1e-6}},   {"0.4", {true, false, 1e-4}},     {"1", {true, true, 1e-6}}};
  for (const auto& c : cases) {
    const HostWork& got = e.host_work_for(c.version);
    EXPECT_EQ(got.sequential, c.want.sequential) << "version '" << c.version << "': plain decoding";
    EXPECT_EQ(got.speculative, c.want.speculative) << "version '" << c.version << "': speculative decoding";
    EXPECT_EQ(got.request_s, c.want.request_s) << "version '" << c.version << "': the range's per-request work";
  }
  // A range's own step_s replaces overhead.step_s for its releases only.
  EXPECT_DOUBLE_EQ(e.host_seconds("0.3.9", 10), 0.002 + 10 * 1e-4);
  EXPECT_DOUBLE_EQ(e.host_seconds("0.4.4", 10), 0.001 + 10 * 1e-4);
  EXPECT_DOUBLE_EQ(e.host_seconds("", 10), 0.001 + 10 * 1e-6);
  EXPECT_LT(compare_engine_versions("0.9.9", "0.10.0"), 0) << "numeric, not lexical";
  // The scenario's version reaches the step: 0.4.4 pays a speculative step's host work in full.
  Scenario s = base_scenario(true);
  s.engine = e;
  const double device = [&] {
    Scenario d = s;
    d.engine.step_overhead_s = 0;
    d.engine.host_work_eras.clear();
    d.engine.host_work.request_s = 0;
    return step_s(d);
  }();
  EXPECT_DOUBLE_EQ(step_s(s), device) << "current release: 1.008 ms of host work hidden";
  s.engine_version = "0.4.4";
  EXPECT_NEAR(step_s(s), device + 1.8e-3, 1e-12) << "0.4.4: paid in full";
  // A fitted spec keeps its ranges through its JSON.
  EXPECT_EQ(parse_engine_spec(engine_spec_to_json(e), "round trip").host_work_eras, e.host_work_eras);
  EXPECT_EQ(parse_engine_spec(engine_spec_to_json(e), "round trip").host_work, e.host_work);
  s.engine_version = "0.4.x";
  EXPECT_NE(error_of([&] { validate_scenario(s); }).find("'0.4.x' is not a dotted version number"), std::string::npos);
}

TEST(HostWork, BadSpecFieldsAreRefusedByName) {
  const struct {
    const char* name;
    std::string host_work;
    const char* message;
  } cases[] = {
      {"no current", R"({"versions": []})", "field 'current' is missing"},
      {"current without source", R"({"current": {"sequential": true, "speculative": true, "request_s": 0}})",
       "current: field 'source' is missing"},
      {"range without source",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s"},
           "versions": [{"from": "0.4.0", "sequential": true, "speculative": false, "request_s": 0}]})",
       "versions[0]: field 'source' is missing"},
      {"empty source",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": ""}})", "field 'source' is missing"},
      {"missing flag", R"({"current": {"sequential": true, "request_s": 0, "source": "s"}})",
       "field 'speculative' is missing"},
      {"range without request_s",
       R"({"current": {"sequential": true, "speculative": true, "source": "s"}})", "field 'request_s' is missing"},
      {"negative request_s",
       R"({"current": {"sequential": true, "speculative": true, "request_s": -1, "source": "s"}})", "request_s"},
      {"negative step_s",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "step_s": -1, "source": "s"}})",
       "step_s"},
      {"reversed range",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s"},
           "versions": [{"from": "0.5.0", "until": "0.4.0", "sequential": true, "speculative": false, "request_s": 0, "source": "s"}]})",
       "'from' 0.5.0 is not older than 'until' 0.4.0"},
      {"empty range",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s"},
           "versions": [{"from": "0.4.0", "until": "0.4", "sequential": true, "speculative": false, "request_s": 0, "source": "s"}]})",
       "is not older than"},
      {"unbounded range",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s"},
           "versions": [{"sequential": true, "speculative": false, "request_s": 0, "source": "s"}]})",
       "give 'from' or 'until'"},
      {"bad version",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s"},
           "versions": [{"from": "0.4.0-rc1", "sequential": true, "speculative": false, "request_s": 0, "source": "s"}]})",
       "'0.4.0-rc1' is not a dotted version number"},
      {"overlapping ranges",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s"},
           "versions": [{"from": "0.4.0", "until": "0.6.0", "sequential": true, "speculative": false, "request_s": 0, "source": "s"},
                        {"from": "0.5.0", "sequential": true, "speculative": true, "request_s": 0, "source": "s"}]})",
       "versions[1]: its versions overlap those of versions[0]"},
      {"unknown field",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s", "since": "2025"}})", "unknown field 'since'"},
      {"range draft_step_s not seconds",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s", "draft_step_s": "fast"}})",
       "field 'draft_step_s' must be a number of seconds or an object"},
      {"range spec_step_s of an unknown method",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s", "spec_step_s": {"hydra": 0.001}}})",
       "unknown method 'hydra'"},
      {"range spec_step_s too large",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s", "spec_step_s": {"eagle3": 5}}})",
       "spec_step_s.eagle3"},
      {"range sampling_saturation_rows below one row",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s", "sampling_saturation_rows": 0.5}})",
       "sampling_saturation_rows"},
      {"range negative sampling_s_per_row",
       R"({"current": {"sequential": true, "speculative": true, "request_s": 0, "source": "s", "sampling_s_per_row": -1e-6}})",
       "sampling_s_per_row"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { parse_engine_spec(engine_json(c.host_work), "x.json"); });
    EXPECT_NE(e.find("x.json (host_work)"), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << c.name << ": " << e;
  }
  // Adjacent ranges are fine. request_s lives in the ranges only (one spelling).
  EXPECT_NO_THROW(parse_engine_spec(engine_json(kEras), "x.json"));
  const std::string e = error_of([] {
    parse_engine_spec(nlohmann::json::parse(R"({"name": "x", "overhead": {"request_s": 0.0001}})"), "x.json");
  });
  EXPECT_NE(e.find("unknown field 'request_s'"), std::string::npos) << e;
}

TEST(HostWork, BundledEnginesSayWhatTheyOverlapAndWhatItCostsByRelease) {
  SpecLibrary lib;
  auto flags = [&](const char* engine, const char* version) {
    const HostWork& h = lib.engine(engine).host_work_for(version);
    return std::make_pair(h.sequential, h.speculative);
  };
  // Releases the sources date: SGLang 0.4.4 (the EAGLE-3 paper's) overlaps plain decoding only; the
  // current SGLang, vLLM and TensorRT-LLM overlap both; vLLM's V1 before 0.14 neither.
  EXPECT_EQ(flags("sglang", "0.4.4"), std::make_pair(true, false));
  EXPECT_EQ(flags("sglang", "0.3.6"), std::make_pair(false, false));
  EXPECT_EQ(flags("sglang", ""), std::make_pair(true, true));
  EXPECT_EQ(flags("vllm", "0.5.3"), std::make_pair(false, false));
  EXPECT_EQ(flags("vllm", "0.6.3"), std::make_pair(true, false));
  EXPECT_EQ(flags("vllm", "0.9.2"), std::make_pair(false, false));
  EXPECT_EQ(flags("vllm", "0.14.0"), std::make_pair(true, true));
  EXPECT_EQ(flags("tensorrt-llm", ""), std::make_pair(true, true));
  EXPECT_EQ(flags("hf-eager", ""), std::make_pair(false, false));
  EXPECT_EQ(lib.engine("ideal").host_seconds("", 64), 0) << "no host work by definition";
  EXPECT_EQ(lib.engine("hf-eager").host_work_for("").request_s, 0) << "no host_work: step_s alone";
  // The per-request work is the era's: vLLM V0's Python output processing (issue 6913, 0.1 ms), the
  // SGLang releases of that era borrowing it, and a current release's measured loop (PR 46112, about
  // 1 us: a lower bound), two orders of magnitude apart.
  EXPECT_EQ(lib.engine("vllm").host_work_for("0.6.3").request_s, 1e-4);
  EXPECT_EQ(lib.engine("sglang").host_work_for("0.4.4").request_s, 1e-4);
  for (const char* engine : {"vllm", "sglang", "tensorrt-llm"}) {
    const HostWork& now = lib.engine(engine).host_work_for("");
    EXPECT_GT(now.request_s, 0) << engine;
    EXPECT_LE(now.request_s, 2e-6) << engine << ": the current release's loop, about 1 us per request";
    EXPECT_NE(now.source.find("[approximate"), std::string::npos) << engine << ": says it is a lower bound";
  }
  EXPECT_NE(lib.engine("sglang").host_work_for("0.4.4").source.find("borrowed"), std::string::npos)
      << "SGLang's 2024-era figure is vLLM V0's and says so";
}

TEST(HostWork, EvaluationRowsCarryTheirEngineVersion) {
  SpecLibrary lib;
  const EvaluationSet set = parse_evaluation_json(
      nlohmann::json::parse(R"({"hardware": "h100-sxm", "engine": "sglang",
        "defaults": {"model": "llama-3.1-8b", "drafter": "eagle3-llama3.1-8b", "method": "eagle3", "k": 3,
                     "acceptance_length": 2.8, "batch": 32},
        "rows": [{"label": "old", "engine_version": "0.4.4", "speedup": 1.3}, {"label": "now", "speedup": 1.3}]})"),
      "set.json", lib, "", "", OptionSpelling{});
  ASSERT_EQ(set.rows.size(), 2u);
  EXPECT_EQ(set.rows[0].scenario.engine_version, "0.4.4");
  EXPECT_LT(predict(set.rows[0].scenario).speedup, predict(set.rows[1].scenario).speedup)
      << "0.4.4 pays the speculative step's host work that the current release hides";
  const std::string e = error_of([&] {
    parse_evaluation_json(nlohmann::json::parse(R"({"hardware": "h100-sxm", "engine": "sglang",
        "rows": [{"model": "llama-3.1-8b", "drafter": "eagle3-llama3.1-8b", "method": "eagle3", "k": 3,
                  "acceptance_length": 2.8, "engine_version": "latest", "speedup": 1.3}]})"),
                          "set.json", lib, "", "", OptionSpelling{});
  });
  EXPECT_NE(e.find("'latest' is not a dotted version number"), std::string::npos) << e;
}

// Step times generated with a known per-request term on a release that overlaps plain decoding
// only are fitted back from plain and K = 3 rows at batch 1 to 64, into that release's range.
TEST(HostWork, CalibrationRecoversThePerRequestTermOfTheRowsRelease) {
  SpecLibrary lib;
  const Platform start{lib.hardware("h100-sxm"), lib.engine("sglang")};
  Platform truth = start;
  truth.engine.host_work_for("0.4.4").request_s = 0.06e-3;
  nlohmann::json j = {{"hardware", "h100-sxm"},
                      {"engine", "sglang"},
                      {"defaults", {{"model", "llama-3.1-8b"}, {"prompt_len", 256}, {"output_len", 128}, {"engine_version", "0.4.4"}}},
                      {"rows", nlohmann::json::array()}};
  for (int b : {1, 4, 16, 32, 64}) {
    j["rows"].push_back({{"method", "sequential"}, {"batch", b}, {"step_ms", 1.0}});
    j["rows"].push_back({{"method", "eagle3"}, {"drafter", "eagle3-llama3.1-8b"}, {"k", 3}, {"batch", b},
                         {"acceptance_length", 2.5}, {"step_ms", 1.0}});
  }
  CalibrationSet set = parse_calibration_json(j, "synthetic rows", lib);
  for (auto& row : set.rows) {
    ASSERT_EQ(row.scenario.engine_version, "0.4.4");
    row.measured_step_s = predicted_step_s(row, truth);
  }
  const auto defaults = default_fit_parameters(set, start.engine);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "request_overhead_s@0.4.4"), defaults.end())
      << "plain and speculative rows at five batch sizes: fitted by default, as a term of the rows' release";
  ASSERT_NE(start.engine.host_work_for("0.4.4").request_s, 0.06e-3) << "the search must have somewhere to go";
  const CalibrationResult r = calibrate(set, start, {"request_overhead_s@0.4.4"});
  EXPECT_LT(r.max_abs_error, 0.005);
  EXPECT_NEAR(r.engine.host_work_for("0.4.4").request_s, 0.06e-3, 0.006e-3);
  EXPECT_EQ(r.engine.host_work, start.engine.host_work) << "the current release's range is not the rows'";
  // Plain rows alone cannot tell it from the per-row term: not fitted by default.
  CalibrationSet plain = set;
  plain.rows.erase(std::remove_if(plain.rows.begin(), plain.rows.end(),
                                  [](const MeasuredConfig& m) { return m.scenario.plan.method != Method::sequential; }),
                   plain.rows.end());
  const auto few = default_fit_parameters(plain, start.engine);
  for (const auto& p : few) EXPECT_EQ(p.find("request_overhead_s"), std::string::npos) << p;
  // A row naming no release belongs to the engine's own terms (and the current release's range):
  // it neither joins the 0.4.4 terms nor, alone at one batch size, gets a per-request term.
  CalibrationSet mixed = set;
  mixed.rows[0].scenario.engine_version = "";
  const auto mixed_defaults = default_fit_parameters(mixed, start.engine);
  EXPECT_NE(std::find(mixed_defaults.begin(), mixed_defaults.end(), "step_overhead_s"), mixed_defaults.end());
  EXPECT_NE(std::find(mixed_defaults.begin(), mixed_defaults.end(), "step_overhead_s@0.4.4"), mixed_defaults.end());
  EXPECT_NE(std::find(mixed_defaults.begin(), mixed_defaults.end(), "request_overhead_s@0.4.4"), mixed_defaults.end());
  EXPECT_EQ(std::find(mixed_defaults.begin(), mixed_defaults.end(), "request_overhead_s"), mixed_defaults.end());
  // A mixture-of-experts target's step grows with the batch through the experts it covers: its rows
  // cannot tell a per-request or per-row host term from that, so they fit neither by default.
  CalibrationSet moe = set;
  for (auto& row : moe.rows) row.scenario.target = lib.model("qwen3-30b-a3b");
  ASSERT_TRUE(moe.rows.front().scenario.target.is_moe());
  for (const auto& p : default_fit_parameters(moe, start.engine)) {
    EXPECT_EQ(p.find("request_overhead_s"), std::string::npos) << p;
    EXPECT_EQ(p.find("sampling_"), std::string::npos) << p;
  }
  const auto dense_defaults = default_fit_parameters(set, start.engine);
  EXPECT_NE(std::find(dense_defaults.begin(), dense_defaults.end(), "sampling_s_per_row@0.4.4"), dense_defaults.end())
      << "the same rows with a dense target do";
}

// A calibration's host terms belong to the release its rows ran: fitted to vLLM rows of the V1
// engine before async scheduling (v0.8 to v0.14), they price those releases and leave every other
// release (and the engine's own terms, every range's fallback) exactly as the spec had them.
TEST(HostWork, FittedHostTermsPriceOnlyTheirRelease) {
  SpecLibrary lib;
  const Platform start{lib.hardware("h100-sxm"), lib.engine("vllm")};
  ASSERT_NE(&start.engine.host_work_for("0.9.0"), &start.engine.host_work_for("0.14.0"))
      << "the bundled vllm spec must keep 0.9.0 and 0.14.0 in different ranges for this test";
  Platform truth = start;
  HostWork& v09 = truth.engine.host_work_for("0.9.0");
  v09.step_s = 0.7e-3;
  v09.draft_step_s["eagle3"] = 0.7e-3;
  v09.spec_step_s["eagle3"] = 1.1e-3;
  nlohmann::json j = {{"hardware", "h100-sxm"},
                      {"engine", "vllm"},
                      {"defaults", {{"model", "llama-3.1-8b"}, {"prompt_len", 128}, {"output_len", 256}, {"engine_version", "0.9.0"}}},
                      {"rows", nlohmann::json::array()}};
  j["rows"].push_back({{"method", "sequential"}, {"step_ms", 1.0}});
  for (int k : {1, 2, 3, 5, 7})
    j["rows"].push_back({{"method", "eagle3"}, {"drafter", "eagle3-llama3.1-8b"}, {"k", k},
                         {"acceptance_length", 1.0 + 0.5 * k}, {"step_ms", 1.0}});
  CalibrationSet set = parse_calibration_json(j, "synthetic rows", lib);
  for (auto& row : set.rows) row.measured_step_s = predicted_step_s(row, truth);
  const std::vector<std::string> params = {"step_overhead_s@0.9.0", "draft_step_overhead_s.eagle3@0.9.0",
                                           "spec_step_overhead_s.eagle3@0.9.0"};
  const auto defaults = default_fit_parameters(set, start.engine);
  for (const auto& p : params) EXPECT_NE(std::find(defaults.begin(), defaults.end(), p), defaults.end()) << p;
  for (const auto& p : defaults) EXPECT_NE(p, "step_overhead_s") << "no row names no release: no engine-wide term";
  const CalibrationResult r = calibrate(set, start, params);
  EXPECT_LT(r.max_abs_error, 0.01);
  EXPECT_NEAR(r.engine.draft_step_overhead("eagle3", "0.9.0"), 0.7e-3, 0.1e-3);
  EXPECT_NEAR(r.engine.spec_step_overhead("eagle3", "0.9.0"), 1.1e-3, 0.3e-3);
  EXPECT_NEAR(r.engine.draft_step_overhead("eagle", "0.9.0"), r.engine.draft_step_overhead("eagle3", "0.9.0"), 0)
      << "a sibling without its own term takes the fitted one in that release";
  // Elsewhere nothing moved: the engine's own terms, the 2026 release's, and every prediction on it.
  EXPECT_EQ(r.engine.step_overhead_s, start.engine.step_overhead_s);
  EXPECT_EQ(r.engine.draft_step_overhead_s, start.engine.draft_step_overhead_s);
  EXPECT_EQ(r.engine.spec_step_overhead_s, start.engine.spec_step_overhead_s);
  for (const char* other : {"0.14.0", "0.7.0", ""}) {
    EXPECT_EQ(r.engine.draft_step_overhead("eagle3", other), start.engine.draft_step_overhead("eagle3", other)) << other;
    Scenario a = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 5, 0.7);
    a.engine_version = other;
    Scenario b = a;
    a.engine = start.engine;
    b.engine = r.engine;
    EXPECT_EQ(decode_step_cost(a, 200, 3.0).total_s(), decode_step_cost(b, 200, 3.0).total_s())
        << "release '" << other << "' is priced as before the fit";
  }
  // The fitted spec keeps the release's terms through its JSON, and prices 0.9.0 with them.
  const EngineSpec back = parse_engine_spec(engine_spec_to_json(r.engine), "round trip");
  EXPECT_EQ(back.host_work_eras, r.engine.host_work_eras);
  EXPECT_EQ(back.host_work, r.engine.host_work);
  EXPECT_EQ(back.step_overhead("0.9.0"), r.engine.step_overhead("0.9.0"));
}

// Rows naming no release run the current one: in a set whose other rows name a current release, they
// fit that range's terms with them (the range's own terms would shadow the engine's for them).
TEST(HostWork, UnversionedRowsJoinANamedCurrentRelease) {
  SpecLibrary lib;
  const EngineSpec vllm = lib.engine("vllm");
  ASSERT_EQ(&vllm.host_work_for("0.14.0"), &vllm.host_work) << "0.14.0 is the current range of the bundled vllm spec";
  nlohmann::json j = {{"hardware", "h100-sxm"},
                      {"engine", "vllm"},
                      {"defaults", {{"model", "llama-3.1-8b"}}},
                      {"rows", nlohmann::json::array()}};
  j["rows"].push_back({{"method", "sequential"}, {"step_ms", 7.0}, {"engine_version", "0.14.0"}});
  j["rows"].push_back({{"method", "eagle3"}, {"drafter", "eagle3-llama3.1-8b"}, {"k", 3}, {"acceptance_length", 2.5},
                       {"step_ms", 9.0}});
  const CalibrationSet set = parse_calibration_json(j, "synthetic rows", lib);
  const auto p = default_fit_parameters(set, vllm);
  for (const char* want : {"step_overhead_s@0.14.0", "draft_step_overhead_s.eagle3@0.14.0", "spec_step_overhead_s.eagle3@0.14.0"})
    EXPECT_NE(std::find(p.begin(), p.end(), want), p.end()) << want;
  for (const auto& name : p) EXPECT_NE(name, "step_overhead_s") << "no engine-wide term the rows could not move";
  // Without a named current release they fit the engine's own terms, as before scopes existed.
  CalibrationSet unnamed = set;
  unnamed.rows[0].scenario.engine_version = "";
  const auto q = default_fit_parameters(unnamed, vllm);
  EXPECT_NE(std::find(q.begin(), q.end(), "step_overhead_s"), q.end());
}

TEST(HostWork, ReleaseScopedParameterNamesAreChecked) {
  SpecLibrary lib;
  Platform p{lib.hardware("h100-sxm"), lib.engine("vllm")};
  const struct {
    const char* name;
    const char* message;
  } cases[] = {
      {"kernel_floor_s@0.9.0", "'kernel_floor_s' is not a term of a release"},
      {"tree_step_s@0.9.0", "'tree_step_s' is not a term of a release"},
      {"step_overhead_s@", "no engine version after '@'"},
      {"step_overhead_s@0.9.x", "'0.9.x' is not a dotted version number"},
      {"draft_step_overhead_s.hydra@0.9.0", "unknown method 'hydra'"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { set_parameter(p, c.name, 1e-3); });
    EXPECT_NE(e.find(c.message), std::string::npos) << c.name << ": " << e;
  }
  // A scoped name reads the engine's term until the release has its own, then its own.
  EXPECT_EQ(get_parameter(p, "sampling_s_per_row@0.9.0"), p.engine.sampling_s_per_row);
  set_parameter(p, "sampling_s_per_row@0.9.0", 2e-5);
  EXPECT_EQ(get_parameter(p, "sampling_s_per_row@0.9.0"), 2e-5);
  EXPECT_EQ(get_parameter(p, "sampling_s_per_row@0.14.0"), p.engine.sampling_s_per_row);
  EXPECT_EQ(p.engine.sampling_seconds(10, "0.9.0"), 2e-4);
}

}  // namespace
}  // namespace specdec::sim
