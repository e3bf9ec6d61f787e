#pragma once
// EAGLE-1 / EAGLE-3 / P-EAGLE heads and drafting methods for the decoding tests, shared by the
// reference suite (test_eagle_methods) and the cpu backend's (test_cpu_speculative), which must
// run the same methods with the same seeds.
//
// Random heads almost never agree with a random target, which would leave the acceptance paths
// untested. So the fixtures also hold an EAGLE-1 head that reproduces a "bigram-like" target: the
// target's attention and MLP outputs are damped and its final norm is 1, so its next token depends
// mostly on the current token (logits ≈ lm_head · e_t / rms(e_t)); the head's fc passes the token
// embedding through and its layer adds nothing (o_proj = down_proj = 0), so its logits are
// lm_head · 100·e_t: the same argmax whenever the context's contribution does not flip it.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/drafting/peagle_proposer.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/model/language_model.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec::testing {

// --- heads ------------------------------------------------------------------------------------

// The decoder layers of a head for `target`: 4 query heads of width 12, 2 KV heads (GQA), its
// vocabulary the target's.
inline ModelConfig eagle_head_layer(const ModelConfig& target, int layers) {
  ModelConfig c = tiny_llama(target.vocab_size);
  c.hidden_size = target.hidden_size;
  c.intermediate_size = 64;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 12;
  return c;
}

// EAGLE-1, SafeAILab layout: one layer, fc with a bias, the target's vocabulary.
inline EagleHeadConfig eagle1_config(const ModelConfig& t) {
  EagleHeadConfig c;
  c.kind = EagleKind::eagle1;
  c.layout = "safeailab";
  c.layer = eagle_head_layer(t, 1);
  c.target_hidden = t.hidden_size;
  c.target_vocab = c.draft_vocab = t.vocab_size;
  c.fc_bias = true;
  return c;
}

// EAGLE-3, SafeAILab layout: a draft vocabulary of `draft_vocab` tokens (d2t), aux layers as given
// (empty = the target's default).
inline EagleHeadConfig eagle3_config(const ModelConfig& t, int draft_vocab, std::vector<int> aux = {}) {
  EagleHeadConfig c;
  c.kind = EagleKind::eagle3;
  c.layout = "safeailab";
  c.layer = eagle_head_layer(t, 1);
  c.target_hidden = t.hidden_size;
  c.target_vocab = t.vocab_size;
  c.draft_vocab = draft_vocab;
  c.aux_layers = std::move(aux);
  return c;
}

// P-EAGLE, AWS layout: two layers, own embeddings, mask token 5, trained for `trained_depth`
// parallel positions (0 = unknown).
inline EagleHeadConfig peagle_config(const ModelConfig& t, int draft_vocab, int trained_depth) {
  EagleHeadConfig c;
  c.kind = EagleKind::peagle;
  c.layout = "aws";
  c.layer = eagle_head_layer(t, 2);
  c.num_layers = 2;
  c.target_hidden = t.hidden_size;
  c.target_vocab = t.vocab_size;
  c.draft_vocab = draft_vocab;
  c.own_embeddings = true;
  c.mask_token_id = 5;
  c.trained_depth = trained_depth;
  return c;
}

// An MTP module for `t`: a decoder layer of the target's own shape, DeepSeek-V3 layout; module
// `module` of `modules`.
inline EagleHeadConfig mtp_config(const ModelConfig& t, int module = 0, int modules = 1) {
  EagleHeadConfig c;
  c.kind = EagleKind::mtp;
  c.layout = "deepseek";
  c.layer = t;
  c.layer.num_hidden_layers = 1;
  c.target_hidden = t.hidden_size;
  c.target_vocab = c.draft_vocab = t.vocab_size;
  c.module = module;
  c.num_modules = modules;
  c.target_layers = t.num_hidden_layers;
  return c;
}

