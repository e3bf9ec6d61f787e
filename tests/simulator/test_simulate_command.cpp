// specdec simulate: the command's modes end to end, through run_simulate.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "simulator/engine_spec.hpp"
#include "simulator/hardware_spec.hpp"
#include "simulator/spec_json.hpp"
#include "test_util.hpp"

namespace specdec::cli {
namespace {

struct CommandRun {
  int code = 0;
  std::string out, err;
};

CommandRun simulate(std::vector<std::string> args) {
  std::ostringstream out, err;
  CommandIO io{out, err};
  CommandRun r;
  r.code = run_simulate(args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(SimulateCommand, HelpAndTable) {
  EXPECT_NE(simulate({"--help"}).out.find("usage: specdec simulate"), std::string::npos);
  const CommandRun r = simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--k",
                          "4", "--alpha", "0.8", "--breakdown"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("TPOT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("speedup"), std::string::npos);
  EXPECT_NE(r.out.find("draft lm_head"), std::string::npos) << "per-operator breakdown: " << r.out;
  EXPECT_NE(r.out.find("verify attention"), std::string::npos);
}

TEST(SimulateCommand, JsonBestKAndCapacity) {
  const CommandRun r = simulate({"--model", "llama-2-70b", "--hardware", "trn1-32xlarge", "--tp", "32", "--drafter",
                          "draft-llama-2-7b", "--alpha", "0.75", "--best-k", "8", "--json", "--capacity-rate", "2",
                          "--tpot-target-ms", "50"});
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["by_k"].size(), 8u);
  const int best = j["best_k"];
  for (const auto& row : j["by_k"]) EXPECT_GE(row["tpot_ms"].get<double>(), j["prediction"]["tpot_ms"].get<double>() - 1e-12);
  EXPECT_EQ(j["prediction"]["k"], best);
  EXPECT_TRUE(j["capacity"]["feasible"].get<bool>());
  EXPECT_EQ(j["capacity"]["devices"].get<int>() % 32, 0);
  EXPECT_GT(j["capacity"]["cost_per_million_output_tokens_usd"].get<double>(), 0);
}

// The planning question a new user asks: Llama-3.1-70B with EAGLE-3 at 20 requests/s and TPOT <= 30 ms
// on H200. Every replica prefills its share of the 20 prompts/s of 1024 tokens inside its decode
// steps (vllm interleaves prefill): 71 ms each at TP 4, so one TP-4 replica cannot keep up, and 120
// ms each at TP 2. Searching TP × K × batch with every replica at utilisation <= 0.85 (the default)
// finds ten devices, five TP-2 replicas with a K-3 chain at batch 32, each spending 47% of its time
// on prompts; sequential decoding needs twelve (three TP-4 replicas). Allowed 0.96 the devices are
// the same: four replicas would each run at rho 0.9603.
TEST(SimulateCommand, CapacityPlannerFindsTheCheaperTensorParallelDegree) {
  const std::vector<std::string> question = {"--model", "llama-3.1-70b", "--hardware", "h200", "--drafter", "eagle3-llama3.3-70b",
                                             "--alpha", "0.75", "--prompt-len", "1024", "--output-len", "256",
                                             "--capacity-rate", "20", "--tpot-target-ms", "30"};
  std::vector<std::string> args = question;
  args.push_back("--json");
  const CommandRun r = simulate(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j["capacity"];
  EXPECT_EQ(c["tp"], 2) << c.dump();
  EXPECT_EQ(c["replicas"], 5) << c.dump();
  EXPECT_EQ(c["devices"], 10) << c.dump();
  EXPECT_EQ(c["k"], 3) << c.dump();
  EXPECT_EQ(c["batch"], 32) << c.dump();
  EXPECT_LE(c["tpot_ms"].get<double>(), 30.0);
  EXPECT_LE(c["utilization"].get<double>(), 0.85) << c.dump();
  for (const char* field : {"service_s", "service_scv", "p_wait", "queue_wait_ms", "ttft_with_wait_ms", "percentile",
                            "queue_wait_at_percentile_ms", "ttft_at_percentile_ms", "tpot_at_mean_occupancy_ms", "mean_occupancy",
                            "decode_tpot_ms", "step_ms", "decode_step_ms", "prefill_ms_per_prompt", "prefill_share", "prompts_per_step",
                            "prefill_tokens_per_step"})
    EXPECT_TRUE(c.contains(field) && c[field].is_number()) << field << " not in " << c.dump();
  EXPECT_EQ(c["percentile"], 99.0);
  EXPECT_NEAR(c["ttft_with_wait_ms"].get<double>(), c["ttft_ms"].get<double>() + c["queue_wait_ms"].get<double>(), 1e-9);
  // TPOT under load: the decode step stretched by the prompts, checked at the full batch; the mean
  // occupancy decodes faster.
  EXPECT_NEAR(c["decode_tpot_ms"].get<double>(), 9.58, 0.01) << c.dump();
  EXPECT_NEAR(c["tpot_ms"].get<double>(), 17.12, 0.01) << c.dump();
  EXPECT_NEAR(c["prefill_share"].get<double>(), 0.440, 0.001) << c.dump();
  EXPECT_NEAR(c["tpot_ms"].get<double>(), c["decode_tpot_ms"].get<double>() / (1 - c["prefill_share"].get<double>()), 1e-9);
  EXPECT_NEAR(c["step_ms"].get<double>(), c["decode_step_ms"].get<double>() / (1 - c["prefill_share"].get<double>()), 1e-9);
  EXPECT_NEAR(c["prefill_tokens_per_step"].get<double>(), c["prompts_per_step"].get<double>() * 1024, 1e-9);
  EXPECT_LT(c["tpot_at_mean_occupancy_ms"].get<double>(), c["tpot_ms"].get<double>());
  EXPECT_LT(c["mean_occupancy"].get<double>(), 32.0);
  EXPECT_NEAR(c["mean_occupancy"].get<double>(), 4.0 * 256 * c["tpot_at_mean_occupancy_ms"].get<double>() * 1e-3, 1e-9) << "Little's law";
  EXPECT_EQ(c["replicas_set_by"], nlohmann::json::parse(R"(["max_utilization"])")) << c.dump();
  EXPECT_EQ(j["capacity_sequential"]["devices"], 12) << j["capacity_sequential"].dump();
  EXPECT_EQ(j["capacity_sequential"]["tp"], 4) << j["capacity_sequential"].dump();
  EXPECT_TRUE(j["capacity_sequential"].contains("utilization")) << j["capacity_sequential"].dump();
  EXPECT_EQ(j["capacity_search"]["tp"], nlohmann::json::parse("[1, 2, 4, 8]"));
  EXPECT_EQ(j["capacity_search"]["configs"].size(), 32u) << "4 TPs x K 1..8";
  EXPECT_EQ(j["capacity_search"]["max_utilization"], 0.85);
  EXPECT_EQ(j["capacity_search"]["output_len_cv"], 0.0);
  EXPECT_EQ(j["capacity_search"]["ttft_checked_at"], "mean");
  EXPECT_EQ(j["capacity_search"]["tpot_checked_at"], "full_batch");
  EXPECT_EQ(j["capacity_search"]["prefill"], "interleaved");
  EXPECT_NE(j["capacity_queueing"].get<std::string>().find("G/G/c"), std::string::npos) << j["capacity_queueing"];
  EXPECT_NE(j["capacity_queueing"].get<std::string>().find("TPOT target is checked at the full batch"), std::string::npos)
      << j["capacity_queueing"];
  ASSERT_TRUE(j["error_band"].is_object());
  EXPECT_GT(j["error_band"]["results"].get<int>(), 50);
  EXPECT_GT(j["error_band"]["mean_abs_relative_error"].get<double>(), 0.0);

  const CommandRun text = simulate(question);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* line : {"cheapest: EAGLE-3", "utilisation <= 0.85",
                           "EAGLE-3 needs 10 devices where sequential decoding needs 12 devices: 2 fewer (17%)",
                           "queueing per replica (M/G/c: Poisson arrivals, c = batch slots; every output 256 tokens, C_s^2 = 0)",
                           "P(wait)", "p99 wait", "TTFT+wait", "p99 TTFT", "does not fit in memory", "prediction error: on ",
                           "queueing: each replica a G/G/c queue",
                           "TPOT under load per replica (ms; the TPOT target is checked at the full batch;\n"
                           "   vllm interleaves each prompt's prefill into the decode steps):",
                           "TPOT alone", "mean batch", "TPOT mean",
                           "EAGLE-3: 5 replicas; 4 would break: utilisation beyond 0.85",
                           "sequential decoding: 3 replicas; 2 would break: TPOT with the prompts' prefill beyond 30 ms; utilisation "
                           "beyond 0.85"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << " not in:\n" << text.out;
  EXPECT_EQ(text.out.find("not modelled"), std::string::npos) << text.out;

  // Allowed utilisation 0.96: four TP-2 replicas each carry 5 requests/s, whose prompts take 55% of
  // the replica, at rho 0.88 (batch 32, K 3): eight devices.
  args = question;
  for (const char* a : {"--max-utilization", "0.96", "--json"}) args.push_back(a);
  const auto loose = nlohmann::json::parse(simulate(args).out);
  EXPECT_EQ(loose["capacity"]["tp"], 2) << loose["capacity"].dump();
  EXPECT_EQ(loose["capacity"]["devices"], 8) << loose["capacity"].dump();
  EXPECT_EQ(loose["capacity"]["batch"], 32) << loose["capacity"].dump();
  EXPECT_EQ(loose["capacity"]["k"], 3) << loose["capacity"].dump();
  EXPECT_NEAR(loose["capacity"]["utilization"].get<double>(), 0.883, 0.001) << loose["capacity"].dump();
  EXPECT_EQ(loose["capacity_sequential"]["devices"], 12) << loose["capacity_sequential"].dump();

  // SGLang prefills between decode steps: said in the JSON and the text.
  args = question;
  for (const char* a : {"--engine", "sglang", "--json"}) args.push_back(a);
  const auto sglang = nlohmann::json::parse(simulate(args).out);
  EXPECT_EQ(sglang["capacity_search"]["prefill"], "separate");
  EXPECT_GT(sglang["capacity"]["prefill_ms_per_prompt"].get<double>(), 0.0);
  args.pop_back();
  EXPECT_NE(simulate(args).out.find("sglang runs each prompt's prefill between the decode steps, stalling them"), std::string::npos);

  // One TP and one K, as given: the search keeps to them.
  args = question;
  for (const char* a : {"--tp", "8", "--k", "4", "--json"}) args.push_back(a);
  const auto one = nlohmann::json::parse(simulate(args).out);
  EXPECT_EQ(one["capacity"]["devices"], 16) << "two TP-8 replicas";
  EXPECT_EQ(one["capacity_search"]["configs"].size(), 1u);
  // --best-k: the Ks searched jointly with the batch.
  args = question;
  for (const char* a : {"--tp", "2,4", "--best-k", "3", "--json"}) args.push_back(a);
  const auto best = nlohmann::json::parse(simulate(args).out);
  EXPECT_EQ(best["capacity_search"]["k"], nlohmann::json::parse("[1, 2, 3]"));
  EXPECT_EQ(best["capacity_search"]["configs"].size(), 6u);
}

// A drafter spec's published acceptance is used when no acceptance is given, and the printout says
// whose numbers they are; a tree AL on a chain-only engine says what to do; a head without one
// still asks for an acceptance model.
TEST(SimulateCommand, PublishedAcceptanceWhenNoneIsGiven) {
  const CommandRun chain = simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b",
                                     "--k", "3", "--json"});
  const auto j = nlohmann::json::parse(chain.out);
  EXPECT_DOUBLE_EQ(j["prediction"]["acceptance_length"].get<double>(), 2.79) << "vLLM issue 20780's AL at K = 3";
  EXPECT_EQ(j["scenario"]["category"], "vllm-issue-20780");
  EXPECT_EQ(j["scenario"]["category_default"], true);
  EXPECT_NE(j["scenario"]["acceptance"].get<std::string>().find("the drafter spec's default"), std::string::npos) << j.dump();
  // The same numbers as giving the category by name, or the table by hand.
  const auto named = nlohmann::json::parse(simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                                                     "eagle3-llama3.1-8b", "--k", "3", "--category", "vllm-issue-20780", "--json"}).out);
  const auto by_hand = nlohmann::json::parse(simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                                                       "eagle3-llama3.1-8b", "--k", "3", "--acceptance-table", "3:2.79", "--json"}).out);
  EXPECT_EQ(named["prediction"]["tpot_ms"], j["prediction"]["tpot_ms"]);
  EXPECT_EQ(by_hand["prediction"]["tpot_ms"], j["prediction"]["tpot_ms"]);
  // EAGLE-1 heads: the paper's MT-bench AL on its tree, on an engine that verifies trees.
  const auto tree = nlohmann::json::parse(simulate({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "hf-eager",
                                                    "--drafter", "eagle1-vicuna-7b", "--json"}).out);
  EXPECT_DOUBLE_EQ(tree["prediction"]["acceptance_length"].get<double>(), 3.94);
  EXPECT_EQ(tree["prediction"]["tree_nodes"], 25);
  auto err = [](std::vector<std::string> a) { return sim::test::error_of([&] { simulate(a); }); };
  const std::string chain_only = err({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--drafter", "eagle1-vicuna-7b"});
  EXPECT_NE(chain_only.find("is an AL measured on tree 'mc_sim_7b_63', and engine 'vllm' verifies chains only"), std::string::npos)
      << chain_only;
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--k", "8"})
                .find("has no AL for K = 8"),
            std::string::npos);
  // EAGLE-3 heads: the paper's MT-bench AL on its dynamic tree, on an engine that verifies trees.
  const std::vector<std::string> head70 = {"--model", "llama-3.1-70b", "--hardware", "h200", "--tp", "2", "--drafter",
                                           "eagle3-llama3.3-70b"};
  EXPECT_NE(err(head70).find("is an AL measured on dynamic tree 60/7/10, and engine 'vllm' verifies chains only"), std::string::npos)
      << err(head70);
  auto on_sglang = head70;
  on_sglang.insert(on_sglang.end(), {"--engine", "sglang", "--json"});
  const auto dynamic = nlohmann::json::parse(simulate(on_sglang).out);
  EXPECT_DOUBLE_EQ(dynamic["prediction"]["acceptance_length"].get<double>(), 5.63) << "EAGLE-3 Table 1, L33 70B, MT-bench";
  EXPECT_EQ(dynamic["scenario"]["category"], "eagle3-paper-mt-bench");
  EXPECT_NE(dynamic["scenario"]["acceptance"].get<std::string>().find("measured on dynamic tree 60/7/10"), std::string::npos)
      << dynamic.dump();
  auto other_tree = head70;
  other_tree.insert(other_tree.end(), {"--engine", "sglang", "--dynamic-tree", "30,5,5"});
  EXPECT_NE(err(other_tree).find("leave the tree out or give exactly it (--dynamic-tree 60,7,10)"), std::string::npos)
      << err(other_tree);
  // A head without published acceptance still asks for an acceptance model.
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "peagle-llama3.1-8b"})
                .find("speculative decoding needs an acceptance model"),
            std::string::npos);
  // Given acceptance wins; the default is not mixed in.
  const auto given = nlohmann::json::parse(simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                                                     "eagle3-llama3.1-8b", "--k", "3", "--alpha", "0.5", "--json"}).out);
  EXPECT_DOUBLE_EQ(given["prediction"]["acceptance_length"].get<double>(), 1.875);
  EXPECT_FALSE(given["scenario"].contains("category"));
}

