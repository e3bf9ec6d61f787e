// Monitoring a run: the --events JSON-lines stream (runtime/step_events.hpp) of generate and batch
// on the bundled models against the run's own result (one step event per step, the scheduled K,
// totals), fallback events, the --live line (cli/live_line.hpp) on and off a terminal, and the
// errors for paths that cannot be written and for stdout taken twice.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/live_line.hpp"
#include "reference/core/error.hpp"
#include "runtime/observer_fanout.hpp"
#include "runtime/step_events.hpp"
#include "tests/cli/cli_runner.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CliRun;
using testing::run;

const std::string kModels = std::string(SPECDEC_SOURCE_DIR) + "/models/";
const std::string kTarget = kModels + "target";

std::vector<json> parse_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_FALSE(line.empty()) << "an empty line in the events";
    out.push_back(json::parse(line));  // throws (fails the test) on a line that is not one JSON value
    EXPECT_TRUE(out.back().is_object()) << line;
  }
  return out;
}

std::vector<json> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return parse_lines(s.str());
}

std::vector<json> of_event(const std::vector<json>& events, const std::string& name) {
  std::vector<json> out;
  for (const json& e : events)
    if (e.at("event") == name) out.push_back(e);
  return out;
}

class Monitoring : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("specdec_monitoring_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path path(const std::string& name) { return dir_ / name; }

  // Checks the stream of one sequence against its generate --json result.
  static void check_against_result(const std::vector<json>& events, const json& result) {
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.front().at("event"), "prefill");
    EXPECT_EQ(events.front().at("prompt_tokens").get<std::size_t>(), result.at("prompt_tokens").size());
    EXPECT_EQ(events.back().at("event"), "finish");
    const std::vector<json> steps = of_event(events, "step");
    const json& stats = result.at("stats");
    ASSERT_EQ(static_cast<int>(steps.size()), stats.at("steps").get<int>()) << "one step event per decoding step";
    int emitted = 0, accepted = 0, drafted = 0;
    double t = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const json& s = steps[i];
      EXPECT_EQ(s.at("step").get<int>(), static_cast<int>(i) + 1);
      EXPECT_EQ(s.at("sequence").get<int>(), 0);
      emitted += s.at("emitted").get<int>();
      accepted += s.at("accepted").get<int>();
      drafted += s.at("drafted").get<int>();
      EXPECT_LE(s.at("accepted").get<int>(), s.at("drafted").get<int>());
      EXPECT_LE(s.at("drafted_depth").get<int>(), s.at("drafted").get<int>());
      EXPECT_EQ(s.at("tokens").get<int>(), 1 + emitted) << "tokens so far, the prefill's first included";
      EXPECT_GE(s.at("t_s").get<double>(), t);
      t = s.at("t_s").get<double>();
      EXPECT_GE(s.at("draft_ms").get<double>(), 0.0);
      EXPECT_GE(s.at("verify_ms").get<double>(), 0.0);
      if (drafted > 0) {
        EXPECT_NEAR(s.at("running_acceptance").get<double>(), static_cast<double>(accepted) / drafted, 1e-6);
      } else {
        EXPECT_TRUE(s.at("running_acceptance").is_null());
      }
    }
    const auto tokens = result.at("output_tokens").size();
    EXPECT_EQ(static_cast<std::size_t>(emitted), tokens - 1) << "every token but the prefill's comes from a step";
    EXPECT_EQ(accepted, stats.at("accepted_tokens").get<int>());
    EXPECT_EQ(drafted, stats.at("drafted_tokens").get<int>());
    EXPECT_NEAR(steps.back().at("running_al").get<double>(), stats.at("acceptance_length").get<double>(), 1e-6);
    const json& fin = events.back();
    EXPECT_EQ(fin.at("tokens").get<std::size_t>(), tokens);
    EXPECT_EQ(fin.at("stop_reason"), result.at("stop_reason"));
    EXPECT_EQ(fin.at("steps").get<int>(), stats.at("steps").get<int>());
    EXPECT_EQ(fin.at("accepted").get<int>(), accepted);
    EXPECT_NEAR(fin.at("al").get<double>(), stats.at("acceptance_length").get<double>(), 1e-6);
    EXPECT_GT(fin.at("tokens_per_s").get<double>(), 0.0);
  }

  static fs::path dir_;
};

