// specdec batch on the bundled models: every request's output equals `specdec generate` of its
// prompt (greedy, for every method at concurrency 1 and 3) or decoding it alone with its sequence id
// (coupled sampling); the per-request lines and the JSON summary agree with each other; Poisson
// arrivals come from the seed; bad inputs fail with messages naming what was wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "runtime/batch_job.hpp"
#include "runtime/method_runner.hpp"
#include "tests/cli/cli_runner.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CliRun;
using testing::run;

const std::string kModels = std::string(SPECDEC_SOURCE_DIR) + "/models/";
const std::string kTarget = kModels + "target";

// Short prompts of different lengths, so that requests finish at different steps.
const std::vector<std::string> kPrompts = {"And God said, Let there be", "def main():\n    ", "In the beginning",
                                           "import os\nimport"};

std::vector<json> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

// "q3": the question id of prompt 3 (appended: GCC 12 warns falsely about "q" + std::to_string(i)).
std::string qid(std::size_t i) {
  std::string s = "q";
  s += std::to_string(i);
  return s;
}

// The method's options on the command line (drafters of the bundled layout).
std::vector<std::string> method_args(const std::string& method) {
  std::vector<std::string> a = {"--method", method, "--k", "3"};
  if (method == "eagle") a.insert(a.end(), {"--drafter", kModels + "eagle1"});
  if (method == "draft") a.insert(a.end(), {"--drafter", kModels + "draft"});
  return a;
}

class BatchCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("specdec_batch_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream q(questions());
    for (std::size_t i = 0; i < kPrompts.size(); ++i) {
      q << json{{"question_id", qid(i)}, {"category", i % 2 ? "code" : "prose"}, {"turns", {kPrompts[i]}}}.dump()
        << "\n";
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string questions() { return (dir_ / "questions.jsonl").string(); }

  // specdec batch --json over the questions with `extra` options; the summary and the lines of --out.
  static std::pair<json, std::vector<json>> batch(const std::vector<std::string>& extra) {
    const fs::path out = dir_ / "out.jsonl";
    fs::remove(out);
    std::vector<std::string> args = {"batch", "--model", kTarget, "--prompts", questions(), "--max-new-tokens", "10",
                                     "--ignore-eos", "--json", "--out", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    if (r.code != 0) return {};
    return {json::parse(r.out), read_lines(out)};
  }
  static fs::path dir_;
};
fs::path BatchCommand::dir_;

// Lines come in finishing order; this puts them in request order.
std::vector<json> by_request(std::vector<json> lines) {
  std::sort(lines.begin(), lines.end(), [](const json& a, const json& b) { return a["request"] < b["request"]; });
  return lines;
}

TEST_F(BatchCommand, EveryRequestEqualsGenerateOfItsPrompt) {
  for (const std::string method : {"sequential", "eagle", "draft"}) {
    std::vector<std::vector<int32_t>> alone;
    for (const std::string& p : kPrompts) {
      std::vector<std::string> args = {"generate", "--model", kTarget, "--prompt", p, "--max-new-tokens", "10", "--ignore-eos", "--json"};
      for (const std::string& a : method_args(method)) args.push_back(a);
      const CliRun g = run(args);
      ASSERT_EQ(g.code, 0) << g.err;
      alone.push_back(json::parse(g.out)["output_tokens"].get<std::vector<int32_t>>());
    }
    for (const std::string b : {"1", "3"}) {
      std::vector<std::string> extra = method_args(method);
      extra.insert(extra.end(), {"--concurrency", b});
      const auto [summary, lines] = batch(extra);
      ASSERT_EQ(lines.size(), kPrompts.size()) << method << " B " << b;
      const std::vector<json> ordered = by_request(lines);
      for (std::size_t i = 0; i < ordered.size(); ++i) {
        EXPECT_EQ(ordered[i]["request"], i);
        EXPECT_EQ(ordered[i]["sequence"], i) << "a request's sequence id is its index in the queue";
        EXPECT_EQ(ordered[i]["prompt_id"], qid(i));
        EXPECT_EQ(ordered[i]["output_tokens"].get<std::vector<int32_t>>(), alone[i]) << method << " B " << b << " request " << i;
      }
      EXPECT_EQ(summary["concurrency"], std::stoi(b));
      EXPECT_LE(summary["max_in_flight_seen"].get<int>(), std::stoi(b));
      EXPECT_EQ(summary["method"]["method"], method);
    }
  }
}

TEST_F(BatchCommand, SampledRequestsDecodeAsAloneWithTheirSequenceId) {
  const std::vector<std::string> sampling = {"--sampling", "coupled", "--temperature", "0.8", "--seed", "7"};
  std::vector<std::string> extra = method_args("eagle");
  extra.insert(extra.end(), sampling.begin(), sampling.end());
  extra.insert(extra.end(), {"--concurrency", "3"});
  const auto [summary, lines] = batch(extra);
  const std::vector<json> ordered = by_request(lines);
  ASSERT_EQ(ordered.size(), kPrompts.size());

  // Request 0 has sequence id 0: what `specdec generate` decodes.
  std::vector<std::string> g = {"generate", "--model", kTarget, "--prompt", kPrompts[0], "--max-new-tokens", "10", "--ignore-eos", "--json"};
  const std::vector<std::string> eagle = method_args("eagle");
  g.insert(g.end(), eagle.begin(), eagle.end());
  g.insert(g.end(), sampling.begin(), sampling.end());
  const CliRun r = run(g);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ordered[0]["output_tokens"], json::parse(r.out)["output_tokens"]);

  // Every request: decoding it alone through the library with sequence = its index.
  DecodeArgs a;
  a.model = kTarget;
  a.method.name = "eagle";
  a.method.k = 3;
  a.drafter = kModels + "eagle1";
  a.sampling = "coupled";
  a.temperature = 0.8;
  a.seed = 7;
  const LoadedModel target = load_model(kTarget);
  for (std::size_t i = 0; i < kPrompts.size(); ++i) {
    GenerationOptions o;
    o.max_new_tokens = 10;
    o.stop_at_eos = false;
    o.sequence = static_cast<uint32_t>(i);
    const GenerationResult alone = run_method(a, target, target.tokenizer->encode(kPrompts[i], true), sampling_params(a), o);
    EXPECT_EQ(ordered[i]["output_tokens"].get<std::vector<int32_t>>(), alone.tokens) << "request " << i;
  }
}

TEST_F(BatchCommand, SummaryAgreesWithTheLines) {
  std::vector<std::string> extra = method_args("eagle");
  extra.insert(extra.end(), {"--concurrency", "3", "--requests", "7"});
  const auto [s, lines] = batch(extra);
  ASSERT_EQ(lines.size(), 7u) << "--requests cycles the prompts";
  const std::vector<json> ordered = by_request(lines);
  EXPECT_EQ(ordered[5]["prompt_id"], "q1");
  EXPECT_EQ(ordered[5]["output_tokens"], ordered[1]["output_tokens"]) << "greedy: the same prompt gives the same tokens";
  int64_t tokens = 0, steps = 0;
  for (const json& l : lines) {
    tokens += l["generated_tokens"].get<int64_t>();
    steps += l["steps"].get<int64_t>();
    EXPECT_EQ(l["generated_tokens"], l["output_tokens"].size());
    EXPECT_TRUE(l.contains("output_text"));
    const json& t = l["timing"];
    EXPECT_GE(t["ttft_s"].get<double>(), 0);
    EXPECT_GE(t["queue_s"].get<double>(), 0);
    EXPECT_GE(t["tpot_s"].get<double>(), 0);
    EXPECT_NEAR(t["ttft_s"].get<double>(), t["first_token_s"].get<double>() - l["arrival_s"].get<double>(), 1e-12);
  }
  EXPECT_EQ(s["requests"], 7);
  EXPECT_EQ(s["generated_tokens"], tokens);
  EXPECT_EQ(s["generated_tokens"], 70);
  EXPECT_EQ(s["sequence_steps"], steps);
  const json& t = s["timing"];
  EXPECT_NEAR(t["throughput_tok_s"].get<double>(), tokens / t["wall_s"].get<double>(), 1e-9 * t["throughput_tok_s"].get<double>());
  EXPECT_NEAR(t["throughput_req_s"].get<double>(), 7 / t["wall_s"].get<double>(), 1e-9 * t["throughput_req_s"].get<double>());
  for (const char* k : {"ttft_s", "tpot_s", "queue_s"}) {
    for (const char* q : {"mean", "p50", "p90", "p99"}) EXPECT_TRUE(t[k].contains(q)) << k << " " << q;
    EXPECT_LE(t[k]["p50"].get<double>(), t[k]["p99"].get<double>()) << k;
    EXPECT_EQ(t[k]["n"], 7) << k;
  }
  EXPECT_GE(t["verify_s_per_step"].get<double>(), 0);
  EXPECT_GE(t["draft_s_per_step"].get<double>(), 0);
  // Acceptance pooled over the requests: the histogram holds every step, AL = emitted / steps.
  const std::vector<int64_t> hist = s["accepted_per_step"].get<std::vector<int64_t>>();
  EXPECT_EQ(std::accumulate(hist.begin(), hist.end(), int64_t{0}), steps);
  int64_t accepted = 0;
  for (std::size_t n = 0; n < hist.size(); ++n) accepted += static_cast<int64_t>(n) * hist[n];
  EXPECT_EQ(s["accepted_tokens"], accepted);
  EXPECT_GE(s["acceptance_length"].get<double>(), 1.0);
  EXPECT_EQ(s["acceptance_by_position"].size(), 3u);
  // The batched loop: at most 3 sequences a step, and more than one row each (drafts are verified).
  EXPECT_LE(s["sequences_per_step"].get<double>(), 3.0);
  EXPECT_GT(s["rows_per_step"].get<double>(), s["sequences_per_step"].get<double>());
  EXPECT_GT(s["steps"].get<int64_t>(), 0);
  EXPECT_EQ(s["backend"], "reference");
  EXPECT_EQ(s["stop_reasons"]["max_tokens"], 7);
  EXPECT_TRUE(s["rate"].is_null());
}

TEST_F(BatchCommand, PoissonArrivalsFromTheSeed) {
  const auto [s, lines] = batch({"--requests", "5", "--rate", "2000", "--seed", "3", "--concurrency", "2"});
  ASSERT_EQ(lines.size(), 5u);
  const std::vector<double> expected = poisson_arrivals(5, 2000, 3);
  const std::vector<json> ordered = by_request(lines);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(ordered[i]["arrival_s"].get<double>(), expected[i]);
    EXPECT_GE(ordered[i]["timing"]["admitted_s"].get<double>(), expected[i]);
    if (i > 0) {
      EXPECT_GT(expected[i], expected[i - 1]);
    }
  }
  EXPECT_EQ(s["rate"], 2000.0);
  // Another seed, other arrivals; the gaps average 1 / rate.
  const std::vector<double> many = poisson_arrivals(20000, 4.0, 1);
  EXPECT_NE(poisson_arrivals(5, 2000, 4), expected);
  EXPECT_NEAR(many.back() / 20000, 0.25, 0.01);
}