// DeepSeek-V3 (multi-head latent attention, FP8) with its MTP module on eight H200s runs with the
// module's published acceptance and no other option: --k is not given, so the K the report's
// acceptance answers (1), said so. Its config.json given as --model is priced the same way.
TEST(SimulateCommand, DeepSeekV3WithItsMtpModuleUsesThePublishedAcceptance) {
  const std::vector<std::string> args = {"--model", "deepseek-v3", "--drafter", "mtp-deepseek-v3", "--hardware", "h200", "--tp", "8"};
  const CommandRun text = simulate(args);
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("method mtp with mtp-deepseek-v3, K = 1, acceptance: category 'deepseek-v3-report'"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("--k was not given, and the acceptance answers K <= 1 only"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(fits)"), std::string::npos) << "DeepSeek-V3 in FP8 fits eight H200s: " << text.out;
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const auto j = nlohmann::json::parse(simulate(json_args).out);
  EXPECT_EQ(j["prediction"]["k"], 1);
  EXPECT_DOUBLE_EQ(j["prediction"]["acceptance_length"].get<double>(), 1.875) << "1 + 0.875, the report's 85-90%";
  EXPECT_EQ(j["scenario"]["category"], "deepseek-v3-report");
  EXPECT_EQ(j["scenario"]["category_default"], true);
  EXPECT_GT(j["prediction"]["speedup"].get<double>(), 1.0);
  // An explicit K the acceptance does not answer is still an error, not silently changed.
  std::vector<std::string> k4 = args;
  k4.insert(k4.end(), {"--k", "4"});
  EXPECT_NE(sim::test::error_of([&] { simulate(k4); }).find("has no AL for K = 4"), std::string::npos);
  // The same model as a bare config.json (no name or source): priced, not refused.
  sim::test::TempDir dir;
  nlohmann::json config = sim::read_json_file(sim::test::source_dir() / "simulator/specs/models/deepseek-v3.json");
  config.erase("name");
  config.erase("source");
  std::filesystem::create_directories(dir.path() / "DeepSeek-V3");
  std::ofstream(dir.path() / "DeepSeek-V3" / "config.json") << config.dump(2);
  json_args[1] = (dir.path() / "DeepSeek-V3" / "config.json").string();
  const CommandRun file = simulate(json_args);
  ASSERT_EQ(file.code, 0) << file.err;
  const auto f = nlohmann::json::parse(file.out);
  EXPECT_EQ(f["prediction"]["tpot_ms"], j["prediction"]["tpot_ms"]) << "a config.json prices as the bundled spec";
}

// Acceptance in an engine's benchmark form: --synthetic-al as vLLM's synthetic_acceptance_length,
// vLLM's synthetic_acceptance_rates as --acceptance-by-depth; the two agree.
TEST(SimulateCommand, SyntheticAcceptanceInTheEnginesForm) {
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--k", "7",
                                  "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return nlohmann::json::parse(simulate(a).out);
  };
  const auto synthetic = run({"--synthetic-al", "3.78"});
  const auto rates = run({"--acceptance-by-depth", "1,1,0.78,0,0,0,0"});
  EXPECT_NEAR(synthetic["prediction"]["acceptance_length"].get<double>(), 3.78, 1e-12);
  EXPECT_NEAR(synthetic["prediction"]["tpot_ms"].get<double>(), rates["prediction"]["tpot_ms"].get<double>(), 1e-9);
  EXPECT_NE(synthetic["scenario"]["acceptance"].get<std::string>().find("synthetic_acceptance_length"), std::string::npos);
  auto err = [](std::vector<std::string> a) { return sim::test::error_of([&] { simulate(a); }); };
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--k", "2",
                 "--synthetic-al", "3.78"})
                .find("has no AL for"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--synthetic-al", "3",
                 "--alpha", "0.7"})
                .find("give one acceptance model"),
            std::string::npos);
}

