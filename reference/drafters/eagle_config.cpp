#include "reference/drafters/eagle_config.hpp"

#include <algorithm>
#include <climits>

#include "reference/core/error.hpp"
#include "reference/drafters/mtp_checkpoint.hpp"

namespace specdec {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& message) { throw Error(source + ": " + message); }

bool present(const json& obj, const char* key) { return obj.contains(key) && !obj.at(key).is_null(); }

int get_int(const json& obj, const char* key, int fallback, const std::string& source, const std::string& where = "") {
  if (!present(obj, key)) return fallback;
  const json& v = obj.at(key);
  // Some released configs store token ids as strings ("128256"); accept decimal strings.
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    std::size_t used = 0;
    long long parsed = 0;
    try {
      parsed = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size() || parsed < INT_MIN || parsed > INT_MAX) {
      fail(source, "field '" + where + key + "' must be an integer, got " + v.dump());
    }
    return static_cast<int>(parsed);
  }
  if (!v.is_number_integer()) fail(source, "field '" + where + key + "' must be an integer, got " + v.dump());
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(INT_MAX)
                             : (v.get<int64_t>() > INT_MAX || v.get<int64_t>() < INT_MIN)) {
    fail(source, "field '" + where + key + "' = " + v.dump() + " is out of range");
  }
  return v.get<int>();
}

bool get_bool(const json& obj, const char* key, bool fallback, const std::string& source) {
  if (!present(obj, key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_boolean()) fail(source, std::string("field '") + key + "' must be true or false, got " + v.dump());
  return v.get<bool>();
}

// vLLM's order for the parallel-drafting token: mask_token_id, pard_token, ptd_token_id.
int mask_token_from(const json& j, const std::string& source) {
  for (const char* key : {"mask_token_id", "pard_token", "ptd_token_id"}) {
    if (present(j, key)) return get_int(j, key, -1, source);
  }
  fail(source, "P-EAGLE head config has no mask token: expected 'mask_token_id', 'pard_token' or 'ptd_token_id'");
}

std::vector<int> aux_layers_from(const json& j, const std::string& source) {
  const char* key = "eagle_aux_hidden_state_layer_ids";
  std::vector<int> out;
  if (!present(j, key)) return out;
  const json& a = j.at(key);
  if (!a.is_array()) fail(source, std::string("field '") + key + "' must be a list of integers, got " + a.dump());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a.at(i).is_number_integer()) {
      fail(source, std::string("field '") + key + "[" + std::to_string(i) + "]' must be an integer, got " + a.at(i).dump());
    }
    const int64_t v = a.at(i).get<int64_t>();
    if (v < 0 || v > INT_MAX) {
      fail(source, std::string("field '") + key + "' holds " + std::to_string(v) + ", expected a hidden-state index >= 0");
    }
    out.push_back(static_cast<int>(v));
  }
  // The target concatenates the states in layer order whatever order the list uses.
  std::sort(out.begin(), out.end());
  return out;
}

void reject_unsupported_options(const json& j, const std::string& source) {
  for (const char* key : {"norm_before_fc", "fc_norm", "norm_output"}) {
    if (present(j, key) && !(j.at(key).is_boolean() && !j.at(key).get<bool>())) {
      fail(source, std::string("option '") + key + "' = " + j.at(key).dump() +
                       " is not supported (only false / absent)");
    }
  }
}

