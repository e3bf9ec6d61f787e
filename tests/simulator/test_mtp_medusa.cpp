// MTP modules and Medusa heads in the simulator (docs/simulator.md "MTP and Medusa"): each priced
// from its shapes as the code runs it, checked here against the terms written out by hand from the
// model shape, with the module-reuse rule, Medusa's tree verification and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "reference/methods/registry.hpp"
#include "simulator/search.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/sweep.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// `model` on `hw` with the bundled `drafter`, engine `ideal` (no host terms: the device's time
// alone), i.i.d. acceptance, prompt 512, output 256.
Scenario scenario_for(const std::string& model, const std::string& hw, const std::string& drafter, int k,
                      double alpha = 0.8, int batch = 1, int tp = 1) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model(model);
  s.hardware = lib.hardware(hw);
  s.engine = lib.engine("ideal");
  s.drafter = lib.drafter(drafter, s.target);
  s.plan.method = s.drafter->method;
  s.plan.k = k;
  s.acceptance = iid_acceptance(alpha);
  s.workload.batch = batch;
  s.workload.tp = tp;
  return s;
}

double context_of(const Scenario& s) { return s.workload.prompt_len + 0.5 * s.workload.output_len; }

double peak_of(const Scenario& s) { return s.hardware.peak_flops(compute_dtype_for(s.hardware, s.target.dtype)); }

// Σ count × time of `ops` on the scenario's hardware (no launch floor: engine ideal).
double time_of(const std::vector<Operator>& ops, const Scenario& s) {
  double t = 0;
  for (const Operator& op : ops) t += operator_time(op, s.hardware, peak_of(s), 0) * op.count;
  return t;
}

double weight_bytes_of(const std::vector<Operator>& ops) {
  double b = 0;
  for (const Operator& op : ops) b += op.weight_bytes * op.count;
  return b;
}

Operator gemm(const char* name, double rows, double in, double out, double count = 1) {
  Operator op;
  op.name = name;
  op.phase = "draft";
  op.count = count;
  op.flops = 2.0 * rows * in * out;
  op.gemm_rows = rows;
  op.gemm_cols = out;
  op.gemm_depth = in;
  op.weight_bytes = in * out * 2.0;
  op.bytes = op.weight_bytes + rows * (in + out) * 2.0;
  return op;
}

// An RMSNorm / elementwise kernel over `rows` rows of `width`: `reads` inputs and one output.
Operator pointwise(const char* name, double rows, double width, double reads, double flops_per_elem, double count = 1) {
  Operator op;
  op.name = name;
  op.phase = "draft";
  op.count = count;
  op.flops = flops_per_elem * rows * width;
  op.bytes = (reads + 1.0) * rows * width * 2.0;
  return op;
}

const OpCost* find_op(const Prediction& p, const std::string& phase, const std::string& name) {
  for (const OpCost& c : p.step.ops)
    if (phase == c.op.phase && name == c.op.name) return &c;
  return nullptr;
}

