// Traces are read by h5py: tests/traces/read_trace.py opens traces written here and reports what
// it sees as JSON, which must match the C++ side. h5py is a required dependency: if it cannot be
// imported the test fails, it does not skip.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "tests/traces/trace_fixtures.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

using nlohmann::json;
using trace_test::TempDir;

// Runs read_trace.py on `trace`; returns its JSON report, or fails the test with its output.
json run_reader(const std::filesystem::path& trace, const TempDir& dir) {
  const std::filesystem::path out = dir / "report.json";
  const std::string cmd = std::string("'") + SPECDEC_PYTHON + "' '" + SPECDEC_SOURCE_DIR +
                          "/tests/traces/read_trace.py' '" + trace.string() + "' '" + out.string() + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << cmd;
    return {};
  }
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    ADD_FAILURE() << "read_trace.py failed (exit " << code << "): " << output
                  << (code == 3 ? "\npython3-h5py and python3-numpy are required packages: install them" : "");
    return {};
  }
  std::ifstream in(out);
  return json::parse(in);
}

TEST(TracePython, H5pyReadsSequentialFullLogits) {
  TempDir dir;
  const uint64_t seed = 50;
  const Trace t = trace_test::sequential_trace(seed, true);
  write_trace(dir / "seq.h5", t);
  const json r = run_reader(dir / "seq.h5", dir);
  ASSERT_FALSE(r.is_null()) << "seed " << seed;
  EXPECT_EQ(r["format"], "specdec-trace");
  EXPECT_EQ(r["schema_version"], trace_schema_version());
  EXPECT_EQ(r["exactness_contract"], exact::kContractVersion);
  EXPECT_EQ(r["method"], "sequential");
  EXPECT_EQ(r["created_utc"], t.meta.created_utc);
  EXPECT_EQ(r["seed"].get<uint64_t>(), seed);
  EXPECT_EQ(r["config"]["backend"], "reference");
  EXPECT_EQ(r["models"]["target"]["fingerprint"], t.meta.models.at("target").fingerprint);
  EXPECT_EQ(r["prompt"].get<std::vector<int32_t>>(), t.prompt);
  EXPECT_EQ(r["output"].get<std::vector<int32_t>>(), t.output);
  EXPECT_EQ(r["stop_reason"], "max_tokens");
  EXPECT_EQ(r["storage"], "full");
  EXPECT_EQ(r["timing_phases"], json::array({"step"}));
  ASSERT_EQ(r["emitted"].size(), t.steps.size());
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    EXPECT_EQ(r["positions"][s].get<int64_t>(), t.steps[s].position) << "step " << s;
    EXPECT_EQ(r["emitted"][s].get<std::vector<int32_t>>(), t.steps[s].emitted_tokens) << "step " << s;
    // Python's recomputation of the summary from the stored full row equals summarize_logits.
    const std::vector<float>& row = t.steps[s].target_logits[0].full;
    const LogitSummary sum = summarize_logits(row.data(), static_cast<int>(row.size()), 5);
    EXPECT_EQ(r["topk_ids"][s].get<std::vector<int32_t>>(), sum.topk_ids) << "step " << s << ", seed " << seed;
    EXPECT_EQ(r["checksum"][s].get<uint64_t>(), sum.checksum) << "step " << s << ", seed " << seed;
    EXPECT_NEAR(r["logsumexp"][s].get<double>(), sum.logsumexp, 1e-12 * std::abs(sum.logsumexp))
        << "step " << s << ", seed " << seed;
  }
}

TEST(TracePython, H5pyReadsSpeculativeTopK) {
  TempDir dir;
  const uint64_t seed = 51;
  const Trace t = trace_test::speculative_trace(seed);
  write_trace(dir / "spec.h5", t);
  const json r = run_reader(dir / "spec.h5", dir);
  ASSERT_FALSE(r.is_null()) << "seed " << seed;
  EXPECT_EQ(r["method"], "eagle");
  EXPECT_EQ(r["output"].get<std::vector<int32_t>>(), t.output);
  EXPECT_EQ(r["stop_reason"], "eos");
  EXPECT_EQ(r["storage"], "topk");
  EXPECT_EQ(r["random_counters"], 4);
  EXPECT_EQ(r["timing_phases"], json::array({"draft", "verify"}));
  std::size_t row = 0;
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    const StepRecord& st = t.steps[s];
    EXPECT_EQ(r["emitted"][s].get<std::vector<int32_t>>(), st.emitted_tokens) << "step " << s;
    EXPECT_EQ(r["draft_tokens"][s].get<std::vector<int32_t>>(), st.draft_tokens) << "step " << s;
    EXPECT_EQ(r["draft_parents"][s].get<std::vector<int32_t>>(), st.draft_parents) << "step " << s;
    EXPECT_EQ(r["accepted_path"][s].get<std::vector<int32_t>>(), st.accepted_path) << "step " << s;
    EXPECT_EQ(r["accept_decisions"][s].get<std::vector<int>>(),
              std::vector<int>(st.accept_decisions.begin(), st.accept_decisions.end()))
        << "step " << s;
    EXPECT_EQ(r["bonus_token"][s].get<int32_t>(), st.bonus_token) << "step " << s;
    for (const LogitRecord& rec : st.target_logits) {
      EXPECT_EQ(r["topk_ids"][row].get<std::vector<int32_t>>(), rec.summary.topk_ids) << "row " << row;
      EXPECT_EQ(r["checksum"][row].get<uint64_t>(), rec.summary.checksum) << "row " << row;
      EXPECT_EQ(r["logsumexp"][row].get<double>(), rec.summary.logsumexp) << "row " << row;
      ++row;
    }
  }
  EXPECT_EQ(r["topk_ids"].size(), row);
}

}  // namespace
}  // namespace specdec