std::string to_str(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string eagle_kind_name(EagleKind kind) {
  switch (kind) {
    case EagleKind::eagle1: return "eagle1";
    case EagleKind::eagle3: return "eagle3";
    case EagleKind::peagle: return "peagle";
    case EagleKind::mtp: return "mtp";
  }
  return "unknown";
}

int EagleHeadConfig::feature_width() const {
  return reads_final_hidden() ? target_hidden : static_cast<int>(aux_layers.size()) * target_hidden;
}

int EagleHeadConfig::fc_in() const {
  return reads_final_hidden() ? layer.hidden_size + target_hidden : feature_width();
}

std::vector<int> default_aux_layers(int L) {
  std::vector<int> v{2, L / 2, L - 3};
  std::sort(v.begin(), v.end());
  if (v.front() < 0 || std::adjacent_find(v.begin(), v.end()) != v.end()) {
    throw Error("a target with " + std::to_string(L) + " layers is too shallow for EAGLE-3's default fused layers "
                "{2, L/2, L-3} = " + to_str({2, L / 2, L - 3}) +
                "; list them in the head config's 'eagle_aux_hidden_state_layer_ids'");
  }
  return v;
}

void validate_eagle_config(const EagleHeadConfig& c, const std::string& source) {
  validate_model_config(c.layer, source);
  const std::string kind = eagle_kind_name(c.kind);
  const bool layout_ok = c.kind == EagleKind::eagle1   ? c.layout == "safeailab"
                         : c.kind == EagleKind::eagle3 ? c.layout == "safeailab" || c.layout == "speculators"
                         : c.kind == EagleKind::peagle ? c.layout == "aws" || c.layout == "speculators"
                                                       : c.layout == "deepseek" || c.layout == "qwen3_next" ||
                                                             c.layout == "mimo" || c.layout == "speculators";
  if (!layout_ok) {
    fail(source, "layout '" + c.layout + "' is not available for a " + kind +
                     " head (eagle1: safeailab; eagle3: safeailab, speculators; peagle: aws, speculators; mtp: "
                     "deepseek, qwen3_next, mimo, speculators)");
  }
  if (c.kind != EagleKind::mtp && (c.hidden_first || c.own_lm_head || c.module != 0 || c.num_modules != 1)) {
    fail(source, "hidden_first, own_lm_head and the module index are MTP options");
  }
  if (c.num_layers < 1) fail(source, "num_layers must be at least 1, got " + std::to_string(c.num_layers));
  if (c.layer.num_hidden_layers != c.num_layers) {
    fail(source, "layer config num_hidden_layers " + std::to_string(c.layer.num_hidden_layers) +
                     " differs from num_layers " + std::to_string(c.num_layers));
  }
  if (c.target_vocab != c.layer.vocab_size) {
    fail(source, "target_vocab " + std::to_string(c.target_vocab) + " differs from the layer config's vocab_size " +
                     std::to_string(c.layer.vocab_size));
  }
  if (c.target_hidden <= 0) fail(source, "target_hidden_size must be positive, got " + std::to_string(c.target_hidden));
  if (c.draft_vocab <= 0 || c.draft_vocab > c.target_vocab) {
    fail(source, "draft_vocab_size " + std::to_string(c.draft_vocab) + " must be in [1, vocab_size = " +
                     std::to_string(c.target_vocab) + "]");
  }
  if (c.kind != EagleKind::peagle) {
    if (c.mask_token_id != -1) fail(source, "mask_token_id is only used by P-EAGLE heads, got " + std::to_string(c.mask_token_id));
    if (c.trained_depth != 0) fail(source, "trained_depth is only used by P-EAGLE heads");
  }
  if (c.kind == EagleKind::mtp) {
    if (!c.aux_layers.empty()) fail(source, "an MTP module takes no aux layers, got " + to_str(c.aux_layers));
    if (c.draft_vocab != c.target_vocab) {
      fail(source, "an MTP module drafts over the whole vocabulary: draft_vocab_size " + std::to_string(c.draft_vocab) +
                       " must equal vocab_size " + std::to_string(c.target_vocab));
    }
    if (c.target_hidden != c.layer.hidden_size) {
      fail(source, "an MTP module's hidden_size " + std::to_string(c.layer.hidden_size) + " must equal the target's " +
                       std::to_string(c.target_hidden) + " (its decoder layer is one of the target's kind)");
    }
    if (c.norm_before_residual || c.fc_bias) fail(source, "norm_before_residual and an fc bias are not MTP options");
    if (c.num_modules < 1 || c.module < 0 || c.module >= c.num_modules) {
      fail(source, "MTP module " + std::to_string(c.module) + " outside [0, " + std::to_string(c.num_modules) + ")");
    }
    if (c.target_layers < 0) fail(source, "target_layers must not be negative");
    return;
  }
  if (c.kind == EagleKind::eagle1) {
    if (!c.aux_layers.empty()) fail(source, "an EAGLE-1 head takes no aux layers, got " + to_str(c.aux_layers));
    if (c.draft_vocab != c.target_vocab) {
      fail(source, "an EAGLE-1 head uses the target's LM head: draft_vocab_size " + std::to_string(c.draft_vocab) +
                       " must equal vocab_size " + std::to_string(c.target_vocab));
    }
    if (c.target_hidden != c.layer.hidden_size) {
      fail(source, "an EAGLE-1 head's hidden_size " + std::to_string(c.layer.hidden_size) +
                       " must equal the target hidden size " + std::to_string(c.target_hidden) +
                       " (its output goes through the target's LM head)");
    }
    if (c.norm_before_residual) fail(source, "norm_before_residual is not an EAGLE-1 option");
    return;
  }
  if (c.aux_layers.empty()) fail(source, "an " + kind + " head needs at least one aux layer");
  for (std::size_t i = 0; i < c.aux_layers.size(); ++i) {
    if (c.aux_layers[i] < 0 || (i > 0 && c.aux_layers[i] <= c.aux_layers[i - 1])) {
      fail(source, "aux layers " + to_str(c.aux_layers) + " must be distinct, non-negative and ascending");
    }
  }
  if (c.kind == EagleKind::peagle) {
    if (c.mask_token_id < 0 || c.mask_token_id >= c.target_vocab) {
      fail(source, "P-EAGLE mask token id " + std::to_string(c.mask_token_id) + " is outside the vocabulary [0, " +
                       std::to_string(c.target_vocab) + ")");
    }
    if (c.trained_depth < 0) fail(source, "trained_depth must not be negative, got " + std::to_string(c.trained_depth));
  }
}

void check_eagle_config_against_target(const EagleHeadConfig& c, const ModelConfig& t, const std::string& source) {
  if (c.target_vocab != t.vocab_size) {
    fail(source, "head vocab_size " + std::to_string(c.target_vocab) + " does not match the target's vocab_size " +
                     std::to_string(t.vocab_size));
  }
  if (c.target_hidden != t.hidden_size) {
    fail(source, "head target_hidden_size " + std::to_string(c.target_hidden) +
                     " does not match the target's hidden_size " + std::to_string(t.hidden_size));
  }
  if (!c.own_embeddings && c.layer.hidden_size != t.hidden_size) {
    fail(source, "the head has no embed_tokens.weight and its hidden_size " + std::to_string(c.layer.hidden_size) +
                     " differs from the target's " + std::to_string(t.hidden_size) + ", so it cannot share the target's embeddings");
  }
  for (int a : c.aux_layers) {
    if (a > t.num_hidden_layers) {
      fail(source, "aux layer " + std::to_string(a) + " is outside [0, " + std::to_string(t.num_hidden_layers) +
                       "] for a target with " + std::to_string(t.num_hidden_layers) + " layers");
    }
  }
}

EagleHeadConfig parse_eagle_config(const json& j, const std::vector<std::string>& names, const std::string& source) {
  if (!j.is_object()) fail(source, std::string("config must be a JSON object, got ") + j.type_name());
  auto has = [&](const std::string& n) { return std::binary_search(names.begin(), names.end(), n); };
  EagleHeadConfig c;
  const json* extras = &j;  // where draft_vocab_size and friends live
  if (j.contains("speculators_model_type")) {
    const json& t = j.at("speculators_model_type");
    const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
    if (type == "eagle3") {
      c.kind = EagleKind::eagle3;
    } else if (type == "peagle") {
      c.kind = EagleKind::peagle;
    } else {
      fail(source, "speculators_model_type '" + type + "' is not supported (expected eagle3, peagle or mtp)");
    }
    c.layout = "speculators";
    if (!j.contains("transformer_layer_config") || !j.at("transformer_layer_config").is_object()) {
      fail(source, "speculators config has no 'transformer_layer_config' object");
    }
    c.layer = parse_model_config(j.at("transformer_layer_config"), source + " (transformer_layer_config)");
    if (c.kind == EagleKind::peagle) {
      // The number of tokens the head proposes per step: the depth it was trained for.
      const json* sc = j.contains("speculators_config") ? &j.at("speculators_config") : nullptr;
      if (sc && sc->is_object() && sc->contains("proposal_methods") && sc->at("proposal_methods").is_array() &&
          !sc->at("proposal_methods").empty() && sc->at("proposal_methods").at(0).is_object()) {
        c.trained_depth = get_int(sc->at("proposal_methods").at(0), "speculative_tokens", 0, source,
                                  "speculators_config.proposal_methods[0].");
      }
    }
  } else {
    c.layer = parse_model_config(j, source);
    const bool peagle = has("mask_hidden") || present(j, "mask_token_id") || present(j, "pard_token") ||
                        present(j, "ptd_token_id");
    const bool eagle3 = has("midlayer.self_attn.q_proj.weight") || has("midlayer.hidden_norm.weight") ||
                        present(j, "draft_vocab_size");
    const bool eagle1 = has("layers.0.self_attn.q_proj.weight") && has("fc.weight");
    if (peagle) {
      c.kind = EagleKind::peagle;
      c.layout = "aws";
      c.trained_depth = get_int(j, "trained_depth", 0, source);
    } else if (eagle3) {
      c.kind = EagleKind::eagle3;
      c.layout = "safeailab";
    } else if (eagle1) {
      c.kind = EagleKind::eagle1;
      c.layout = "safeailab";
    } else {
      fail(source, "cannot tell which drafter head this is: expected a speculators config "
                   "(speculators_model_type), P-EAGLE's mask_hidden / ptd_token_id, EAGLE-3's midlayer.* tensors, "
                   "or EAGLE-1's fc.weight with layers.0.*");
    }
  }
  reject_unsupported_options(j, source);
  c.num_layers = c.layer.num_hidden_layers;
  c.target_vocab = c.layer.vocab_size;
  c.own_embeddings = has("embed_tokens.weight");
  if (c.kind == EagleKind::eagle1) {
    c.target_hidden = c.layer.hidden_size;
    c.draft_vocab = c.target_vocab;
    c.fc_bias = get_bool(j, "bias", true, source);  // SafeAILab's default
  } else {
    c.draft_vocab = get_int(*extras, "draft_vocab_size", c.target_vocab, source);
    c.target_hidden = get_int(*extras, "target_hidden_size", c.layer.hidden_size, source);
    c.norm_before_residual = get_bool(*extras, "norm_before_residual", false, source);
    c.aux_layers = aux_layers_from(*extras, source);
    c.fc_bias = has("fc.bias");
    if (c.kind == EagleKind::peagle) c.mask_token_id = mask_token_from(*extras, source);
  }
  if (c.kind != EagleKind::eagle1 && c.aux_layers.empty()) {
    // Filled in from the target by the loader; validate the rest with a placeholder.
    EagleHeadConfig probe = c;
    probe.aux_layers = {0};
    validate_eagle_config(probe, source);
  } else {
    validate_eagle_config(c, source);
  }
  return c;
}

json eagle_config_to_json(const EagleHeadConfig& c, int target_layers, const std::string& target_architecture) {
  if (c.kind == EagleKind::mtp) return mtp_config_to_json(c, target_architecture);
  bool aux_default = false;
  if (c.kind != EagleKind::eagle1) {
    try {
      aux_default = default_aux_layers(target_layers) == c.aux_layers;
    } catch (const Error&) {
      aux_default = false;
    }
  }
  const std::string kind = eagle_kind_name(c.kind);
  json j;
  if (c.layout == "speculators") {
    j["architectures"] = json::array({c.kind == EagleKind::peagle ? "PEagleSpeculator" : "Eagle3Speculator"});
    j["speculators_model_type"] = kind;
    j["transformer_layer_config"] = model_config_to_json(c.layer);
    j["draft_vocab_size"] = c.draft_vocab;
    j["target_hidden_size"] = c.target_hidden;
    j["eagle_aux_hidden_state_layer_ids"] = c.aux_layers;
    j["norm_before_residual"] = c.norm_before_residual;
    j["norm_before_fc"] = false;
    if (c.kind == EagleKind::peagle) j["mask_token_id"] = c.mask_token_id;
    json method = {{"proposal_type", "greedy"}};
    if (c.trained_depth > 0) method["speculative_tokens"] = c.trained_depth;
    j["speculators_config"] = {
        {"algorithm", kind},
        {"default_proposal_method", "greedy"},
        {"proposal_methods", json::array({method})},
        {"verifier", {{"architectures", json::array({target_architecture})}, {"name_or_path", nullptr}}}};
    j["torch_dtype"] = c.layer.torch_dtype;
    return j;
  }
  j = model_config_to_json(c.layer);
  if (c.kind == EagleKind::eagle1) {
    j["bias"] = c.fc_bias;
    return j;
  }
  j["draft_vocab_size"] = c.draft_vocab;
  if (c.target_hidden != c.layer.hidden_size) j["target_hidden_size"] = c.target_hidden;
  if (c.norm_before_residual) j["norm_before_residual"] = true;
  if (!aux_default) j["eagle_aux_hidden_state_layer_ids"] = c.aux_layers;
  if (c.kind == EagleKind::peagle) {
    j["ptd_token_id"] = c.mask_token_id;
    if (c.trained_depth > 0) j["trained_depth"] = c.trained_depth;
  }
  return j;
}

}  // namespace specdec
