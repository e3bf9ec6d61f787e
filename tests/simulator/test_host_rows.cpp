// The engine's host time per verified row saturates with the rows of a step (engines sample and
// accept a whole batch in one vectorised pass): per row it falls as rows grow, the spec field is
// checked, and calibration fits where the curve bends from rows at several batch sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "simulator/calibration.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

TEST(HostRows, PerRowHostTimeFallsAsRowsGrow) {
  EngineSpec e;
  e.sampling_s_per_row = 0.1e-3;
  EXPECT_DOUBLE_EQ(e.sampling_seconds(64), 6.4e-3) << "no saturation: linear, as before";
  e.sampling_saturation_rows = 32;
  EXPECT_NEAR(e.sampling_seconds(1), 0.1e-3 / (1 + 1.0 / 32), 1e-12);
  double last_per_row = 1, last_total = 0;
  for (double rows : {1.0, 4.0, 16.0, 64.0, 256.0, 1024.0}) {
    const double total = e.sampling_seconds(rows);
    EXPECT_LT(total / rows, last_per_row) << rows << " rows: each row costs less than with fewer";
    EXPECT_GT(total, last_total) << rows << " rows: the step still costs more in all";
    EXPECT_LT(total, 0.1e-3 * 32) << "never beyond per-row time × saturation rows";
    last_per_row = total / rows;
    last_total = total;
  }
  EXPECT_EQ(e.sampling_seconds(0), 0);
}

TEST(HostRows, LongChainsAtLargeBatchesCostLessThanLinearly) {
  // SGLang-like engine on H100, Llama-3.1-8B with EAGLE-3, K = 3 at batch 64: 256 verified rows.
  Scenario s = test::scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 3, 0.7);
  s.workload.batch = 64;
  s.engine.sampling_s_per_row = 0.13e-3;
  Scenario saturating = s;
  saturating.engine.sampling_saturation_rows = 64;
  const Prediction linear = predict(s), bent = predict(saturating);
  EXPECT_LT(bent.step.overhead_s, linear.step.overhead_s);
  EXPECT_GT(bent.speedup, linear.speedup);
  // At batch 1 (4 rows) the two nearly agree: the bend is where the rows are.
  s.workload.batch = saturating.workload.batch = 1;
  EXPECT_NEAR(predict(saturating).step.overhead_s / predict(s).step.overhead_s, 1.0, 0.07);
}

TEST(HostRows, SpecFieldIsCheckedAndRoundTrips) {
  const auto parse = [](const std::string& rows) {
    return parse_engine_spec(nlohmann::json::parse(R"({"name": "x", "overhead": {"sampling_s_per_row": 0.0001,
        "sampling_saturation_rows": )" + rows + "}}"),
                             "x.json");
  };
  EXPECT_EQ(parse("48").sampling_saturation_rows, 48);
  EXPECT_EQ(parse("0").sampling_saturation_rows, 0) << "0: never saturates";
  for (const char* bad : {"-1", "0.5", "1e9"}) {
    const std::string e = error_of([&] { parse(bad); });
    EXPECT_NE(e.find("x.json (overhead): field 'sampling_saturation_rows' must be"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("rows"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] { parse("\"many\""); }).find("sampling_saturation_rows"), std::string::npos);
  const EngineSpec e = parse("48");
  EXPECT_EQ(parse_engine_spec(engine_spec_to_json(e), "round trip").sampling_saturation_rows, 48);
}

// Step times generated from a known curve (per-row time and saturation rows) are fitted back, from
// plain and K = 3 rows at batch 1 to 64 (1 to 256 verified rows per step).
TEST(HostRows, CalibrationRecoversTheSaturatingCurve) {
  SpecLibrary lib;
  const Platform start{lib.hardware("h100-sxm"), lib.engine("sglang")};
  Platform truth = start;
  truth.engine.sampling_s_per_row = 0.12e-3;
  truth.engine.sampling_saturation_rows = 40;
  nlohmann::json j = {{"hardware", "h100-sxm"},
                      {"engine", "sglang"},
                      {"defaults", {{"model", "llama-3.1-8b"}, {"prompt_len", 256}, {"output_len", 128}}},
                      {"rows", nlohmann::json::array()}};
  for (int b : {1, 4, 8, 16, 32, 64}) {
    j["rows"].push_back({{"method", "sequential"}, {"batch", b}, {"step_ms", 1.0}});
    j["rows"].push_back({{"method", "eagle3"}, {"drafter", "eagle3-llama3.1-8b"}, {"k", 3}, {"batch", b},
                         {"acceptance_length", 2.5}, {"step_ms", 1.0}});
  }
  CalibrationSet set = parse_calibration_json(j, "synthetic rows", lib);
  for (auto& row : set.rows) row.measured_step_s = predicted_step_s(row, truth);
  const auto defaults = default_fit_parameters(set, start.engine);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "sampling_saturation_rows"), defaults.end())
      << "six batch sizes: the bend is fitted by default";
  const CalibrationResult r = calibrate(set, start, {"sampling_s_per_row", "sampling_saturation_rows"});
  EXPECT_LT(r.max_abs_error, 0.005);
  EXPECT_NEAR(r.engine.sampling_s_per_row, 0.12e-3, 0.012e-3);
  EXPECT_NEAR(r.engine.sampling_saturation_rows, 40, 4);
  // Two batch sizes cannot tell the bend from the slope: it is not fitted by default.
  CalibrationSet two = set;
  two.rows.erase(std::remove_if(two.rows.begin(), two.rows.end(),
                                [](const MeasuredConfig& m) { return m.scenario.workload.batch > 4; }),
                 two.rows.end());
  const auto few = default_fit_parameters(two, start.engine);
  EXPECT_EQ(std::find(few.begin(), few.end(), "sampling_saturation_rows"), few.end());
}

}  // namespace
}  // namespace specdec::sim