// On a mixture-of-experts model the planner searches every layout of each TP (attention DP, EP):
// DeepSeek-V3 with MTP under a reasoning load is planned on three replicas of attention DP 8 x EP 8
// (24 devices) where plain TP 8 needs seven (56); the table and the JSON say each row's layout, the
// search's cost is printed, --dp-attention and --ep restrict it, and a layout that cannot run is
// listed with its reason once.
TEST(SimulateCommand, CapacityPlannerSearchesLayouts) {
  const std::vector<std::string> question = {"--model", "deepseek-v3", "--hardware", "h200", "--drafter", "mtp-deepseek-v3",
                                             "--alpha", "0.8", "--prompt-len", "1024", "--output-len", "4096", "--tp", "8",
                                             "--capacity-rate", "10", "--tpot-target-ms", "50"};
  std::vector<std::string> args = question;
  args.push_back("--json");
  const CommandRun r = simulate(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j["capacity"];
  EXPECT_EQ(c["tp"], 8) << c.dump();
  EXPECT_EQ(c["dp_attention"], 8) << c.dump();
  EXPECT_EQ(c["ep"], 8) << c.dump();
  EXPECT_EQ(c["layout"], "8 devices: attention DP 8 x TP 1, experts EP 8");
  EXPECT_EQ(c["k"], 3) << c.dump();
  EXPECT_EQ(c["batch"], 512) << c.dump();
  EXPECT_EQ(c["devices"], 24) << c.dump();
  EXPECT_EQ(j["capacity_sequential"]["dp_attention"], 8) << j["capacity_sequential"].dump();
  EXPECT_EQ(j["capacity_sequential"]["devices"], 32) << j["capacity_sequential"].dump();
  EXPECT_EQ(j["capacity_search"]["layouts"].size(), 8u) << j["capacity_search"]["layouts"].dump();
  EXPECT_EQ(j["capacity_search"]["configurations"], 72) << "8 layouts x (K 1..8 + sequential)";
  EXPECT_EQ(j["capacity_search"]["configs"].size(), 64u);
  EXPECT_EQ(j["capacity_search"]["sequential"].size(), 8u);
  for (const auto& config : j["capacity_search"]["configs"])
    EXPECT_TRUE(config.contains("dp_attention") && config.contains("ep") && config.contains("layout")) << config.dump();

  const CommandRun text = simulate(question);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* line : {"  layouts (8): TP 8 with attention DP 1, 2, 4, 8 and EP 1, 8\n",
                           "  cost: 72 configurations planned (64 + 8 sequential), ",
                           "                          TP  DP  EP   K  batch   TPOT ms  replicas  devices",
                           "  cheapest: MTP            8   8   8   3    512 ",
                           "  per layout (the cheapest K and batch of each):\n  TP   DP  EP  MTP",
                           "  8    1   1   K 6, batch 128: 48 devices (14.9 ms)",
                           "  8    8   8   K 3, batch 512: 24 devices (22.2 ms)"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << " not in:\n" << text.out;

  // Restricted to plain TP: the answer before layouts were searched, and the plain table.
  args = question;
  for (const char* a : {"--dp-attention", "1", "--ep", "1"}) args.push_back(a);
  const CommandRun plain = simulate(args);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("  cheapest: MTP            8   6    128 "), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("  per TP (the cheapest K and batch of each):"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("layouts ("), std::string::npos) << plain.out;
  args.push_back("--json");
  EXPECT_EQ(nlohmann::json::parse(simulate(args).out)["capacity"]["devices"], 48);
  args = question;
  for (const char* a : {"--dp-attention", "1,3"}) args.push_back(a);
  EXPECT_NE(sim::test::error_of([&] { simulate(args); }).find("--dp-attention 3 fits none of the tensor-parallel degrees searched (--tp 8)"),
            std::string::npos);

  // A layout that cannot run, said once with the configurations it holds for: 12 query heads (TP 8
  // does not split them) and 60 experts (EP 8 does not divide them).
  sim::test::TempDir dir;
  nlohmann::json config = sim::read_json_file(sim::test::source_dir() / "simulator/specs/models/qwen3-30b-a3b.json");
  config["name"] = "qwen3-12-heads-60-experts";
  config["num_attention_heads"] = 12;
  config["num_experts"] = 60;
  std::ofstream(dir.path() / "model.json") << config.dump(2);
  const CommandRun odd = simulate({"--model", (dir.path() / "model.json").string(), "--hardware", "h100-sxm", "--drafter",
                                   "eagle3-qwen3-30b-a3b", "--alpha", "0.7", "--best-k", "2", "--tp", "4,8", "--capacity-rate",
                                   "5", "--tpot-target-ms", "50"});
  ASSERT_EQ(odd.code, 0) << odd.err;
  for (const char* line : {"  not planned: TP 8, Ks 1, 2 and sequential decoding: tensor-parallel degree 8 does not split model",
                           "  not planned: TP 8, DP 2, EP 8, Ks 1, 2 and sequential decoding: --ep 8 does not divide the 60 "
                           "routed experts"})
    EXPECT_NE(odd.out.find(line), std::string::npos) << line << " not in:\n" << odd.out;
  EXPECT_NE(odd.out.find("  8    2   1   K 2, batch "), std::string::npos) << "attention TP 4 splits the heads:\n" << odd.out;
}

// --drafter A,B with capacity planning compares the methods: one line per drafter, the cheapest
// starred and planned in full; --json gives capacity_by_drafter. Outside capacity planning (and
// --sweep) a list is an error.
TEST(SimulateCommand, CapacityPlannerComparesDrafters) {
  const std::vector<std::string> args = {"--model", "llama-3.1-70b", "--hardware", "h200", "--drafter",
                                         "eagle3-llama3.3-70b,draft-llama-3.2-1b", "--alpha", "0.75", "--prompt-len", "1024",
                                         "--output-len", "256", "--capacity-rate", "20", "--tpot-target-ms", "30"};
  const CommandRun text = simulate(args);
  EXPECT_NE(text.out.find("methods compared"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("* eagle3-llama3.3-70b"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  draft-llama-3.2-1b"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cheapest: eagle3-llama3.3-70b (* above); its plan:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("note: one acceptance model was given for drafters of different methods"), std::string::npos) << text.out;
  auto json_args = args;
  json_args.push_back("--json");
  const auto j = nlohmann::json::parse(simulate(json_args).out);
  ASSERT_EQ(j["capacity_by_drafter"].size(), 2u) << j.dump();
  EXPECT_EQ(j["capacity_best_drafter"], "eagle3-llama3.3-70b");
  EXPECT_EQ(j["capacity"]["devices"], j["capacity_by_drafter"][0]["capacity"]["devices"]);
  auto err = [](std::vector<std::string> a) { return sim::test::error_of([&] { simulate(a); }); };
  EXPECT_NE(err({"--model", "llama-3.1-70b", "--hardware", "h200", "--drafter", "eagle3-llama3.3-70b,draft-llama-3.2-1b",
                 "--alpha", "0.75"})
                .find("--drafter takes one drafter here; a list is for capacity planning"),
            std::string::npos);
}

// --best-tree with capacity planning searches the trees under the load (capacity_search.trees), the
// answer naming its tree.
TEST(SimulateCommand, CapacityPlannerSearchesTrees) {
  const std::vector<std::string> args = {"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang",
                                         "--drafter", "eagle1-vicuna-7b", "--alpha", "0.7", "--best-tree", "16,32/4-5/4,8",
                                         "--capacity-rate", "5", "--tpot-target-ms", "40"};
  const CommandRun text = simulate(args);
  EXPECT_NE(text.out.find("x trees 16/4/4, 16/4/8, 16/5/4, 16/5/8, 32/4/4, 32/4/8, 32/5/4, 32/5/8 (total tokens/depth/top-k)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(its tree: "), std::string::npos) << text.out;
  auto json_args = args;
  json_args.push_back("--json");
  const auto j = nlohmann::json::parse(simulate(json_args).out);
  EXPECT_EQ(j["capacity_search"]["trees"].size(), 8u);
  EXPECT_TRUE(j["capacity"].contains("tree")) << j["capacity"].dump();
  EXPECT_EQ(j["capacity_search"]["configs"].size(), 8u * 4u) << "8 trees x TP 1, 2, 4, 8";
}

TEST(SimulateCommand, CapacityPlannerErrorsNameTheOption) {
  auto err = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate", "3", "--tpot-target-ms", "40"};
    a.insert(a.end(), extra.begin(), extra.end());
    try {
      simulate(a);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err({"--tp", "16"}).find("--tp 16 exceeds the 8 devices of one h100-sxm instance"), std::string::npos);
  EXPECT_NE(err({"--tp", "0"}).find("must be >= 1"), std::string::npos);
  EXPECT_NE(err({"--tp", "two"}).find("--tp: 'two' is not a number"), std::string::npos);
}

// The queueing options: each bad value names its option and the range; given outside capacity
// planning they say so; good values reach the plan.
TEST(SimulateCommand, CapacityQueueingOptions) {
  const std::vector<std::string> base = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate", "3", "--tpot-target-ms", "40"};
  auto err = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return sim::test::error_of([&] { simulate(a); });
  };
  for (const char* bad : {"1", "0", "-0.5", "1.2", "nan", "inf"})
    EXPECT_NE(err({"--max-utilization", bad}).find("--max-utilization: must be a number > 0 and < 1"), std::string::npos) << bad;
  for (const char* bad : {"-1", "nan", "5", "1e9", "inf"})
    EXPECT_NE(err({"--output-len-cv", bad}).find("--output-len-cv: the coefficient of variation of output lengths must be a number in [0, 4]"),
              std::string::npos)
        << bad;
  for (const char* bad : {"0", "100", "-3", "nan"})
    EXPECT_NE(err({"--ttft-percentile", bad}).find("--ttft-percentile: must be a number between 0 and 100 (exclusive)"), std::string::npos)
        << bad;
  EXPECT_NE(err({"--max-utilization", "0.9x"}).find("max-utilization"), std::string::npos) << "not a number";
  for (const char* option : {"--max-utilization", "--output-len-cv", "--ttft-percentile"}) {
    const std::string e = sim::test::error_of([&] { simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", option, "0.5"}); });
    EXPECT_NE(e.find(std::string(option) + " is a capacity planning option: give --capacity-rate and --tpot-target-ms too"),
              std::string::npos)
        << option << ": " << e;
  }
  // Good values: the TTFT target checked at the 95th percentile, lengths as variable as exponential ones.
  std::vector<std::string> good = base;
  for (const char* a : {"--ttft-target-ms", "500", "--ttft-percentile", "95", "--output-len-cv", "1", "--max-utilization", "0.7"})
    good.push_back(a);
  const CommandRun text = simulate(good);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* line : {"p95 TTFT + queueing wait <= 500 ms, utilisation <= 0.7", "output length cv 1)", "p95 wait", "p95 TTFT"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << " not in:\n" << text.out;
  good.push_back("--json");
  const auto j = nlohmann::json::parse(simulate(good).out);
  EXPECT_EQ(j["capacity_search"]["ttft_checked_at"], 95.0);
  EXPECT_EQ(j["capacity_search"]["max_utilization"], 0.7);
  EXPECT_EQ(j["capacity"]["percentile"], 95.0);
  EXPECT_LE(j["capacity"]["ttft_at_percentile_ms"].get<double>(), 500.0) << j["capacity"].dump();
  EXPECT_LE(j["capacity"]["utilization"].get<double>(), 0.7) << j["capacity"].dump();
  EXPECT_GT(j["capacity"]["service_scv"].get<double>(), 0.0) << j["capacity"].dump();
}

TEST(SimulateCommand, TreesAndAcceptanceOptions) {
  auto tpot = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang", "--drafter", "eagle1-vicuna-7b", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return nlohmann::json::parse(simulate(a).out)["prediction"];
  };
  const auto tree = tpot({"--tree", "mc_sim_7b_63", "--tree-acceptance", "[[0.7,0.2,0.1,0.1],[0.7,0.2,0.1],[0.7,0.2,0.1],[0.7,0.2],[0.7,0.2]]"});
  EXPECT_EQ(tree["tree_nodes"], 25);
  const auto dyn = tpot({"--dynamic-tree", "26,5,4", "--tree-acceptance", "[[0.7,0.2,0.1,0.1],[0.7,0.2,0.1],[0.7,0.2,0.1],[0.7,0.2],[0.7,0.2]]"});
  EXPECT_GE(dyn["acceptance_length"].get<double>(), tree["acceptance_length"].get<double>() - 1e-12);
  const auto vec = tpot({"--k", "3", "--acceptance", "0.9,0.8,0.7"});
  EXPECT_NEAR(vec["acceptance_length"].get<double>(), 1 + 0.9 + 0.72 + 0.504, 1e-12);
  const auto table = tpot({"--k", "3", "--acceptance-table", "3:2.5"});
  EXPECT_DOUBLE_EQ(table["acceptance_length"].get<double>(), 2.5);
}

TEST(SimulateCommand, UserErrors) {
  using test = std::vector<std::string>;
  auto err = [](test args) { return sim::test::error_of([&] { simulate(args); }); };
  EXPECT_NE(err({"--hardware", "h100-sxm"}).find("--model is required"), std::string::npos);
  EXPECT_NE(err({"--model", "llama-9b", "--hardware", "h100-sxm"}).find("unknown models spec 'llama-9b'"), std::string::npos);
  // A mistyped spec name is named with the closest one.
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100sxm"}).find("; did you mean h100-sxm?"), std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--method", "eagle3", "--drafter", "eagle3-lama3.1-8b"})
                .find("unknown drafters spec 'eagle3-lama3.1-8b'"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--method", "eagle3", "--drafter", "eagle3-lama3.1-8b"})
                .find("did you mean eagle3-llama3.1-8b?"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "peagle-llama3.1-8b"})
                .find("needs an acceptance model"),
            std::string::npos) << "a head without published acceptance";
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--k", "x"}).find("--k: 'x' is not a number"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "16"}).find("exceeds the 8 devices"),
            std::string::npos);
  EXPECT_NE(err({"--bogus"}).find("unrecognised option"), std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--alpha", "0.5",
                 "--acceptance", "0.5"})
                .find("give one acceptance model"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate", "3"}).find("--tpot-target-ms"),
            std::string::npos);
}

// Engines: each hardware kind's default, a named one, what an engine cannot run, eager launches.
TEST(SimulateCommand, Engines) {
  auto run = [](std::vector<std::string> a) {
    const CommandRun r = simulate(a);
    EXPECT_EQ(r.code, 0) << r.err;
    return r;
  };
  auto json = [&](std::vector<std::string> a) {
    a.push_back("--json");
    return nlohmann::json::parse(run(a).out);
  };
  const std::vector<std::string> eagle = {"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--drafter",
                                          "eagle1-vicuna-7b", "--alpha", "0.8", "--k", "4"};
  EXPECT_NE(run(eagle).out.find("on a100-80gb-sxm with vllm"), std::string::npos) << "the GPU default";
  EXPECT_EQ(json({"--model", "llama-2-7b", "--hardware", "trn1-32xlarge"})["scenario"]["engine"], "transformers-neuronx");
  auto with = [&](const std::string& engine) {
    std::vector<std::string> a = eagle;
    a.insert(a.end(), {"--engine", engine});
    return json(a)["prediction"];
  };
  const auto ideal = with("ideal"), vllm = with("vllm"), eager = with("hf-eager");
  EXPECT_DOUBLE_EQ(ideal["overhead_ms"].get<double>(), 0.0);
  EXPECT_GT(vllm["tpot_ms"].get<double>(), ideal["tpot_ms"].get<double>()) << "1 ms per target forward";
  // Eager PyTorch: every operator waits for its launches, so a 7B forward is launch bound at batch 1.
  EXPECT_GT(eager["sequential_tpot_ms"].get<double>(), 1.5 * vllm["sequential_tpot_ms"].get<double>());
  const std::string list = run({"--list"}).out;
  EXPECT_NE(list.find("engines: hf-eager ideal sglang specdec-cpu tensorrt-llm transformers-neuronx vllm"), std::string::npos)
      << list;

  auto err = [](std::vector<std::string> a) { return sim::test::error_of([&] { simulate(a); }); };
  std::vector<std::string> tree = eagle;
  tree.insert(tree.end(), {"--tree", "mc_sim_7b_63"});
  EXPECT_NE(err(tree).find("engine 'vllm' verifies draft chains only, not trees"), std::string::npos);
  tree.insert(tree.end(), {"--engine", "tensorrt-llm"});
  EXPECT_EQ(err(tree), "");
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "peagle-llama3.1-8b", "--alpha", "0.8",
                 "--engine", "sglang"})
                .find("engine 'sglang' does not run method peagle (it runs: draft, eagle, eagle3, ngram-tree, mtp)"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "warp"}).find("unknown engines spec 'warp'"),
            std::string::npos);
}