// make_model's weights with attention and MLP outputs damped and a unit final norm (see the top).
inline LlamaWeights bigram_like_weights(const ModelConfig& c, uint64_t seed) {
  LlamaWeights w = make_model(c, seed).weights();
  for (LayerWeights& l : w.layers) {
    l.o_proj *= 0.03f;
    l.down_proj *= 0.03f;
  }
  w.norm.setOnes();
  return w;
}

inline Transformer bigram_like(const ModelConfig& c, uint64_t seed) { return Transformer(c, bigram_like_weights(c, seed)); }

// EAGLE-1 head whose output is the token embedding: logits = lm_head · 100·e_token (see the top).
inline EagleHead passthrough_head(const Transformer& target) {
  const EagleHead random = random_eagle_head(eagle1_config(target.config()), target, 77, 0.08f);
  EagleWeights w = random.weights();
  const int H = target.config().hidden_size;
  w.fc.setZero();
  // x = 100·embed(token), the feature ignored: the scale sharpens the head's distribution (the
  // argmax is unchanged) so that EAGLE-2's cumulative scores favour deep paths.
  w.fc.leftCols(H) = 100.0f * Matrix::Identity(H, H);
  w.fc_bias.setZero();
  w.layers[0].o_proj.setZero();
  w.layers[0].down_proj.setZero();
  return EagleHead(random.config(), w, target, "passthrough head");
}

// Keeps heads alive (at stable addresses) for the duration of a test; `bind`, when set, moves
// every head added onto another backend (e.g. cpu::cpu_eagle_head).
struct HeadPool {
  std::vector<std::unique_ptr<EagleHead>> heads;
  std::function<EagleHead(const EagleHead&)> bind;
  const EagleHead& add(EagleHead h) {
    heads.push_back(std::make_unique<EagleHead>(bind ? bind(h) : std::move(h)));
    return *heads.back();
  }
};

// --- drafting options --------------------------------------------------------------------------

inline EagleOptions chain_options(int k) {
  EagleOptions o;
  o.shape = EagleShape::chain;
  o.k = k;
  return o;
}

inline EagleOptions static_options(TreeChoices choices) {
  EagleOptions o;
  o.shape = EagleShape::static_tree;
  o.choices = std::move(choices);
  return o;
}

inline EagleOptions dynamic_options(int depth, int top_k, int total) {
  EagleOptions o;
  o.shape = EagleShape::dynamic_tree;
  o.depth = depth;
  o.top_k = top_k;
  o.total_tokens = total;
  return o;
}

inline PEagleOptions peagle_chain(int k) {
  PEagleOptions o;
  o.k = k;
  return o;
}

inline PEagleOptions peagle_tree(TreeChoices choices) {
  PEagleOptions o;
  o.shape = PEagleShape::tree;
  o.choices = std::move(choices);
  return o;
}

// Five nodes two levels deep; and eight nodes six deep, mostly rank 0.
inline const TreeChoices kSmallTree = {{0}, {1}, {0, 0}, {0, 1}, {1, 0}};
inline const TreeChoices kDeepTree = {{0}, {1}, {0, 0}, {0, 0, 0}, {0, 0, 1}, {0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}};

// --- methods -----------------------------------------------------------------------------------

// Which target a method drafts for: make_model's, or bigram_like's (the passthrough head's).
enum class EagleTarget { plain, bigram };

struct EagleMethod {
  std::string name;
  EagleTarget target = EagleTarget::plain;
  bool uses_k = true;  // chains: run for K = 1..8; tree shapes: once
  // Builds a proposer drafting K tokens (chains) for `target`, a reference model (the heads use
  // its embeddings and LM head); the head lives in the pool given to eagle_methods.
  std::function<std::unique_ptr<Proposer>(const Transformer& target, int k)> make;
};