// One MTP step of K = 1 on MiMo-7B is, term by term: the embedding row, enorm and hnorm (RMSNorms
// over H), eh_proj (2H -> H), ONE decoder layer of the target's own shape (append_decoder_layers of
// the model spec: q/k/v with bias-free weights of 32 heads / 8 KV heads, attention over the cached
// context, the dense MLP), then shared_head.norm and the target's LM head over all 151680 tokens for
// the one row that needs logits, and sampling. Written out by hand here and summed with the
// roofline; the simulator's draft time must equal it.
TEST(MtpMedusa, OneMtpStepIsATargetLayerPlusEhProjAndHeadTerms) {
  for (int batch : {1, 16}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Scenario s = scenario_for("mimo-7b", "h100-sxm", "mtp-mimo-7b", 1, 0.9, batch);
    const Prediction p = predict(s);
    ASSERT_EQ(p.step.draft_forwards, 1);
    const double B = batch, H = 4096, V = 151680;
    const double T = p.tokens_per_step;  // the first forward re-reads what the last step emitted
    EXPECT_NEAR(T, 1.9, 1e-12);

    ForwardParams fp;
    fp.batch = batch;
    fp.tokens = T;
    fp.context = context_of(s);
    std::vector<Operator> layer;
    append_decoder_layers(layer, s.target, 1, s.target.hidden_size, fp, "draft");  // the model shape's layer cost
    // Its weights are one target layer's: attention and MLP parameters (the norms are vectors).
    EXPECT_DOUBLE_EQ(weight_bytes_of(layer),
                     2.0 * (s.target.attention_params_per_layer() - (s.target.q_dim() + 2.0 * s.target.kv_dim())) +
                         2.0 * s.target.mlp_params_per_layer_total());

    std::vector<Operator> hand = layer;
    Operator emb;
    emb.name = "embedding";
    emb.bytes = B * T * H * (2.0 + 2.0);
    hand.push_back(emb);
    hand.push_back(pointwise("mtp.enorm", B * T, H, 1, 4));
    hand.push_back(pointwise("mtp.hnorm", B * T, H, 1, 4));
    hand.push_back(gemm("mtp.eh_proj", B * T, 2 * H, H));
    hand.push_back(pointwise("final_norm", B * 1, H, 1, 4));  // shared_head.norm, one logit row
    hand.push_back(gemm("lm_head", B * 1, H, V));
    Operator sampling;
    sampling.name = "sampling";
    sampling.flops = 5.0 * B * V;
    sampling.bytes = 3.0 * B * V * 4.0;
    hand.push_back(sampling);

    EXPECT_NEAR(p.step.draft_s, time_of(hand, s), 1e-12 * time_of(hand, s));
    EXPECT_DOUBLE_EQ(p.step.draft_weight_bytes, weight_bytes_of(layer) + 2.0 * (2 * H * H) + 2.0 * (H * V));
    // The terms are in the breakdown, under the draft phase.
    for (const char* name : {"mtp.enorm", "mtp.hnorm", "mtp.eh_proj", "qkv_proj", "attention", "mlp.gate_up_proj", "lm_head"})
      EXPECT_NE(find_op(p, "draft", name), nullptr) << name;
  }
}

// The module's attention reads its own KV cache over the whole context, as a target layer does:
// between two contexts its KV bytes grow exactly as one target layer's.
TEST(MtpMedusa, MtpAttentionGrowsWithTheContextLikeATargetLayer) {
  Scenario s = scenario_for("mimo-7b", "h100-sxm", "mtp-mimo-7b", 1, 0.9);
  auto kv = [&](int prompt) {
    s.workload.prompt_len = prompt;
    const Prediction p = predict(s);
    const OpCost* draft = find_op(p, "draft", "attention");
    const OpCost* target = find_op(p, "verify", "attention");
    EXPECT_TRUE(draft && target);
    return std::pair<double, double>{draft->op.kv_bytes, target->op.kv_bytes};
  };
  const auto [d1, t1] = kv(512);
  const auto [d2, t2] = kv(8192);
  EXPECT_DOUBLE_EQ(d2 - d1, (8192 - 512) * 2.0 * 8 * 128 * 2.0) << "K and V, 8 KV heads of 128, 2 bytes";
  EXPECT_DOUBLE_EQ(d2 - d1, t2 - t1) << "one layer's cache, as each of the target's layers";
}