// --engine-version prices a release: SGLang 0.4.4 (no overlap scheduler under EAGLE) pays its host
// work per speculative step in full where the current release hides it; the release is shown and
// checked.
TEST(SimulateCommand, EngineVersionPricesThatRelease) {
  const std::vector<std::string> base = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                                         "eagle3-llama3.1-8b", "--alpha", "0.8", "--k", "3", "--batch", "32",
                                         "--engine", "sglang"};
  auto json = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--json");
    const CommandRun r = simulate(a);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto current = json({}), old = json({"--engine-version", "0.4.4"});
  EXPECT_FALSE(current["scenario"].contains("engine_version")) << "none named: the current release, as before";
  EXPECT_EQ(old["scenario"]["engine_version"], "0.4.4");
  EXPECT_GT(old["prediction"]["tpot_ms"].get<double>(), current["prediction"]["tpot_ms"].get<double>())
      << "0.4.4 does not hide its host work behind EAGLE's steps";
  EXPECT_LT(old["prediction"]["speedup"].get<double>(), current["prediction"]["speedup"].get<double>());
  std::vector<std::string> table = base;
  table.insert(table.end(), {"--engine-version", "v0.4.4"});
  const CommandRun t = simulate(table);
  EXPECT_NE(t.out.find("with sglang v0.4.4 ("), std::string::npos) << t.out;
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--engine-version", "0.4.x"});
  const std::string e = sim::test::error_of([&] { simulate(bad); });
  EXPECT_NE(e.find("--engine-version: engine version '0.4.x' is not a dotted version number"), std::string::npos) << e;
}