// Every EAGLE-1 / EAGLE-3 / P-EAGLE shape: chains (EAGLE-3 also with aux layers {1, 3}), static
// trees (mc_sim_7b_63, kSmallTree, kDeepTree), EAGLE-2 dynamic trees (depth, top_k, total_tokens
// from (1, 1, 2) to (7, 10, 60)), and the passthrough head in each shape. Drafter cache capacity
// 64. Head seeds are fixed (11..14, passthrough 77).
inline std::vector<EagleMethod> eagle_methods(HeadPool& pool) {
  auto e1 = [&pool](const Transformer& t) -> const EagleHead& {
    return pool.add(random_eagle_head(eagle1_config(t.config()), t, 11, 0.08f));
  };
  auto e3 = [&pool](const Transformer& t) -> const EagleHead& {
    return pool.add(random_eagle_head(eagle3_config(t.config(), 64), t, 12, 0.08f));
  };
  auto e3_aux = [&pool](const Transformer& t) -> const EagleHead& {
    return pool.add(random_eagle_head(eagle3_config(t.config(), 97, {1, 3}), t, 13, 0.08f));
  };
  auto pe = [&pool](const Transformer& t) -> const EagleHead& {
    return pool.add(random_eagle_head(peagle_config(t.config(), 80, 8), t, 14, 0.08f));
  };
  auto pass = [&pool](const Transformer& t) -> const EagleHead& { return pool.add(passthrough_head(t)); };
  using P = std::unique_ptr<Proposer>;
  std::vector<EagleMethod> m;
  m.push_back({"eagle1_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(e1(t), chain_options(k), 64);
               }});
  m.push_back({"eagle3_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(e3(t), chain_options(k), 64);
               }});
  m.push_back({"eagle3_aux13_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(e3_aux(t), chain_options(k), 64);
               }});
  m.push_back({"peagle_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<PEagleProposer>(pe(t), peagle_chain(k), 64);
               }});
  m.push_back({"passthrough_chain", EagleTarget::bigram, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(pass(t), chain_options(k), 64);
               }});
  // MTP: both feedback variants, vLLM's zeroed position-0 embedding, two modules reused in turn.
  auto mtp = [&pool](const Transformer& t, int module = 0, int modules = 1) -> const EagleHead& {
    return pool.add(random_eagle_head(mtp_config(t.config(), module, modules), t, 15 + module, 0.08f));
  };
  auto mtp_options = [](EagleOptions o, MtpFeedback f, bool zero) {
    o.feedback = f;
    o.zero_embedding_at_position_0 = zero;
    return o;
  };
  m.push_back({"mtp_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(mtp(t), chain_options(k), 64);
               }});
  m.push_back({"mtp_normed_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(mtp(t), mtp_options(chain_options(k), MtpFeedback::normed, false), 64);
               }});
  m.push_back({"mtp_vllm_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 return std::make_unique<EagleProposer>(mtp(t), mtp_options(chain_options(k), MtpFeedback::prenorm, true), 64);
               }});
  m.push_back({"mtp_two_modules_chain", EagleTarget::plain, true, [=](const Transformer& t, int k) -> P {
                 EagleOptions o = mtp_options(chain_options(k), MtpFeedback::normed, false);
                 const EagleHead& first = mtp(t, 0, 2);
                 o.extra_modules = {&mtp(t, 1, 2)};
                 return std::make_unique<EagleProposer>(first, o, 64);
               }});
  m.push_back({"mtp_normed_tree_small", EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                 return std::make_unique<EagleProposer>(mtp(t), mtp_options(static_options(kSmallTree), MtpFeedback::normed, false), 64);
               }});
  m.push_back({"mtp_vllm_dynamic_2_3_8", EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                 return std::make_unique<EagleProposer>(mtp(t), mtp_options(dynamic_options(2, 3, 8), MtpFeedback::prenorm, true), 64);
               }});
  const std::vector<std::pair<std::string, TreeChoices>> trees = {
      {"mc_sim_7b_63", mc_sim_7b_63()}, {"small", kSmallTree}, {"deep", kDeepTree}};
  for (const auto& [tree_name, choices] : trees) {
    const TreeChoices ch = choices;
    m.push_back({"eagle1_tree_" + tree_name, EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<EagleProposer>(e1(t), static_options(ch), 64);
                 }});
    m.push_back({"eagle3_tree_" + tree_name, EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<EagleProposer>(e3(t), static_options(ch), 64);
                 }});
    m.push_back({"passthrough_tree_" + tree_name, EagleTarget::bigram, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<EagleProposer>(pass(t), static_options(ch), 64);
                 }});
    m.push_back({"peagle_tree_" + tree_name, EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<PEagleProposer>(pe(t), peagle_tree(ch), 64);
                 }});
  }
  const std::vector<std::array<int, 3>> dynamic = {{1, 1, 2}, {2, 3, 8}, {4, 4, 20}, {7, 10, 60}};
  for (const auto& [depth, top_k, total] : dynamic) {
    const std::string suffix = std::to_string(depth) + "_" + std::to_string(top_k) + "_" + std::to_string(total);
    const int d = depth, k = top_k, n = total;
    m.push_back({"eagle1_dynamic_" + suffix, EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<EagleProposer>(e1(t), dynamic_options(d, k, n), 64);
                 }});
    m.push_back({"eagle3_dynamic_" + suffix, EagleTarget::plain, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<EagleProposer>(e3(t), dynamic_options(d, k, n), 64);
                 }});
    m.push_back({"passthrough_dynamic_" + suffix, EagleTarget::bigram, false, [=](const Transformer& t, int) -> P {
                   return std::make_unique<EagleProposer>(pass(t), dynamic_options(d, k, n), 64);
                 }});
  }
  return m;
}