// A MoE target's module is a MoE layer: the MTP step's expert operator is the target's MoE layer
// at the same rows (the distinct experts touched, their weights read once), on GLM-4.5 under TP 8.
TEST(MtpMedusa, AMoeTargetsModuleIsAMoeLayer) {
  const Scenario s = scenario_for("glm-4.5", "h200", "mtp-glm-4.5", 1, 0.8, /*batch=*/4, /*tp=*/8);
  const Prediction p = predict(s);
  const OpCost* experts = find_op(p, "draft", "moe.experts");
  ASSERT_NE(experts, nullptr);
  ForwardParams fp;
  fp.batch = 4;
  fp.tp = 8;
  fp.tokens = p.tokens_per_step;
  fp.context = context_of(s);
  fp.logit_rows = 1;
  std::vector<Operator> target;
  append_decoder_layers(target, s.target, 1, s.target.hidden_size, fp, "verify");
  const auto it = std::find_if(target.begin(), target.end(), [](const Operator& op) { return std::string(op.name) == "moe.experts"; });
  ASSERT_NE(it, target.end());
  EXPECT_DOUBLE_EQ(experts->op.weight_bytes, it->weight_bytes);
  EXPECT_DOUBLE_EQ(experts->op.flops, it->flops);
  EXPECT_DOUBLE_EQ(experts->op.count, 1.0) << "one layer";
  EXPECT_NE(find_op(p, "draft", "moe.shared_gate_up"), nullptr) << "GLM-4.5's shared expert (n_shared_experts 1)";
  EXPECT_NE(find_op(p, "draft", "all_reduce.mlp"), nullptr) << "sharded like the target's layers";
  // The target's own forward has 3 dense layers and 89 MoE layers (first_k_dense_replace 3).
  const OpCost* verify_experts = find_op(p, "verify", "moe.experts");
  ASSERT_NE(verify_experts, nullptr);
  EXPECT_DOUBLE_EQ(verify_experts->op.count, 89.0);
}

// Module reuse. The rule: a drafter forward reads the weights of the module it runs once, and
// forward f runs module f mod n. So a one-module checkpoint drafting K = 4 reads its module's
// weights 4 times per step, and a four-module checkpoint reads 4 different modules once each: the
// same bytes and time per step. What differs is memory (n modules resident) and, in practice,
// acceptance (a reused module was trained for depth 1 only), which the acceptance model carries.
TEST(MtpMedusa, ModuleReuseReadsTheSameBytesAsDistinctModules) {
  test::TempDir dir;
  SpecLibrary bundled;
  nlohmann::json j = read_json_file(bundled.find("drafters", "mtp-mimo-7b"));
  j["name"] = "mtp-mimo-7b-4";
  j["num_modules"] = 4;
  std::filesystem::create_directories(dir.path() / "drafters");
  std::ofstream(dir.path() / "drafters" / "mtp-mimo-7b-4.json") << j.dump(2);
  SpecLibrary lib({dir.path()});

  Scenario one = scenario_for("mimo-7b", "h100-sxm", "mtp-mimo-7b", 4, 0.8);
  Scenario four = one;
  four.drafter = lib.drafter("mtp-mimo-7b-4", four.target);
  ASSERT_EQ(one.drafter->num_modules, 1);
  ASSERT_EQ(four.drafter->num_modules, 4);
  const Prediction a = predict(one), b = predict(four);
  EXPECT_EQ(a.step.draft_forwards, 4);
  EXPECT_EQ(b.step.draft_forwards, 4);
  EXPECT_DOUBLE_EQ(a.step.draft_weight_bytes, b.step.draft_weight_bytes);
  EXPECT_DOUBLE_EQ(a.step.draft_s, b.step.draft_s);
  // 4 reads of one module's weights: the per-forward weights times 4.
  Scenario k1 = one;
  k1.plan.k = 1;
  EXPECT_DOUBLE_EQ(a.step.draft_weight_bytes, 4 * predict(k1).step.draft_weight_bytes);
  // Memory: three more modules resident.
  EXPECT_DOUBLE_EQ(b.weight_bytes_per_device - a.weight_bytes_per_device,
                   3 * mtp_module_weight_bytes(one.drafter->shape, WeightBytes{}));
  const double H = 4096;
  EXPECT_DOUBLE_EQ(mtp_module_weight_bytes(one.drafter->shape, WeightBytes{}),
                   2.0 * (one.target.attention_params_per_layer() + one.target.mlp_params_per_layer_total() + 2 * H +
                          2 * H * H + 3 * H));
}