// --batching: static and continuous batches with ragged acceptance, in the table and in JSON.
TEST(SimulateCommand, Batching) {
  const std::vector<std::string> base = {"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                                         "eagle3-llama3.1-8b", "--k", "4", "--alpha", "0.8", "--batch", "32"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    const CommandRun r = simulate(a);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  const auto st = nlohmann::json::parse(run({"--batching", "static", "--json"}));
  EXPECT_EQ(st["batching"]["mode"], "static");
  EXPECT_EQ(st["batching"]["sequences"], 32);
  EXPECT_GT(st["batching"]["ragged_factor"].get<double>(), 1.0);
  EXPECT_LT(st["batching"]["speedup"].get<double>(), st["prediction"]["speedup"].get<double>());
  const auto co = nlohmann::json::parse(run({"--batching", "continuous", "--json"}));
  EXPECT_GT(co["batching"]["prefill_per_step_ms"].get<double>(), 0.0);
  EXPECT_NE(run({"--batching", "static"}).find("steps until the batch is done"), std::string::npos);
  EXPECT_NE(run({"--batching", "continuous"}).find("step + interleaved prefill"), std::string::npos);
  auto err = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return sim::test::error_of([&] { simulate(a); });
  };
  EXPECT_NE(err({"--batching", "paged"}).find("unknown batching 'paged'"), std::string::npos);
  EXPECT_NE(err({"--batching", "static", "--best-k", "6"}).find("--batching evaluates one configuration"),
            std::string::npos);
}