TEST_F(BatchCommand, TextSummaryAndDefaultPrompts) {
  // The bundled held-out prompts by default (one of each category here, to stay quick).
  const CliRun r = run({"batch", "--model", kTarget, "--per-category", "1", "--max-new-tokens", "4", "--concurrency", "2",
                        "--method", "eagle", "--drafter", kModels + "eagle1"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"requests   2 from 2 prompts (heldout)", "TTFT", "TPOT", "queue", "tok/s", "AL ", "accepted per step",
                        "batched target forwards"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  EXPECT_TRUE(r.err.empty()) << "no progress off a terminal: " << r.err;
  // One prompt given inline, sent three times.
  const CliRun one = run({"batch", "--model", kTarget, "--prompt", "In the", "--requests", "3", "--max-new-tokens", "3", "--json"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out)["generated_tokens"], 9);
  const CliRun h = run({"batch", "--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--concurrency"), std::string::npos);
}

TEST_F(BatchCommand, BadInputsNameTheProblem) {
  const auto fails = [&](std::vector<std::string> extra, const std::string& message) {
    std::vector<std::string> args = {"batch", "--model", kTarget, "--max-new-tokens", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 1) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << "expected '" << message << "' in: " << r.err;
  };
  fails({"--prompts", questions(), "--concurrency", "0"}, "--concurrency must be in [1, 4096]");
  fails({"--prompts", questions(), "--concurrency", "100000"}, "--concurrency must be in [1, 4096]");
  fails({"--prompts", questions(), "--rate", "0"}, "--rate must be a number of requests per second > 0");
  fails({"--prompts", questions(), "--rate", "-2"}, "--rate must be a number of requests per second > 0");
  fails({"--prompts", questions(), "--rate", "fast"}, "--rate: 'fast' is not a number");
  fails({"--prompts", questions(), "--requests", "0"}, "--requests must be in [1,");
  fails({"--prompts", questions(), "--requests", "2.5"}, "--requests: '2.5' is not a whole number");
  fails({"--prompts", (dir_ / "missing.jsonl").string()}, "cannot open question file '" + (dir_ / "missing.jsonl").string() + "': No such file");
  const fs::path bad = dir_ / "bad.jsonl";
  std::ofstream(bad) << R"({"question_id": 1, "turns": ["fine"]})" "\n" R"({"question_id": 2, "turns": [)" "\n";
  fails({"--prompts", bad.string()}, "bad.jsonl:2: not a JSON object");
  fails({"--prompt-set", "mtbench"}, "--prompt-set: the bundled sets are 'heldout', 'context'");
  fails({"--prompts", questions(), "--prompt", "Hi"}, "give the prompts one way");
  fails({"--prompts", questions(), "--out", (dir_ / "no" / "such" / "dir.jsonl").string()}, "does not exist");
  fails({"--prompts", questions(), "--out", dir_.string()}, "is not a regular file");
  fails({"--prompts", questions(), "--method", "eagle"}, "--method eagle needs --drafter");
  fails({"--prompts", questions(), "--sampling", "sample", "--temperature", "0"}, "temperature");
  // A failed run leaves no output file behind.
  const fs::path out = dir_ / "failed.jsonl";
  fails({"--prompts", questions(), "--out", out.string(), "--method", "eagle", "--drafter", kModels + "draft"}, "");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace specdec
