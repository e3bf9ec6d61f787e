// Replay of recorded traces: accepted lengths per step, recorded K, and the errors.
#include <gtest/gtest.h>

#include "simulator/trace_replay.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

Trace chain_trace(const std::vector<int>& accepted, int k) {
  Trace t;
  t.meta.method = "eagle3";
  t.steps.emplace_back();  // step 0: prefill, no drafts
  for (int a : accepted) {
    StepRecord s;
    for (int i = 0; i < k; ++i) {
      s.draft_tokens.push_back(10 + i);
      s.draft_parents.push_back(i - 1);
    }
    for (int i = 0; i < a; ++i) s.accepted_path.push_back(i);
    t.steps.push_back(s);
  }
  return t;
}

TEST(TraceReplay, AcceptedLengthsFromChainSteps) {
  const Trace t = chain_trace({3, 0, 4, 1}, 4);
  const TraceAcceptance a = trace_acceptance(t);
  EXPECT_EQ(a.accepted, (std::vector<int>{3, 0, 4, 1}));
  EXPECT_EQ(a.recorded_k, 4);
  EXPECT_FALSE(a.tree);
  const AcceptancePtr r = replay_acceptance_from_trace(t);
  EXPECT_DOUBLE_EQ(r->expected_tokens(4), 1.0 + 8.0 / 4.0);
  EXPECT_DOUBLE_EQ(r->expected_tokens(1), 1.0 + 3.0 / 4.0);
}

TEST(TraceReplay, TreesAndErrors) {
  Trace t = chain_trace({2}, 3);
  t.steps[1].draft_parents = {-1, -1, 0};  // two roots' children, one grandchild: depth 2
  const TraceAcceptance a = trace_acceptance(t);
  EXPECT_TRUE(a.tree);
  EXPECT_EQ(a.recorded_k, 2);
  Trace seq;
  seq.meta.method = "sequential";
  EXPECT_NE(test::error_of([&] { trace_acceptance(seq); }).find("sequential"), std::string::npos);
  Trace none = chain_trace({}, 2);
  EXPECT_NE(test::error_of([&] { trace_acceptance(none); }).find("no speculative steps"), std::string::npos);
  test::TempDir dir;
  EXPECT_FALSE(test::error_of([&] { replay_acceptance_from_file(dir.path() / "missing.h5"); }).empty());
  EXPECT_FALSE(measured_config_from_trace(chain_trace({1}, 2), "t").has_value()) << "no timings recorded";
}

}  // namespace
}  // namespace specdec::sim