// One Medusa pass of K heads, by hand: K residual blocks H × H with bias (L = 1), their SiLU and
// residual add, K projections H -> V and each head's top-k over its logits, all over the one row
// (per sequence) that produced the pending token; every head's weights read once per step.
TEST(MtpMedusa, MedusaStepByHand) {
  for (int k : {1, 3, 5}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    const Scenario s = scenario_for("vicuna-7b", "a100-80gb-sxm", "medusa-vicuna-7b", k, 0.6, /*batch=*/2);
    const Prediction p = predict(s);
    EXPECT_EQ(p.step.draft_forwards, 1) << "all heads in one pass";
    const double B = 2, H = 4096, V = 32000;
    Operator block = gemm("medusa.resblock", B, H, H, k);
    block.weight_bytes += H * 2.0;
    block.bytes += H * 2.0;
    const Operator act = pointwise("medusa.silu_residual", B, H, 2, 5, k);
    const Operator head = gemm("medusa.lm_head", B, H, V, k);
    Operator topk;
    topk.name = "medusa.topk";
    topk.count = k;
    topk.flops = 5.0 * B * V;
    topk.bytes = 3.0 * B * V * 4.0;
    const std::vector<Operator> hand = {block, act, head, topk};
    EXPECT_NEAR(p.step.draft_s, time_of(hand, s), 1e-12 * time_of(hand, s));
    EXPECT_DOUBLE_EQ(p.step.draft_weight_bytes, k * (H * H + H) * 2.0 + k * H * V * 2.0);
    EXPECT_DOUBLE_EQ(p.step.verify_tokens, k + 1.0) << "a top-1 chain of K";
    // Memory: all 5 heads of the checkpoint are resident, whatever K uses.
    const Scenario seq = [&] {
      Scenario q = s;
      q.plan = DraftPlan{};
      q.drafter.reset();
      return q;
    }();
    EXPECT_DOUBLE_EQ(p.weight_bytes_per_device - predict(seq).weight_bytes_per_device,
                     5 * (H * H + H) * 2.0 + 5 * H * V * 2.0);
  }
}

// Medusa's default tree (the Medusa code's mc_sim_7b_63: 63 nodes, depth 4) is verified as a
// tree: one target forward over its 63 nodes plus the root, drafted by one pass of 4 heads.
TEST(MtpMedusa, TreeVerificationOfMedusasSixtyThreeNodes) {
  Scenario s = scenario_for("vicuna-7b", "a100-80gb-sxm", "medusa-vicuna-7b", 0, 0.6);
  s.plan.tree = builtin_tree("medusa_mc_sim_7b_63");
  ASSERT_EQ(s.plan.tree->size(), 63);
  ASSERT_EQ(s.plan.tree->max_depth(), 4);
  EXPECT_EQ(s.plan.tree->max_rank(), 9);
  const Prediction p = predict(s);
  EXPECT_EQ(p.tree_nodes, 63);
  EXPECT_DOUBLE_EQ(p.step.verify_tokens, 64.0);
  ForwardParams fp;
  fp.tokens = 64;
  fp.logit_rows = 64;
  fp.context = context_of(s);
  EXPECT_NEAR(p.step.verify_s, time_of(model_forward_ops(s.target, fp, "verify"), s), 1e-12);
  EXPECT_EQ(p.step.draft_forwards, 1);
  EXPECT_DOUBLE_EQ(p.step.draft_weight_bytes, 4 * (4096.0 * 4096 + 4096) * 2 + 4 * 4096.0 * 32000 * 2)
      << "the tree's depth, 4 heads";
  // Trees cost rows, not depth: the 64-token verification costs more than a chain of its depth.
  Scenario chain = s;
  chain.plan.tree.reset();
  chain.plan.k = 4;
  EXPECT_GT(p.step.verify_s, predict(chain).step.verify_s);
  // An engine that flattens trees verifies each of its root-to-leaf paths padded to the deepest.
  Scenario flat = s;
  flat.engine.flatten_trees = true;
  EXPECT_DOUBLE_EQ(predict(flat).step.verify_tokens, s.plan.tree->num_leaves() * 5.0);
  // The published AL on that tree prices it with the measured AL (the spec's category).
  const DrafterSpec spec = SpecLibrary().drafter_spec("medusa-vicuna-7b");
  const CategoryAcceptance& c = spec.category("spec-bench");
  EXPECT_EQ(c.kind, "measured");
  EXPECT_EQ(c.tree, "medusa_mc_sim_7b_63");
  EXPECT_DOUBLE_EQ(c.al, 2.32);
  s.measured_tokens_per_step = c.al;
  EXPECT_DOUBLE_EQ(predict(s).tokens_per_step, 2.32);
  // The prior from the heads' training accuracies gives a close AL on the same tree (a check, not
  // a fit: docs/simulator.md).
  const CategoryAcceptance& prior = spec.category("train-top-k");
  EXPECT_EQ(prior.kind, "prior");
  EXPECT_NEAR(tree_expected_tokens(*s.plan.tree, *prior.model), 2.34, 0.005);
}