// The searches and measured acceptance on the command line: --best-k over a list, a range or what
// a table covers; --best-tree over an EAGLE-2 grid; a tree's measured AL or per-depth table.
TEST(SimulateCommand, SearchesAndMeasuredAcceptance) {
  auto json = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang", "--drafter", "eagle1-vicuna-7b", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    const CommandRun r = simulate(a);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  auto ks = [](const nlohmann::json& j) {
    std::vector<int> v;
    for (const auto& row : j["by_k"]) v.push_back(row["k"]);
    return v;
  };
  EXPECT_EQ(ks(json({"--alpha", "0.8", "--best-k", "2,4,6"})), (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(ks(json({"--alpha", "0.8", "--best-k", "3-5"})), (std::vector<int>{3, 4, 5}));
  const auto table = json({"--acceptance-table", "2:2.4,4:3.1", "--best-k", "8"});
  EXPECT_EQ(ks(table), (std::vector<int>{2, 4}));
  EXPECT_EQ(table["skipped"].size(), 6u);
  EXPECT_EQ(table["skipped"][0]["setting"], "K = 1");

  const std::string probs = "[[0.7,0.2,0.1],[0.7,0.2,0.1],[0.6,0.2],[0.6,0.2],[0.5,0.2]]";
  const auto trees = json({"--tree-acceptance", probs, "--best-tree", "32,64/4-6/4,8"});
  EXPECT_EQ(trees["by_tree"].size(), 8u) << "depth 6 is beyond the 5 depths given";
  EXPECT_EQ(trees["skipped"].size(), 4u);
  EXPECT_EQ(trees["prediction"]["tree_nodes"], trees["best_tree"]["total_tokens"].get<int>() - 1);
  for (const auto& row : trees["by_tree"])
    EXPECT_GE(row["tpot_ms"].get<double>(), trees["prediction"]["tpot_ms"].get<double>() - 1e-12);
  const auto text = simulate({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang", "--drafter", "eagle1-vicuna-7b",
                              "--tree-acceptance", probs, "--best-tree", "32/5-6/4"});
  EXPECT_NE(text.out.find("<- best"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not evaluated: total 32, depth 6, top-k 4"), std::string::npos) << text.out;

  const auto al = json({"--tree", "mc_sim_7b_63", "--al", "3.6"});
  EXPECT_DOUBLE_EQ(al["prediction"]["acceptance_length"].get<double>(), 3.6);
  EXPECT_EQ(al["prediction"]["tree_nodes"], 25);
  const auto by_depth = json({"--tree", "mc_sim_7b_63", "--acceptance-by-depth", "0.8,0.6,0.45,0.3,0.2"});
  EXPECT_NEAR(by_depth["prediction"]["acceptance_length"].get<double>(), 3.35, 1e-12);
  const auto chain = json({"--k", "3", "--acceptance-by-depth", "0.8,0.6,0.45,0.3,0.2"});
  EXPECT_NEAR(chain["prediction"]["acceptance_length"].get<double>(), 2.85, 1e-12);
}

TEST(SimulateCommand, SearchAndMeasuredAcceptanceErrors) {
  auto err = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang", "--drafter", "eagle1-vicuna-7b"};
    a.insert(a.end(), extra.begin(), extra.end());
    return sim::test::error_of([&] { simulate(a); });
  };
  auto says = [](const std::string& error, const std::string& what) {
    EXPECT_NE(error.find(what), std::string::npos) << "expected '" << what << "' in: " << error;
  };
  says(err({"--tree", "mc_sim_7b_63", "--acceptance-by-depth", "0.8,0.6,0.4"}), "gives 3 depths, the tree has 5");
  says(err({"--al", "3.0", "--best-k", "4"}), "a measured AL belongs to the one configuration");
  says(err({"--al", "3.0", "--dynamic-tree", "26,5,4"}), "chooses its tree from per-rank acceptance probabilities");
  says(err({"--acceptance-by-depth", "0.8,0.6", "--dynamic-tree", "26,2,4"}), "chooses its tree from per-rank");
  says(err({"--alpha", "0.8", "--best-tree", "32/4"}), "expected TOTALS/DEPTHS/TOP_KS");
  says(err({"--alpha", "0.8", "--best-tree", "32/4/x"}), "--best-tree (top-k): 'x' is not a number");
  says(err({"--alpha", "0.8", "--best-tree", "32/4/4", "--best-k", "4"}), "not both");
  says(err({"--alpha", "0.8", "--best-k", "4", "--tree", "mc_sim_7b_63"}), "cannot be combined with --tree");
  says(err({"--alpha", "0.8", "--al", "3"}), "give one acceptance model");
  says(err({"--k", "4", "--al", "5.5"}), "measured AL 5.5 is outside [1, 5]");
  says(err({"--acceptance-table", "4:3.0", "--best-k", "2"}), "none of K = 1..2 can be evaluated");
  says(err({"--acceptance-by-depth", "0.5,0.7"}), "exceeds P(accepted >= 1)");
  says(err({"--sweep", "-", "--al", "3"}), "--al is not available in --sweep mode");
  says(err({"--tree", "mc_sim_7b_63", "--acceptance-table", "5:3.6"}), "for a tree give its measured AL (--al)");
}

// The README's simulate examples run as written, from the repository root as the README runs
// them: a documented command that fails is the first bug a user meets.
TEST(SimulateCommand, TheReadmeExamplesRun) {
  const std::string readme = std::string(SPECDEC_SOURCE_DIR) + "/README.md";
  std::ifstream in(readme);
  ASSERT_TRUE(in) << "cannot read " << readme;
  struct InDirectory {
    std::filesystem::path was = std::filesystem::current_path();
    explicit InDirectory(const std::filesystem::path& d) { std::filesystem::current_path(d); }
    ~InDirectory() { std::filesystem::current_path(was); }
  } at_root(SPECDEC_SOURCE_DIR);
  const std::string prefix = "build/specdec simulate ";
  int examples = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream words(line.substr(prefix.size(), line.find('#') - prefix.size()));
    std::vector<std::string> args;
    for (std::string w; words >> w;) args.push_back(w);
    ++examples;
    CommandRun r;
    EXPECT_EQ(sim::test::error_of([&] { r = simulate(args); }), "") << readme << ": " << line;
    EXPECT_EQ(r.code, 0) << readme << ": " << line << "\n" << r.err;
    EXPECT_NE(r.out.find("speedup"), std::string::npos) << line << "\n" << r.out;
  }
  EXPECT_GE(examples, 1) << readme << " has no '" << prefix << "' example";
}

TEST(SimulateCommand, SweepCalibrateAndMeasure) {
  sim::test::TempDir dir;
  const auto csv = (dir.path() / "sweep.csv").string();
  CommandRun r = simulate({"--sweep", csv, "--model", "llama-3.1-8b,llama-2-7b", "--hardware", "h100-sxm,b200", "--drafter",
                    "none,eagle3-llama3.1-8b", "--k", "1-4", "--batch", "1,8", "--alphas", "0.6,0.8", "--any-target"});
  EXPECT_NE(r.out.find("predicted"), std::string::npos);
  std::ifstream in(csv);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  // 2 models × 2 hardware × 2 batches × (1 sequential + 4 K × 2 alphas) + header (--any-target
  // prices the Llama-3.1-8B head on Llama-2-7B too; without it that head is skipped and said why).
  EXPECT_EQ(lines, 2 * 2 * 2 * 9 + 1);
  r = simulate({"--sweep", csv, "--model", "llama-3.1-8b,llama-2-7b", "--hardware", "h100-sxm", "--drafter",
                "none,eagle3-llama3.1-8b", "--k", "2"});
  EXPECT_NE(r.err.find("drafter 'eagle3-llama3.1-8b' is trained for 'llama-3.1-8b', not 'llama-2-7b'"), std::string::npos)
      << r.err;
  EXPECT_EQ(sim::test::error_of([&] {
              simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--any-target"});
            }),
            "--any-target is for --sweep (one --drafter and --model are priced as given)");

  const auto fitted = (dir.path() / "fitted.json").string();
  r = simulate({"--calibrate", (sim::test::source_dir() / "simulator/calibration/aws_trainium_trn1.json").string(),
                "--output", fitted});
  EXPECT_NE(r.out.find("largest error"), std::string::npos) << r.out;
  const sim::HardwareSpec h = sim::load_hardware_spec(fitted);
  EXPECT_EQ(h.name, "trn1-32xlarge");
  const std::string aws = (sim::test::source_dir() / "simulator/calibration/aws_trainium_trn1.json").string();
  r = simulate({"--calibrate", aws, "--cross-validate"});
  EXPECT_NE(r.out.find("held-out error (leave one row out"), std::string::npos) << r.out;
  const auto cv = nlohmann::json::parse(simulate({"--calibrate", aws, "--cross-validate", "--json"}).out);
  EXPECT_EQ(cv["cross_validation"]["held_out"].size(), 4u);
  EXPECT_EQ(cv["cross_validation"]["grouping"], "row");
  const auto engine_out = (dir.path() / "engine.json").string();
  simulate({"--calibrate", aws, "--engine-output", engine_out});
  EXPECT_EQ(sim::load_engine_spec(engine_out).name, "transformers-neuronx");

  const auto cpu = (dir.path() / "cpu.json").string();
  r = simulate({"--measure-cpu", cpu, "--quick", "--threads", "1"});
  const sim::HardwareSpec c = sim::load_hardware_spec(cpu);
  EXPECT_EQ(c.kind, "cpu");
  EXPECT_GT(c.memory_bandwidth_bytes_per_s, 1e8);
  EXPECT_GT(c.peak_flops("fp32"), 1e8);
  EXPECT_TRUE(sim::read_json_file(cpu).contains("measured"));
  // The measured spec is usable at once.
  r = simulate({"--model", "vicuna-68m", "--hardware", cpu});
  EXPECT_NE(r.out.find("TPOT"), std::string::npos);
}

TEST(SimulateCommand, EvaluatePublishedResults) {
  const std::string dir = (sim::test::source_dir() / "simulator/evaluation").string();
  CommandRun r = simulate({"--evaluate", dir});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("published results in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest error"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(simulate({"--evaluate", dir, "--json"}).out);
  ASSERT_TRUE(j.contains("sets"));
  EXPECT_GE(j["all"]["results"].get<int>(), 20);
  for (const auto& set : j["sets"])
    for (const auto& row : set["rows"]) EXPECT_GT(row["predicted_speedup"].get<double>(), 0) << row.dump();
  // --hardware/--engine replace every row's.
  const auto h = nlohmann::json::parse(simulate({"--evaluate", dir, "--json", "--hardware", "h200", "--engine", "ideal"}).out);
  for (const auto& set : h["sets"])
    for (const auto& row : set["rows"]) {
      EXPECT_EQ(row["hardware"], "h200");
      EXPECT_EQ(row["engine"], "ideal");
    }
  EXPECT_THROW(simulate({"--evaluate", dir, "--calibrate", dir}), Error);
  EXPECT_THROW(simulate({"--evaluate", "/nonexistent/set.json"}), Error);
}

}  // namespace
}  // namespace specdec::cli
