#include "reference/drafters/eagle_tensors.hpp"

#include "reference/model/precision.hpp"

namespace specdec {
namespace {

// Builds the list; `all` adds every member, including those the config has no place for.
std::vector<EagleTensor> build(const EagleHeadConfig& c, EagleWeights& w, bool all) {
  const ModelConfig& lc = c.layer;
  const int64_t H = lc.hidden_size, I = lc.intermediate_size, V = c.target_vocab, Vd = c.draft_vocab;
  const int64_t q = lc.q_dim(), kv = lc.kv_dim(), hd = lc.head_dim;
  const bool eagle1 = c.kind == EagleKind::eagle1;
  std::vector<EagleTensor> s;
  auto mat = [&](bool want, std::string name, Matrix& m, int64_t rows, int64_t cols) {
    if (want || all) s.push_back({std::move(name), &m, nullptr, rows, cols, {rows, cols}, false});
  };
  auto vec = [&](bool want, std::string name, Vector& v, int64_t n, bool is_norm = false) {
    if (want || all) s.push_back({std::move(name), nullptr, &v, n, 0, {n}, is_norm});
  };
  // A decoder layer's tensors at prefix p: q/k/v read `in` features; EAGLE-1's first layer has no
  // input norm.
  auto layer = [&](const std::string& p, LayerWeights& l, int64_t in, bool input_norm) {
    vec(input_norm, p + "input_layernorm.weight", l.input_layernorm, H, true);
    mat(true, p + "self_attn.q_proj.weight", l.q_proj, q, in);
    vec(lc.attention_bias, p + "self_attn.q_proj.bias", l.q_bias, q);
    mat(true, p + "self_attn.k_proj.weight", l.k_proj, kv, in);
    vec(lc.attention_bias, p + "self_attn.k_proj.bias", l.k_bias, kv);
    mat(true, p + "self_attn.v_proj.weight", l.v_proj, kv, in);
    vec(lc.attention_bias, p + "self_attn.v_proj.bias", l.v_bias, kv);
    mat(true, p + "self_attn.o_proj.weight", l.o_proj, H, q);
    vec(lc.o_proj_bias, p + "self_attn.o_proj.bias", l.o_bias, H);
    vec(lc.qk_norm, p + "self_attn.q_norm.weight", l.q_norm, hd, true);
    vec(lc.qk_norm, p + "self_attn.k_norm.weight", l.k_norm, hd, true);
    vec(true, p + "post_attention_layernorm.weight", l.post_attention_layernorm, H, true);
    mat(true, p + "mlp.gate_proj.weight", l.gate_proj, I, H);
    vec(lc.mlp_bias, p + "mlp.gate_proj.bias", l.gate_bias, I);
    mat(true, p + "mlp.up_proj.weight", l.up_proj, I, H);
    vec(lc.mlp_bias, p + "mlp.up_proj.bias", l.up_bias, I);
    mat(true, p + "mlp.down_proj.weight", l.down_proj, H, I);
    vec(lc.mlp_bias, p + "mlp.down_proj.bias", l.down_bias, H);
  };

  if (c.kind == EagleKind::mtp) {
    // An MTP module: its own names in each layout, standard layers (with input norms) reading H.
    const MtpNames n = mtp_names(c);
    mat(c.own_embeddings, n.embed_tokens, w.embed_tokens, V, H);
    vec(true, n.embed_norm, w.embed_norm, H, true);
    vec(true, n.hidden_norm, w.hidden_norm, H, true);
    mat(true, n.fc, w.fc, H, c.fc_in());
    for (int i = 0; i < static_cast<int>(w.layers.size()); ++i) layer(n.layer_prefix(i), w.layers[static_cast<std::size_t>(i)], H, true);
    vec(true, n.norm, w.norm, H, true);
    mat(c.own_lm_head, n.lm_head, w.lm_head, Vd, H);
    vec(false, n.prefix + "fc.bias", w.fc_bias, H);  // listed only to find members an MTP module has no place for
    vec(false, n.prefix + "mask_hidden", w.mask_hidden, c.feature_width());
    return s;
  }
  mat(c.own_embeddings, "embed_tokens.weight", w.embed_tokens, V, H);
  mat(true, "fc.weight", w.fc, H, c.fc_in());
  vec(c.fc_bias, "fc.bias", w.fc_bias, H);
  for (int i = 0; i < static_cast<int>(w.layers.size()); ++i) {
    LayerWeights& l = w.layers[static_cast<std::size_t>(i)];
    const std::string p = eagle_layer_prefix(c, i);
    // Layer 0 of EAGLE-3 / P-EAGLE attends over cat(norm(emb), norm(h)): 2H wide.
    const int64_t in = (i == 0 && !eagle1) ? 2 * H : H;
    if (i == 0) vec(!eagle1, p + "hidden_norm.weight", w.hidden_norm, H, true);
    layer(p, l, in, !(eagle1 && i == 0));
  }
  vec(!eagle1, "norm.weight", w.norm, H, true);
  mat(!eagle1, "lm_head.weight", w.lm_head, Vd, H);
  const bool peagle = c.kind == EagleKind::peagle;
  const int64_t n_mask = c.feature_width();
  vec(peagle, "mask_hidden", w.mask_hidden, n_mask);
  if (!s.empty() && s.back().name == "mask_hidden") {
    // AWS stores [1, n], speculators [1, 1, n].
    s.back().stored_shape = c.layout == "speculators" ? std::vector<int64_t>{1, 1, n_mask}
                                                      : std::vector<int64_t>{1, n_mask};
  }
  return s;
}

}  // namespace

MtpNames mtp_names(const EagleHeadConfig& c) {
  MtpNames n;
  const std::string j = std::to_string(c.module);
  if (c.layout == "deepseek") {
    // Module j follows the target's L layers: model.layers.{L + j}.
    n.prefix = "model.layers." + std::to_string(static_cast<int64_t>(c.target_layers) + c.module) + ".";
    n.embed_norm = n.prefix + "enorm.weight";
    n.hidden_norm = n.prefix + "hnorm.weight";
    n.fc = n.prefix + "eh_proj.weight";
    n.norm = n.prefix + "shared_head.norm.weight";
    n.lm_head = n.prefix + "shared_head.head.weight";
    n.embed_tokens = n.prefix + "embed_tokens.weight";
  } else if (c.layout == "qwen3_next") {
    n.prefix = "mtp.";
    n.layers = "mtp.layers.";
    n.embed_norm = "mtp.pre_fc_norm_embedding.weight";
    n.hidden_norm = "mtp.pre_fc_norm_hidden.weight";
    n.fc = "mtp.fc.weight";
    n.norm = "mtp.norm.weight";
    n.lm_head = "mtp.lm_head.weight";
    n.embed_tokens = "mtp.embed_tokens.weight";
  } else {
    // MiMo (model.mtp_layers.{j}.) and the speculators library (mtp_layers.{j}.) share the names.
    n.prefix = (c.layout == "mimo" ? "model.mtp_layers." : "mtp_layers.") + j + ".";
    n.embed_norm = n.prefix + "token_layernorm.weight";
    n.hidden_norm = n.prefix + "hidden_layernorm.weight";
    n.fc = n.prefix + "input_proj.weight";
    n.norm = n.prefix + "final_layernorm.weight";
    n.lm_head = n.prefix + "lm_head.weight";
    n.embed_tokens = n.prefix + "embed_tokens.weight";
  }
  return n;
}

std::string MtpNames::layer_prefix(int layer) const {
  return layers.empty() ? prefix : layers + std::to_string(layer) + ".";
}

std::string eagle_layer_prefix(const EagleHeadConfig& c, int layer) {
  if (c.kind == EagleKind::mtp) return mtp_names(c).layer_prefix(layer);
  if (layer == 0 && c.kind != EagleKind::eagle1 && c.layout != "speculators") return "midlayer.";
  return "layers." + std::to_string(layer) + ".";
}

std::vector<EagleTensor> eagle_tensors(const EagleHeadConfig& c, EagleWeights& w) { return build(c, w, false); }

std::vector<EagleTensor> all_eagle_members(const EagleHeadConfig& c, EagleWeights& w) { return build(c, w, true); }

EagleHead round_head(const EagleHead& head, Dtype precision) {
  check_weight_precision(precision, "round_head");
  head.require_weights("round_head");
  if (precision == Dtype::F32) return head;
  EagleWeights w = head.weights();
  for (const EagleTensor& t : eagle_tensors(head.config(), w)) {
    if (t.m) round_to_precision(t.m->data(), static_cast<std::size_t>(t.m->size()), precision);
    else round_to_precision(t.v->data(), static_cast<std::size_t>(t.v->size()), precision);
  }
  return EagleHead(head.config(), std::move(w), head.target(), "rounded head");
}

}  // namespace specdec