// Specs of one kind given where another is needed, shapes that do not fit the target, depths a
// checkpoint cannot draft and attention the operators do not model (sparse and linear attention)
// are refused with the reason.
TEST(MtpMedusa, MismatchedSpecsAreRefused) {
  SpecLibrary lib;
  auto says = [](const std::string& error, const std::string& what) {
    EXPECT_NE(error.find(what), std::string::npos) << "expected '" << what << "' in: " << error;
  };
  // A Medusa spec where MTP is asked for (and the reverse).
  Scenario s = scenario_for("vicuna-7b", "a100-80gb-sxm", "medusa-vicuna-7b", 3);
  s.plan.method = Method::mtp;
  says(error_of([&] { predict(s); }), "drafter 'medusa-vicuna-7b' is a medusa drafter, not mtp");
  Scenario m = scenario_for("mimo-7b", "h100-sxm", "mtp-mimo-7b", 2);
  m.plan.method = Method::medusa;
  says(error_of([&] { predict(m); }), "is a mtp drafter, not medusa");
  m.plan.method = Method::eagle1;
  says(error_of([&] { predict(m); }), "is a mtp drafter, not eagle");
  // Modules and heads ship with their target.
  says(error_of([&] { lib.drafter("mtp-mimo-7b", lib.model("llama-3.1-8b")); }),
       "ships with its target (mimo-7b) and takes its shapes from it: it was trained for vocab_size 151680, the target "
       "'llama-3.1-8b' has 128256");
  says(error_of([&] { lib.drafter("medusa-vicuna-13b", lib.model("vicuna-7b")); }), "hidden_size 5120");
  // Fields of another kind.
  const nlohmann::json mtp_spec = read_json_file(lib.find("drafters", "mtp-mimo-7b"));
  auto parse_with = [&](nlohmann::json j, const char* field, nlohmann::json v) {
    j[field] = v;
    return error_of([&] { parse_drafter_spec(j, "x.json"); });
  };
  says(parse_with(mtp_spec, "num_heads", 5), "field 'num_heads' is for Medusa drafters");
  says(parse_with(mtp_spec, "num_layers", 2), "an MTP module is one decoder layer of the target's kind");
  says(parse_with(mtp_spec, "draft_vocab_size", 32000), "drafts over the target's whole vocabulary");
  says(parse_with(mtp_spec, "num_modules", 0), "'num_modules' must be in [1, 64]");
  const nlohmann::json medusa_spec = read_json_file(lib.find("drafters", "medusa-vicuna-7b"));
  says(parse_with(medusa_spec, "num_modules", 2), "field 'num_modules' is for MTP drafters");
  nlohmann::json no_heads = medusa_spec;
  no_heads.erase("num_heads");
  says(error_of([&] { parse_drafter_spec(no_heads, "x.json"); }), "'num_heads'");
  says(parse_with(read_json_file(lib.find("drafters", "eagle1-vicuna-7b")), "num_modules", 1),
       "field 'num_modules' is for MTP drafters");
  // A default category must be one of the spec's; draft-free specs have none (their acceptance depends on the prompts).
  says(parse_with(read_json_file(lib.find("drafters", "eagle1-vicuna-7b")), "default_category", "humaneval"),
       "field 'default_category' names 'humaneval', which is not one of its categories (mt-bench (measured))");
  says(parse_with(read_json_file(lib.find("drafters", "ngram")), "default_category", "x"),
       "is draft-free (it drafts from the token history, no model): field 'default_category' does not apply");
  // Depths beyond Medusa's heads; dynamic trees (Medusa's trees are static).
  Scenario deep = scenario_for("vicuna-7b", "a100-80gb-sxm", "medusa-vicuna-7b", 6);
  says(error_of([&] { predict(deep); }), "has 5 heads, one per draft depth; K = 6 is beyond them");
  const BestK b = best_k(deep, {1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(b.all.size(), 5u);
  ASSERT_EQ(b.skipped.size(), 2u);
  says(b.skipped[0].reason, "has 5 heads");
  Scenario dyn = deep;
  set_dynamic_tree(dyn.plan, *dyn.acceptance, 16, 3, 4);
  says(error_of([&] { predict(dyn); }), "drafts no dynamic tree");
  says(error_of([&] { best_dynamic_tree(deep, {16}, {3}, {4}); }), "Medusa drafts no dynamic tree");
  // Checkpoints the operators cannot price, refused with the reason (Qwen3-Next's linear attention;
  // DeepSeek-V3's module is priced now: test_mla.cpp).
  says(error_of([&] { lib.drafter("mtp-qwen3-next-80b-a3b", lib.model("llama-3.1-8b")); }), "Gated DeltaNet");
  says(error_of([&] { lib.drafter("mtp-deepseek-v3", lib.model("llama-3.1-8b")); }),
       "ships with its target (deepseek-v3) and takes its shapes from it: it was trained for hidden_size 7168");
  // ... and their targets' config.json files too, rather than pricing them as something else:
  // DeepSeek-V3.2's sparse attention (multi-head latent attention plus a top-k indexer) and linear attention.
  nlohmann::json sparse = {{"hidden_size", 7168}, {"num_hidden_layers", 61}, {"num_attention_heads", 128},
                           {"num_key_value_heads", 128}, {"vocab_size", 129280}, {"intermediate_size", 18432},
                           {"kv_lora_rank", 512}, {"q_lora_rank", 1536}, {"qk_nope_head_dim", 128},
                           {"qk_rope_head_dim", 64}, {"v_head_dim", 128}, {"index_topk", 2048}};
  says(error_of([&] { parse_model_shape(sparse, "deepseek-v3.2/config.json"); }), "DeepSeek Sparse Attention (index_topk 2048");
  sparse.erase("index_topk");
  EXPECT_TRUE(parse_model_shape(sparse, "deepseek-v3/config.json").is_mla()) << "dense multi-head latent attention is priced";
  nlohmann::json linear = {{"hidden_size", 2048}, {"num_hidden_layers", 48}, {"num_attention_heads", 16},
                           {"num_key_value_heads", 2}, {"vocab_size", 151936}, {"intermediate_size", 5632},
                           {"full_attention_interval", 4}};
  says(error_of([&] { parse_model_shape(linear, "qwen3-next/config.json"); }), "linear-attention layers");
}

// GLM-4.5's shape against its published size (355B total, 32B active), with its dense first layers.
TEST(MtpMedusa, Glm45MatchesItsPublishedSize) {
  SpecLibrary lib;
  const ModelShape m = lib.model("glm-4.5");
  EXPECT_EQ(m.dense_layers, 3);
  EXPECT_EQ(m.moe_layers(), 89);
  EXPECT_EQ(m.shared_expert_intermediate_size, 1536) << "n_shared_experts × moe_intermediate_size";
  EXPECT_NEAR(m.total_params() / 355e9, 1.0, 0.02) << m.total_params();
  EXPECT_NEAR(m.active_params() / 32e9, 1.0, 0.05) << m.active_params();
  // A dense model is unchanged by the field's absence.
  EXPECT_EQ(lib.model("mimo-7b").dense_layers, 0);
  nlohmann::json bad = read_json_file(lib.find("models", "glm-4.5"));
  bad["first_k_dense_replace"] = 92;
  EXPECT_NE(error_of([&] { parse_model_shape(bad, "x.json"); }).find("must leave at least one MoE layer"), std::string::npos);
}

// The command line: --drafter, --category with published acceptance, --best-k over what it
// answers, the drafter's per-step terms, JSON, and sweeps.
struct CommandRun {
  int code = 0;
  std::string out, err;
};

CommandRun simulate(std::vector<std::string> args) {
  std::ostringstream out, err;
  cli::CommandIO io{out, err};
  CommandRun r;
  r.code = cli::run_simulate(args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(MtpMedusa, CommandLine) {
  // MTP: the README's 90% for one module answers K = 1 only; nothing is extrapolated.
  CommandRun r = simulate({"--model", "mimo-7b", "--hardware", "h100-sxm", "--drafter", "mtp-mimo-7b", "--category",
                           "mimo-readme", "--best-k", "3", "--breakdown"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("1   1.900"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not evaluated: K = 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("method mtp with mtp-mimo-7b, K = 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drafter forwards per step         1 (module f mod 1: 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drafter weights read per step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("draft mtp.eh_proj"), std::string::npos) << r.out;
  // Chained beyond its one module with an acceptance model given on the command line.
  r = simulate({"--model", "mimo-7b", "--hardware", "h100-sxm", "--drafter", "mtp-mimo-7b", "--acceptance", "0.9,0.7,0.6",
                "--k", "3", "--json"});
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prediction"]["method"], "mtp");
  EXPECT_EQ(j["prediction"]["draft_forwards"], 3);
  EXPECT_EQ(j["scenario"]["mtp_modules"], 1);
  EXPECT_GT(j["prediction"]["draft_weight_bytes_per_device"].get<double>(), 0);
  // Medusa with the measured AL on its tree, on an engine that verifies trees.
  r = simulate({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "hf-eager", "--drafter",
                "medusa-vicuna-7b", "--category", "spec-bench"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("tree of 63 nodes, depth 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("AL (tokens/step, incl. bonus)     2.320"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("one pass of 4 of 5 heads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verified tokens per sequence      64"), std::string::npos) << r.out;
  // Errors: a measured tree AL on a chain-only engine, another tree, a mismatched --method.
  auto err = [](std::vector<std::string> args) {
    std::string e = test::error_of([&] { simulate(args); });
    return e;
  };
  EXPECT_NE(err({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--drafter", "medusa-vicuna-7b", "--category",
                 "spec-bench"})
                .find("engine 'vllm' verifies draft chains only"),
            std::string::npos);
  EXPECT_NE(err({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "hf-eager", "--drafter",
                 "medusa-vicuna-7b", "--category", "spec-bench", "--tree", "mc_sim_7b_63"})
                .find("is an AL measured on tree 'medusa_mc_sim_7b_63'"),
            std::string::npos);
  EXPECT_NE(err({"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--drafter", "medusa-vicuna-7b", "--method", "mtp",
                 "--alpha", "0.7", "--k", "2"})
                .find("is a medusa drafter, not mtp"),
            std::string::npos);
  EXPECT_NE(err({"--model", "mimo-7b", "--hardware", "h100-sxm", "--method", "mtp", "--alpha", "0.7", "--k", "2"})
                .find("--method mtp needs --drafter (bundled mtp drafters: mtp-deepseek-v3, mtp-glm-4.5, mtp-mimo-7b"),
            std::string::npos);
  EXPECT_NE(err({"--model", "glm-4.5", "--hardware", "h200", "--tp", "8", "--drafter", "mtp-glm-4.5", "--category", "x"})
                .find("holds no published acceptance"),
            std::string::npos);
  // Sweeps: a module or heads meeting another target are skipped with the reason.
  r = simulate({"--sweep", "-", "--model", "mimo-7b,vicuna-7b", "--hardware", "h100-sxm", "--drafter",
                "none,mtp-mimo-7b,medusa-vicuna-7b", "--k", "1-2", "--alphas", "0.7"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find(",mtp-mimo-7b,mtp,2,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",medusa-vicuna-7b,medusa,2,"), std::string::npos) << r.out;
  EXPECT_NE((r.out + r.err).find("ships with its target"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace specdec::sim
