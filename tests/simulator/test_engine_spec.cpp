// Engine overhead terms by method: an EAGLE-family method without a term of its own takes its
// nearest sibling's (a method absent from calibration is not free), an explicit term wins, and
// the draft model keeps the engine-wide default.
#include <gtest/gtest.h>

#include "simulator/engine_spec.hpp"

namespace specdec::sim {
namespace {

EngineSpec engine_with(std::map<std::string, double> draft, std::map<std::string, double> spec) {
  EngineSpec e;
  e.draft_step_overhead_s = std::move(draft);
  e.spec_step_overhead_s = std::move(spec);
  return e;
}

TEST(EngineSpec, EagleFamilyMethodsShareTheirSiblingsTerms) {
  // As a calibration on EAGLE-1 and EAGLE-3 leaves an engine: P-EAGLE takes EAGLE-3's terms.
  const EngineSpec e = engine_with({{"default", 0.0}, {"eagle", 0.2e-3}, {"eagle3", 0.5e-3}}, {{"eagle3", 0.3e-3}});
  EXPECT_EQ(e.draft_step_overhead("peagle"), 0.5e-3);
  EXPECT_EQ(e.spec_step_overhead("peagle"), 0.3e-3);
  EXPECT_EQ(e.spec_step_overhead("eagle"), 0.3e-3) << "EAGLE-1 without its own iteration term takes EAGLE-3's";
  EXPECT_EQ(e.draft_step_overhead("eagle"), 0.2e-3) << "its own term wins";
  EXPECT_EQ(e.draft_step_overhead("draft"), 0.0) << "a draft model is not of the family: the default";
  EXPECT_EQ(e.spec_step_overhead("draft"), 0.0) << "no default: 0";
  // Only EAGLE-1 measured: EAGLE-3 and P-EAGLE take it.
  const EngineSpec one = engine_with({{"eagle", 0.7e-3}}, {});
  EXPECT_EQ(one.draft_step_overhead("eagle3"), 0.7e-3);
  EXPECT_EQ(one.draft_step_overhead("peagle"), 0.7e-3);
  // Only P-EAGLE measured: EAGLE-3 takes it before any default.
  const EngineSpec p = engine_with({{"default", 0.1e-3}, {"peagle", 0.9e-3}}, {});
  EXPECT_EQ(p.draft_step_overhead("eagle3"), 0.9e-3);
  EXPECT_EQ(p.draft_step_overhead("draft"), 0.1e-3);
}

TEST(EngineSpec, ParsedOverheadMapsFollowTheSameRule) {
  const EngineSpec e = parse_engine_spec(nlohmann::json::parse(R"({"name": "x", "overhead": {"step_s": 0.001,
      "draft_step_s": {"default": 0.0001, "eagle1": 0.0004}, "spec_step_s": 0.0002}})"), "x.json");
  EXPECT_EQ(e.draft_step_overhead("eagle"), 0.0004) << "the older spelling eagle1 is EAGLE-1";
  EXPECT_EQ(e.draft_step_overhead("peagle"), 0.0004);
  EXPECT_EQ(e.draft_step_overhead("draft"), 0.0001);
  EXPECT_EQ(e.spec_step_overhead("peagle"), 0.0002) << "a single number is the default of every method";
}

}  // namespace
}  // namespace specdec::sim