// --- drafter state ------------------------------------------------------------------------------

// The drafter cache and the head of an EagleProposer or PEagleProposer.
inline const EaglePairCache& pair_cache_of(const Proposer& p) {
  if (auto* e = dynamic_cast<const EagleProposer*>(&p)) return e->pair_cache();
  return dynamic_cast<const PEagleProposer&>(p).pair_cache();
}
// Whether the proposer drafts as vLLM runs MTP (no embedding at position 0).
inline bool zero_first_of(const Proposer& p) {
  auto* e = dynamic_cast<const EagleProposer*>(&p);
  return e && e->options().zero_embedding_at_position_0;
}
inline const EagleHead& head_of(const Proposer& p) {
  if (auto* e = dynamic_cast<const EagleProposer*>(&p)) return e->head();
  return dynamic_cast<const PEagleProposer&>(p).head();
}

// What a fresh head builds over the pairs (f_i, t_{i+1}), i < n, of `tokens` (n + 1 tokens), with
// the features from one plain forward of `target` (any backend); both caches hold `capacity`.
inline std::unique_ptr<KVCache> fresh_pair_cache(const LanguageModel& target, const EagleHead& head,
                                                 const std::vector<int32_t>& tokens, int capacity,
                                                 bool zero_embedding_at_position_0 = false) {
  const int n = static_cast<int>(tokens.size()) - 1;
  auto cache = head.new_cache(capacity);
  if (n <= 0) return cache;
  auto tc = target.new_cache(capacity);
  ForwardRequest r;
  r.tokens.assign(tokens.begin(), tokens.end() - 1);
  r.final_hidden = head.config().reads_final_hidden();
  if (!r.final_hidden) r.aux_layers = head.config().aux_layers;
  const ForwardResult f = target.forward(*tc, r);
  EagleHead::Input in;
  in.tokens.assign(tokens.begin() + 1, tokens.end());
  in.features = r.final_hidden ? f.final_hidden : f.aux_hidden;
  in.zero_embedding_at_position_0 = zero_embedding_at_position_0;
  head.forward(*cache, in);
  return cache;
}

}  // namespace specdec::testing