fs::path Monitoring::dir_;

const std::vector<std::string> kEagle3 = {"generate", "--model", kTarget, "--method", "eagle3", "--drafter", kModels + "eagle3",
                                          "--k", "3", "--prompt", "And God said", "--max-new-tokens", "24", "--ignore-eos"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& extra) {
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_F(Monitoring, EventsFollowTheScheduledDepthsAndAddUpToTheResult) {
  const fs::path f = path("schedule.jsonl");
  const CliRun r = run(with(kEagle3, {"--policy", "schedule,depths=2/0", "--json", "--events", f.string()}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no live line unless asked for";
  const json result = json::parse(r.out);
  const std::vector<json> events = read_lines(f);
  check_against_result(events, result);
  const std::vector<json> steps = of_event(events, "step");
  for (const json& s : steps) {
    const int want = s.at("step").get<int>() % 2 == 1 ? 2 : 0;  // step 1 plans depths[0]
    EXPECT_EQ(s.at("planned_depth").get<int>(), want) << s.dump();
    EXPECT_EQ(s.at("policy_state"), "K " + std::to_string(want)) << s.dump();
    if (want == 0) {
      EXPECT_EQ(s.at("drafted").get<int>(), 0) << s.dump();
      EXPECT_EQ(s.at("emitted").get<int>(), 1) << s.dump();
    } else {
      EXPECT_EQ(s.at("drafted_depth").get<int>(), 2) << s.dump();
    }
  }
  EXPECT_TRUE(of_event(events, "fallback").empty());
}

TEST_F(Monitoring, EventsOfAFixedRunAndOfSequentialDecoding) {
  const fs::path f = path("fixed.jsonl");
  CliRun r = run(with(kEagle3, {"--json", "--events", f.string()}));
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<json> events = read_lines(f);
  check_against_result(events, json::parse(r.out));
  for (const json& s : of_event(events, "step")) {
    EXPECT_EQ(s.at("planned_depth").get<int>(), 3);
    EXPECT_FALSE(s.contains("policy_state")) << "the fixed policy reports no state";
  }

  r = run({"generate", "--model", kTarget, "--prompt", "And God said", "--max-new-tokens", "9", "--ignore-eos", "--json",
           "--events", f.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  events = read_lines(f);  // truncated, not appended to
  check_against_result(events, json::parse(r.out));
  const std::vector<json> steps = of_event(events, "step");
  ASSERT_EQ(steps.size(), 8u);
  for (const json& s : steps) {
    EXPECT_EQ(s.at("planned_depth").get<int>(), 0);
    EXPECT_EQ(s.at("emitted").get<int>(), 1);
    EXPECT_EQ(s.at("running_al").get<double>(), 1.0);
  }
}

TEST_F(Monitoring, AFailingDrafterIsAFallbackEvent) {
  const fs::path f = path("fault.jsonl");
  const CliRun r = run(with(kEagle3, {"--drafter-fault", "throw@2", "--json", "--events", f.string()}));
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(r.out);
  const std::vector<json> events = read_lines(f);
  check_against_result(events, result);
  const std::vector<json> fallbacks = of_event(events, "fallback");
  ASSERT_EQ(fallbacks.size(), 1u);
  const json& fb = fallbacks[0];
  EXPECT_EQ(fb.at("step").get<int>(), 2);
  EXPECT_EQ(fb.at("next"), "plain decoding");
  EXPECT_NE(fb.at("reason").get<std::string>().find("injected"), std::string::npos) << fb.dump();
  EXPECT_FALSE(fb.at("drafter").get<std::string>().empty());
  if (result.contains("fallbacks")) {
    ASSERT_EQ(result.at("fallbacks").size(), 1u);
    EXPECT_EQ(result.at("fallbacks")[0].at("reason"), fb.at("reason"));
  }
  // Reported before the step it failed in; that step and all after it are plain.
  std::size_t at = 0;
  while (events[at].at("event") != "fallback") ++at;
  ASSERT_LT(at + 1, events.size());
  EXPECT_EQ(events[at + 1].at("event"), "step");
  EXPECT_EQ(events[at + 1].at("step").get<int>(), 2);
  for (const json& s : of_event(events, "step")) {
    if (s.at("step").get<int>() >= 2) EXPECT_EQ(s.at("planned_depth").get<int>(), 0) << s.dump();
  }
  EXPECT_EQ(events.back().at("fallbacks").get<int>(), 1);
}

TEST_F(Monitoring, BatchEventsCarryEachRequestsSequenceId) {
  const fs::path q = path("questions.jsonl");
  {
    std::ofstream out(q);
    int id = 0;
    for (const char* p : {"And God said", "def main():\n    ", "In the beginning"}) {
      out << json{{"question_id", "q" + std::to_string(id++)}, {"category", "x"}, {"turns", {p}}}.dump() << "\n";
    }
  }
  const fs::path f = path("batch.jsonl"), lines = path("batch_out.jsonl");
  const CliRun r = run({"batch", "--model", kTarget, "--method", "eagle3", "--drafter", kModels + "eagle3", "--k", "2",
                        "--prompts", q.string(), "--concurrency", "2", "--max-new-tokens", "12", "--ignore-eos", "--json",
                        "--out", lines.string(), "--events", f.string(), "--live"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json summary = json::parse(r.out);
  std::map<int, std::vector<json>> by_sequence;
  for (const json& e : read_lines(f)) by_sequence[e.at("sequence").get<int>()].push_back(e);
  ASSERT_EQ(by_sequence.size(), 3u);
  std::map<int, json> out_lines;
  for (const json& l : read_lines(lines)) out_lines[l.at("request").get<int>()] = l;
  int steps = 0;
  for (const auto& [seq, events] : by_sequence) {
    EXPECT_EQ(events.front().at("event"), "prefill") << seq;
    EXPECT_EQ(events.back().at("event"), "finish") << seq;
    EXPECT_EQ(events.back().at("tokens").get<int>(), 12) << seq;
    int emitted = 0, n = 0;
    for (const json& s : of_event(events, "step")) {
      EXPECT_EQ(s.at("step").get<int>(), ++n) << seq;
      emitted += s.at("emitted").get<int>();
    }
    steps += n;
    EXPECT_EQ(emitted, 11) << seq;
    if (out_lines.count(seq)) EXPECT_EQ(out_lines[seq].at("output_tokens").size(), 12u);
  }
  EXPECT_EQ(steps, summary.at("sequence_steps").get<int>());
  // --live: the line, with the requests finished, and no escape codes off a terminal.
  EXPECT_NE(r.err.find("\rlive  3/3 requests"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\033'), std::string::npos);
  EXPECT_EQ(r.err.back(), '\n');
}

TEST_F(Monitoring, LiveLineForcedOnAGenerateRun) {
  CliRun r = run(with(kEagle3, {"--policy", "schedule,depths=2/0", "--live"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("\rlive "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("AL "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\033'), std::string::npos) << "no escape codes off a terminal";
  EXPECT_EQ(r.err.back(), '\n');
  r = run(kEagle3);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << "off unless asked for: " << r.err;
}

TEST_F(Monitoring, EventsOnStdoutAheadOfTheReport) {
  const CliRun r = run(with(kEagle3, {"--events", "-"}));
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::vector<json> events;
  while (std::getline(in, line) && !line.empty() && line[0] == '{') events.push_back(json::parse(line));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().at("event"), "prefill");
  EXPECT_EQ(events.back().at("event"), "finish");
  EXPECT_NE(r.out.find("\nstats "), std::string::npos) << "the report follows the events";
}

TEST_F(Monitoring, PathsThatCannotBeWrittenAndStdoutTakenTwiceAreErrors) {
  CliRun r = run(with(kEagle3, {"--events", dir_.string()}));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;

  r = run(with(kEagle3, {"--events", (dir_ / "missing" / "e.jsonl").string()}));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;

  if (::geteuid() != 0) {  // root writes anywhere
    const fs::path ro = path("readonly");
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    r = run(with(kEagle3, {"--events", (ro / "e.jsonl").string()}));
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("cannot open it for writing"), std::string::npos) << r.err;
    fs::permissions(ro, fs::perms::owner_all);
  }

  r = run(with(kEagle3, {"--events", "-", "--json"}));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--events -"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;

  r = run({"batch", "--model", kTarget, "--prompt", "Hi", "--json", "--events", "-"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--events -"), std::string::npos) << r.err;

  r = run({"generate", "--model", kTarget, "--prompt", "Hi", "--stream", "--live"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--live"), std::string::npos) << r.err;
}

// The observers alone, on steps made up here.
struct FakeStep {
  DraftTree tree;
  VerifyResult verify;
  SpeculativeStep step;
};

FakeStep fake_step(int index, int planned, int drafted, int accepted, const std::string& state) {
  FakeStep f;
  for (int n = 0; n < drafted; ++n) {
    f.tree.tokens.push_back(5);
    f.tree.parents.push_back(n - 1);
  }
  for (int n = 0; n < accepted; ++n) f.verify.accepted_nodes.push_back(n);
  f.verify.emitted.assign(static_cast<std::size_t>(accepted + 1), 7);
  f.step.index = index;
  f.step.root_position = 10 + index;
  f.step.planned_depth = planned;
  f.step.emitted = f.verify.emitted;
  f.step.policy_state = state;
  f.step.draft_ns = 1'500'000;
  f.step.verify_ns = 2'250'000;
  return f;
}

void report(DecodeObserver& o, FakeStep f) {
  f.step.tree = &f.tree;
  f.step.verify = &f.verify;
  o.on_speculative_step(f.step);
}

TEST(StepEvents, LinesFromObserverCalls) {
  std::ostringstream out;
  StepEventSink sink(out);
  StepEventObserver o(sink, 7);
  o.on_prefill({1, 2, 3}, 4'000'000);
  o.on_sequential_step({0, 3, nullptr, 0, 9, 4'000'000});
  report(o, fake_step(1, 3, 3, 2, "ema=0.5"));
  o.on_fallback({2, "eagle3", "failed: boom", "plain decoding"});
  report(o, fake_step(2, 0, 0, 0, ""));
  o.on_finish({9, 7, 7, 7, 7}, "max_tokens");
  sink.close();
  const std::vector<json> e = parse_lines(out.str());
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].at("event"), "prefill");
  EXPECT_EQ(e[0].at("prompt_tokens"), 3);
  EXPECT_EQ(e[0].at("ms"), 4.0);
  const json& s1 = e[1];
  EXPECT_EQ(s1.at("sequence"), 7);
  EXPECT_EQ(s1.at("step"), 1);
  EXPECT_EQ(s1.at("position"), 11);
  EXPECT_EQ(s1.at("planned_depth"), 3);
  EXPECT_EQ(s1.at("drafted_depth"), 3);
  EXPECT_EQ(s1.at("drafted"), 3);
  EXPECT_EQ(s1.at("accepted"), 2);
  EXPECT_EQ(s1.at("emitted"), 3);
  EXPECT_EQ(s1.at("policy_state"), "ema=0.5");
  EXPECT_EQ(s1.at("draft_ms"), 1.5);
  EXPECT_EQ(s1.at("verify_ms"), 2.25);
  EXPECT_NEAR(s1.at("running_acceptance").get<double>(), 2.0 / 3.0, 1e-6);
  EXPECT_EQ(s1.at("running_al"), 3.0);
  EXPECT_EQ(s1.at("tokens"), 4);
  EXPECT_EQ(e[2].at("event"), "fallback");
  EXPECT_EQ(e[2].at("drafter"), "eagle3");
  EXPECT_EQ(e[2].at("reason"), "failed: boom");
  EXPECT_EQ(e[2].at("next"), "plain decoding");
  EXPECT_EQ(e[2].at("step"), 2);
  EXPECT_FALSE(e[3].contains("policy_state"));
  EXPECT_EQ(e[3].at("running_al"), 2.0);
  EXPECT_EQ(e[3].at("tokens"), 5);
  EXPECT_EQ(e[4].at("event"), "finish");
  EXPECT_EQ(e[4].at("tokens"), 5);
  EXPECT_EQ(e[4].at("stop_reason"), "max_tokens");
  EXPECT_EQ(e[4].at("al"), 2.0);
  EXPECT_EQ(e[4].at("fallbacks"), 1);
}

TEST(StepEvents, AFailedStreamIsReportedAtTheEnd) {
  std::ostringstream out;
  StepEventSink sink(out);
  StepEventObserver o(sink, 0);
  out.setstate(std::ios::badbit);  // as a full disk leaves a stream
  o.on_prefill({1}, 1);  // does not throw inside the decoding loop
  EXPECT_THROW(sink.close(), Error);
}

TEST(ObserverFanout, ForwardsToEachInOrder) {
  std::ostringstream a, b;
  StepEventSink sa(a), sb(b);
  StepEventObserver oa(sa, 1), ob(sb, 2);
  ObserverFanout none;
  EXPECT_EQ(none.get(), nullptr);
  ObserverFanout one{nullptr, &oa};
  EXPECT_EQ(one.get(), &oa);
  ObserverFanout both{&oa, nullptr, &ob};
  EXPECT_EQ(both.get(), &both);
  both.get()->on_prefill({1, 2}, 0);
  both.get()->on_fallback({1, "d", "r", "plain decoding"});
  EXPECT_EQ(parse_lines(a.str()).size(), 2u);
  EXPECT_EQ(parse_lines(b.str()).size(), 2u);
}

TEST(LiveLine, RedrawsInPlaceWithoutEscapesOffATerminal) {
  std::ostringstream out;
  cli::LiveLine live(out, /*enabled=*/true, /*terminal=*/false, 0, std::chrono::milliseconds(0));
  live.on_prefill({1, 2}, 0);
  live.on_sequential_step({0, 2, nullptr, 0, 9, 0});
  report(live, fake_step(1, 2, 2, 2, "K 2"));
  report(live, fake_step(2, 0, 0, 0, "a much longer policy state than the last one, cut to fit"));
  report(live, fake_step(3, 2, 2, 0, "K 2"));
  live.done();
  live.done();  // once
  const std::string s = out.str();
  EXPECT_EQ(s.find('\033'), std::string::npos);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.front(), '\r');
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 4) << "three updates and the last draw: " << s;
  EXPECT_NE(s.find("K 2  acceptance 1.000  AL 3.00  policy K 2"), std::string::npos) << s;
  EXPECT_NE(s.find("K plain"), std::string::npos) << s;
  EXPECT_NE(s.find("..."), std::string::npos) << "a long state is cut: " << s;
  EXPECT_NE(s.find("acceptance 0.500  AL 1.67"), std::string::npos) << s;
  EXPECT_NE(s.find(" 6 tokens"), std::string::npos) << s;
  // Each update covers the longer line before it.
  std::vector<std::string> draws;
  std::istringstream in(s.substr(1));
  for (std::string d; std::getline(in, d, '\r');) draws.push_back(d);
  for (std::size_t i = 1; i < draws.size(); ++i) {
    const std::size_t previous = draws[i - 1].find_last_not_of(' ') + 1;  // its text, without the padding
    EXPECT_GE(draws[i].size(), previous) << i;
  }
}

TEST(LiveLine, EscapesOnATerminalNothingWhenOffAndAtMostTenPerSecond) {
  std::ostringstream term, off, slow;
  cli::LiveLine t(term, true, true);
  cli::LiveLine o(off, false, true);
  cli::LiveLine sl(slow, true, false, 2);
  for (cli::LiveLine* l : {&t, &o, &sl}) {
    l->on_prefill({1}, 0);
    for (int i = 1; i <= 50; ++i) report(*l, fake_step(i, 1, 1, 1, ""));
    l->on_finish({}, "max_tokens");
    l->done();
  }
  EXPECT_EQ(term.str().rfind("\r\033[Klive ", 0), 0u) << term.str();
  EXPECT_TRUE(off.str().empty());
  // 50 steps in far less than 100 ms: the first draw and the last.
  const std::string s = slow.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 2) << s;
  EXPECT_NE(s.find("1/2 requests"), std::string::npos) << s;
}

}  // namespace
}  // namespace specdec
