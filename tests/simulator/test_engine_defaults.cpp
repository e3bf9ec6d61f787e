// The shared engine defaults (simulator/specs/engine_defaults.json): a speculative step of an engine
// no calibration measured is no longer free of engine work, an engine's own term (zero included)
// wins over the default, and a bad defaults file is refused naming the field.
#include <gtest/gtest.h>

#include <fstream>

#include "simulator/engine_defaults.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

TEST(EngineDefaults, UncalibratedEnginesPayForEverySpeculativeStep) {
  SpecLibrary lib;
  for (const char* name : {"vllm", "sglang", "tensorrt-llm", "hf-eager", "transformers-neuronx"}) {
    const EngineSpec e = lib.engine(name);
    EXPECT_GT(e.draft_step_overhead("eagle3"), 0) << name;
    EXPECT_GT(e.spec_step_overhead("eagle3"), 0) << name;
    EXPECT_GT(e.spec_step_overhead("draft"), 0) << name;
  }
  EXPECT_EQ(lib.engine("ideal").spec_step_overhead("eagle3"), 0) << "ideal gives 0 on purpose";
  EXPECT_EQ(lib.engine("specdec-cpu").draft_step_overhead("eagle3"), 0);
  // vLLM gives no term of its own: it takes the file's values.
  const nlohmann::json d = lib.engine_defaults();
  EXPECT_EQ(lib.engine("vllm").draft_step_overhead("peagle"), d["overhead"]["draft_step_s"].get<double>());
  EXPECT_EQ(lib.engine("vllm").spec_step_overhead("mtp"), d["overhead"]["spec_step_s"].get<double>());
}

TEST(EngineDefaults, AnUncalibratedSpeculativeStepCostsMoreThanItsDeviceTime) {
  // Llama-3.1-8B with EAGLE-3 on H100 (K = 4): the step with the shared default is slower than the
  // same step with the default taken away, by exactly the terms times their counts.
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  const SpecLibrary lib;
  s.engine = lib.engine("vllm");
  const nlohmann::json d = lib.engine_defaults()["overhead"];
  Scenario free_steps = s;
  free_steps.engine.draft_step_overhead_s = {{"default", 0.0}};
  free_steps.engine.spec_step_overhead_s = {{"default", 0.0}};
  const Prediction with = predict(s), without = predict(free_steps);
  const double extra = with.step.total_s() - without.step.total_s();
  EXPECT_NEAR(extra, with.step.draft_forwards * d["draft_step_s"].get<double>() + d["spec_step_s"].get<double>(), 1e-9);
  EXPECT_GT(extra, 0);
  EXPECT_LT(with.speedup, without.speedup);
  EXPECT_EQ(with.sequential_tpot_s, without.sequential_tpot_s) << "plain decoding pays no speculative term";
}

TEST(EngineDefaults, AnEnginesOwnTermWins) {
  const nlohmann::json d = nlohmann::json::parse(R"({"overhead": {"draft_step_s": 0.0001, "spec_step_s": 0.0006}})");
  const auto own = with_engine_defaults(nlohmann::json::parse(R"({"name": "x", "overhead": {
      "draft_step_s": {"eagle3": 0.0007}, "spec_step_s": {"default": 0.0}}})"), d);
  const EngineSpec e = parse_engine_spec(own, "x.json");
  EXPECT_EQ(e.draft_step_overhead("eagle3"), 0.0007);
  EXPECT_EQ(e.draft_step_overhead("draft"), 0.0001) << "no default of its own: the shared one";
  EXPECT_EQ(e.spec_step_overhead("eagle3"), 0.0) << "an explicit default of 0 stays";
  const auto number = with_engine_defaults(nlohmann::json::parse(R"({"name": "x", "overhead": {"spec_step_s": 0.0002}})"), d);
  EXPECT_EQ(parse_engine_spec(number, "x.json").spec_step_overhead("draft"), 0.0002) << "a bare number is the engine's default";
  const auto none = with_engine_defaults(nlohmann::json::parse(R"({"name": "x"})"), d);
  EXPECT_EQ(parse_engine_spec(none, "x.json").spec_step_overhead("draft"), 0.0006);
}

TEST(EngineDefaults, BadDefaultsAreRefusedByName) {
  auto check = [](const char* text) { return error_of([&] { check_engine_defaults(nlohmann::json::parse(text), "d.json"); }); };
  EXPECT_EQ(check(R"({"overhead": {"draft_step_s": 0.0001, "spec_step_s": 0.0006}})"), "");
  EXPECT_NE(check(R"({"overhead": {"draft_step_s": -1}})").find("d.json (overhead): field 'draft_step_s' must be >= 0"), std::string::npos)
      << check(R"({"overhead": {"draft_step_s": -1}})");
  EXPECT_NE(check(R"({"overhead": {"spec_step_s": {"eagle": 0.1}}})").find("must be a number of seconds"), std::string::npos);
  EXPECT_NE(check(R"({"overhead": {"step_s": 0.001}})").find("step_s"), std::string::npos) << "only speculative terms default";
  EXPECT_NE(check(R"([1])").find("d.json: engine defaults must be an object"), std::string::npos);
  // A spec directory's own defaults replace the bundled ones, and are checked.
  test::TempDir dir;
  std::ofstream(dir.path() / "engine_defaults.json") << R"({"overhead": {"spec_step_s": 2}})";
  EXPECT_NE(error_of([&] { SpecLibrary({dir.path()}).engine("vllm"); }).find("engine_defaults.json (overhead): field 'spec_step_s'"),
            std::string::npos);
  std::ofstream(dir.path() / "engine_defaults.json") << R"({"overhead": {"spec_step_s": 0.002}})";
  EXPECT_EQ(SpecLibrary({dir.path()}).engine("vllm").spec_step_overhead("eagle"), 0.002);
}

}  // namespace
}  // namespace specdec::sim
