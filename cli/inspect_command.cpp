// specdec inspect: summarise a checkpoint (directory, .safetensors or GGUF file) or an HDF5 trace.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "cli/options.hpp"
#include "reference/core/error.hpp"
#include "reference/drafters/eagle_config.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/drafters/mtp_checkpoint.hpp"
#include "reference/methods/registry.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/gguf.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "text/load_tokenizer.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/model/presets.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"
#include "reference/io/json_input.hpp"

namespace specdec::cli {

namespace {

bool is_hdf5(const std::filesystem::path& p) {
  static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  if (!std::filesystem::is_regular_file(p)) return false;  // opening a FIFO would block
  std::ifstream in(p, std::ios::binary);
  char head[8] = {};
  return in.read(head, 8) && std::equal(head, head + 8, signature);
}

std::string join(const std::vector<int32_t>& v, size_t limit) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < limit; ++i) {
    if (i) s += ' ';
    s += std::to_string(v[i]);
  }
  if (v.size() > limit) {  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on chained temporaries
    s += " … (";
    s += std::to_string(v.size());
    s += " in all)";
  }
  return s;
}

// The tokenizer of the checkpoint at `model`, when it is there and has one; null otherwise (a
// trace's recorded model may be elsewhere now).
std::unique_ptr<text::Tokenizer> tokenizer_of(const std::string& model) {
  try {
    return text::load_tokenizer(model, load_checkpoint_config(model).bos_token_id);
  } catch (const std::exception&) {
    return nullptr;
  }
}

int inspect_trace(const std::filesystem::path& path, bool json, CommandIO& io) {
  const Trace t = read_trace(path);
  // The prompt and output as text, with the recorded target's tokenizer when it is at hand.
  const auto target = t.meta.models.find("target");
  const std::unique_ptr<text::Tokenizer> tokenizer = target == t.meta.models.end() ? nullptr : tokenizer_of(target->second.path);
  size_t full_rows = 0, topk_rows = 0, drafted = 0;
  for (const StepRecord& s : t.steps) {
    for (const LogitRecord& r : s.target_logits) (r.is_full() ? full_rows : topk_rows)++;
    drafted += s.draft_tokens.size();
  }
  nlohmann::json models = nlohmann::json::object();
  for (const auto& [role, info] : t.meta.models) models[role] = {{"path", info.path}, {"fingerprint", info.fingerprint}};
  nlohmann::json j = {
      {"kind", "trace"},
      {"path", path.string()},
      {"schema_version", t.meta.schema_version},
      {"exactness_contract", t.meta.exactness_contract.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.meta.exactness_contract)},
      {"specdec_version", t.meta.specdec_version},
      {"created_utc", t.meta.created_utc},
      {"method", t.meta.method},
      {"seed", t.meta.seed},
      {"sampling", parse_json(t.meta.sampling_json, path.string() + ": /meta/sampling_json")},
      {"models", models},
      {"prompt_tokens", t.prompt.size()},
      {"steps", t.steps.size()},
      {"output_tokens", t.output.size()},
      {"draft_tokens", drafted},
      {"stop_reason", t.stop_reason},
      {"target_logit_rows", {{"full", full_rows}, {"topk", topk_rows}}},
      // measured when the trace was recorded, apart from what it records
      {"timing", {{"prefill_ms", t.timing.prefill_ns / 1e6}, {"total_ms", t.timing.total_ns / 1e6}}},
  };
  if (tokenizer) {
    j["prompt_text"] = tokenizer->decode(t.prompt);
    j["output_text"] = tokenizer->decode(t.output);
  }
  if (json) {
    io.out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  // Traces of another contract are readable, but validation refuses them: say so here.
  std::string contract = t.meta.exactness_contract.empty() ? "none recorded" : t.meta.exactness_contract;
  if (t.meta.exactness_contract != exact::kContractVersion) {
    contract += std::string(" (this specdec: ") + exact::kContractVersion + "; re-record to validate against it)";
  }
  io.out << "trace      " << path.string() << " (schema " << t.meta.schema_version << ", written by specdec "
         << t.meta.specdec_version << " at " << t.meta.created_utc << ")\n"
         << "contract   exactness contract " << contract << "\n"
         << "method     " << t.meta.method << ", sampling " << t.meta.sampling_json << "\n";
  for (const auto& [role, info] : t.meta.models) io.out << "model      " << role << ": " << info.path << " (" << info.fingerprint << ")\n";
  io.out << "prompt     " << join(t.prompt, 16) << "\n";
  if (tokenizer) io.out << "           \"" << printable(tokenizer->decode(t.prompt)) << "\"\n";
  io.out << "output     " << join(t.output, 16) << "\n";
  if (tokenizer) io.out << "           \"" << printable(tokenizer->decode(t.output)) << "\"\n";
  io.out
         << "steps      " << t.steps.size() << ", stop: " << t.stop_reason << ", target logit rows: " << full_rows << " full, "
         << topk_rows << " top-k\n"
         << "timing     prefill " << t.timing.prefill_ns / 1e6 << " ms, total " << t.timing.total_ns / 1e6 << " ms\n";
  return 0;
}

// Whether `path` is what `specdec forward` writes (its root's description says so).
bool is_forward_file(const std::filesystem::path& path) {
  try {
    const h5::File f = h5::File::open_read_only(path);
    return f.has_attribute("description") && f.read_string_attribute("description").rfind("specdec forward", 0) == 0;
  } catch (const std::exception&) {
    return false;
  }
}

// A `specdec forward` file: what was run, the tokens (with their text when the model's tokenizer
// is at hand) and the shape of every tensor.
int inspect_forward(const std::filesystem::path& path, bool json, CommandIO& io) {
  const h5::File f = h5::File::open_read_only(path);
  const auto attribute = [](const h5::Group& g, const char* name) {
    return g.has_attribute(name) ? g.read_string_attribute(name) : std::string();
  };
  const auto shape = [](const h5::Group& g, const char* name) {
    return g.has_dataset(name) ? g.open_dataset(name).shape() : std::vector<uint64_t>{};
  };
  const auto shown = [](const std::vector<uint64_t>& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + ")";
  };
  const std::string model = attribute(f, "model");
  const std::vector<int32_t> tokens = f.read_vector<int32_t>("tokens");
  const std::unique_ptr<text::Tokenizer> tokenizer = tokenizer_of(model);
  nlohmann::json j = {{"kind", "forward"},
                      {"path", path.string()},
                      {"model", model},
                      {"model_fingerprint", attribute(f, "model_fingerprint")},
                      {"architecture", attribute(f, "architecture")},
                      {"stored_dtype", attribute(f, "stored_dtype")},
                      {"backend", attribute(f, "backend")},
                      {"tokens", tokens},
                      {"logits_shape", shape(f, "logits")},
                      {"hidden_shape", shape(f, "hidden")},
                      {"hidden_convention", attribute(f, "hidden_convention")}};
  if (tokenizer) j["text"] = tokenizer->decode(tokens);
  std::optional<h5::Group> draft;
  if (f.has_group("draft")) {
    draft = f.open_group("draft");
    j["draft"] = {{"drafter", attribute(*draft, "drafter")},     {"kind", attribute(*draft, "kind")},
                  {"layout", attribute(*draft, "layout")},       {"fingerprint", attribute(*draft, "fingerprint")},
                  {"logits_shape", shape(*draft, "logits")},     {"hidden_shape", shape(*draft, "hidden")},
                  {"tokens", draft->read_vector<int32_t>("tokens")}};
  }
  if (json) {
    io.out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  io.out << "forward    " << path.string() << " (" << attribute(f, "description") << ")\n"
         << "model      " << model << " (" << j["model_fingerprint"].get<std::string>() << "), " << j["architecture"].get<std::string>()
         << ", " << j["stored_dtype"].get<std::string>() << ", backend " << j["backend"].get<std::string>() << "\n"
         << "tokens     " << tokens.size() << ": " << join(tokens, 16) << "\n";
  if (tokenizer) io.out << "           \"" << printable(tokenizer->decode(tokens)) << "\"\n";
  io.out << "logits     " << shown(shape(f, "logits")) << "\n"
         << "hidden     " << shown(shape(f, "hidden")) << ": " << j["hidden_convention"].get<std::string>() << "\n";
  if (draft) {
    io.out << "draft      " << attribute(*draft, "kind") << " head " << attribute(*draft, "drafter") << " (" << attribute(*draft, "layout")
           << " layout, " << attribute(*draft, "fingerprint") << "): logits " << shown(shape(*draft, "logits")) << ", hidden "
           << shown(shape(*draft, "hidden")) << "\n";
  }
  return 0;
}

// A drafter head (EAGLE-1, EAGLE-3, P-EAGLE): its config alone, since loading its weights needs
// the target it drafts for.
int inspect_head(const std::filesystem::path& path, const TensorStore& store, bool json, bool tensors,
                 CommandIO& io) {
  const std::filesystem::path dir = std::filesystem::is_directory(path) ? path : path.parent_path();
  const std::filesystem::path config_path = dir / "config.json";
  const nlohmann::json j = read_json_file(config_path.string(), "head config");
  const EagleHeadConfig c = parse_eagle_config(j, store.names(), config_path.string());
  int64_t params = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& name : store.names()) {
    const TensorInfo& info = store.info(name);
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    params += n;
    list.push_back({{"name", name}, {"dtype", dtype_name(info.dtype)}, {"shape", info.shape}});
  }
  if (json) {
    io.out << nlohmann::json{{"kind", "drafter_head"}, {"path", path.string()}, {"head", eagle_kind_name(c.kind)},
                             {"layout", c.layout}, {"layers", c.num_layers}, {"hidden_size", c.hidden()},
                             {"target_hidden_size", c.target_hidden}, {"vocab_size", c.target_vocab},
                             {"draft_vocab_size", c.draft_vocab}, {"aux_layers", c.aux_layers},
                             {"mask_token_id", c.mask_token_id}, {"trained_depth", c.trained_depth},
                             {"parameters", params}, {"tensors", list}}
                  .dump()
           << "\n";
    return 0;
  }
  io.out << "head        " << path.string() << "\n"
         << "kind        " << eagle_kind_name(c.kind) << " (" << c.layout << " layout), " << c.num_layers
         << (c.num_layers == 1 ? " layer" : " layers") << ", hidden " << c.hidden() << ", intermediate "
         << c.layer.intermediate_size << ", heads " << c.layer.num_attention_heads << " (KV "
         << c.layer.num_key_value_heads << ")\n"
         << "target      hidden " << c.target_hidden << ", vocab " << c.target_vocab << " (draft vocab "
         << c.draft_vocab << ")\n";
  if (!c.aux_layers.empty()) {
    io.out << "aux layers ";
    for (int l : c.aux_layers) io.out << " " << l;
    io.out << "\n";
  }
  if (c.kind == EagleKind::peagle) {
    io.out << "parallel    mask token " << c.mask_token_id << ", trained depth "
           << (c.trained_depth ? std::to_string(c.trained_depth) : std::string("unknown")) << "\n";
  }
  io.out << "tensors     " << list.size() << ", " << std::fixed << std::setprecision(2) << params / 1e6
         << "M parameters (load it with a target: generate --method ... --drafter " << path.string() << ")\n";
  if (tensors) {
    for (const auto& t : list) io.out << "  " << t["name"].get<std::string>() << "  " << t["dtype"].get<std::string>() << " " << t["shape"].dump() << "\n";
  }
  return 0;
}

// Medusa heads (FasterDecoding or vLLM layout): config.json and the tensor list; checking them
// against a target needs the target.
int inspect_medusa(const std::filesystem::path& path, bool json, bool tensors, CommandIO& io) {
  const MedusaCheckpointInfo info = read_medusa_checkpoint(path);
  const MedusaConfig& c = info.config;
  const TensorStore store(info.weights);
  int64_t params = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& name : store.names()) {
    const TensorInfo& t = store.info(name);
    params += t.numel();
    list.push_back({{"name", name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
  }
  const bool vllm = c.layout == MedusaLayout::vllm;
  if (json) {
    io.out << nlohmann::json{{"kind", "medusa_heads"}, {"path", path.string()}, {"layout", medusa_layout_name(c.layout)},
                             {"num_heads", c.num_heads}, {"num_layers", c.num_layers}, {"hidden_size", c.hidden},
                             {"vocab_size", c.vocab}, {"fc_bias", c.fc_bias}, {"shared_lm_head", c.shared_lm_head},
                             {"logit_scale", c.logit_scale}, {"base_model", c.base_model},
                             {"weights", info.weights.string()}, {"parameters", params}, {"tensors", list}}
                  .dump()
           << "\n";
    return 0;
  }
  io.out << "medusa      " << path.string() << "\n"
         << "layout      " << medusa_layout_name(c.layout) << (vllm ? " (vLLM models/medusa.py)" : " (FasterDecoding/Medusa)") << "\n"
         << "heads       " << c.num_heads << " heads of " << c.num_layers << (c.num_layers == 1 ? " residual block" : " residual blocks")
         << (c.fc_bias ? " with biases" : " without biases") << ", hidden " << c.hidden << ", vocab " << c.vocab
         << (c.shared_lm_head ? ", one shared projection" : ", a projection each");
  if (c.logit_scale != 1.0f) io.out << ", logit scale " << c.logit_scale;
  io.out << "\n";
  if (!c.base_model.empty()) io.out << "base model  " << c.base_model << "\n";
  io.out << "weights     " << info.weights.string() << "\n"
         << "tensors     " << list.size() << ", " << std::fixed << std::setprecision(2) << params / 1e6
         << "M parameters (load it with a target: generate --method " << method_drafting_with(DrafterNeed::Kind::medusa_heads).name
         << " --drafter " << path.string() << ")\n";
  if (tensors) {
    for (const auto& t : list) io.out << "  " << t["name"].get<std::string>() << "  " << t["dtype"].get<std::string>() << " " << t["shape"].dump() << "\n";
  }
  return 0;
}

// MTP modules (DeepSeek-V3, Qwen3-Next, MiMo, speculators layouts) from config.json and the tensor
// names; their shapes are checked against a target when loaded.
int inspect_mtp(const std::filesystem::path& path, const MtpCheckpointInfo& info, const TensorStore& store, bool json,
                bool tensors, CommandIO& io) {
  const std::string hint = "generate --method " + method_drafting_with(DrafterNeed::Kind::eagle_head, EagleKind::mtp).name +
                           " --drafter " + path.string();
  if (json) {
    io.out << nlohmann::json{{"kind", "mtp_modules"}, {"path", path.string()}, {"layout", info.layout}, {"modules", info.modules},
                             {"layers_per_module", info.layers}, {"own_lm_head", info.own_lm_head},
                             {"own_embeddings", info.own_embeddings}, {"tensors", info.tensors}}
                  .dump()
           << "\n";
    return 0;
  }
  int64_t params = 0;
  for (const std::string& n : info.tensors) {
    int64_t count = 1;
    for (int64_t d : store.info(n).shape) count *= d;
    params += count;
  }
  io.out << "head        " << path.string() << "\n"
         << "kind        mtp (" << info.layout << " layout)" << (info.layout == "mimo" ? ", input_proj reads [hidden; embedding]" : "") << "\n"
         << "modules     " << info.modules << " module" << (info.modules == 1 ? "" : "s") << " of " << info.layers << " decoder layer"
         << (info.layers == 1 ? "" : "s") << " each, " << (info.own_lm_head ? "its own LM head" : "the target's LM head")
         << (info.own_embeddings ? ", its own embeddings" : "") << "\n"
         << "tensors     " << info.tensors.size() << ", " << std::fixed << std::setprecision(2) << params / 1e6
         << "M parameters (load it with its target: " << hint << ")\n";
  if (tensors) {
    for (const std::string& n : info.tensors) io.out << "  " << n << "  " << dtype_name(store.info(n).dtype) << " " << nlohmann::json(store.info(n).shape).dump() << "\n";
  }
  return 0;
}

// A GGUF file: its metadata (every key; arrays shown by size and first elements), the model
// specdec reads from it, and its tensors with their ggml types.
int inspect_gguf(const std::filesystem::path& path, bool json, bool tensors, CommandIO& io) {
  const GgufFile f(path);
  std::map<std::string, uint64_t> by_type;  // ggml type -> tensors
  nlohmann::json list = nlohmann::json::array();
  for (const GgufTensorInfo& t : f.tensors()) {
    ++by_type[ggml_type_name(t.type)];
    list.push_back({{"name", t.name}, {"type", ggml_type_name(t.type)}, {"shape", t.shape()}, {"bytes", t.bytes}});
  }
  nlohmann::json metadata = nlohmann::json::object();
  for (const auto& [key, v] : f.metadata()) metadata[key] = v.summary();
  // A file without token embeddings holds no model (a tokenizer alone, loose tensors): its
  // metadata and tensors are still shown.
  // The config, and the fingerprint streamed from the file (no fp32 copy of the model).
  struct Model {
    ModelConfig config;
    std::string fingerprint;
  };
  std::optional<Model> m;
  if (f.has_tensor("token_embd.weight")) {
    const CheckpointReader reader(path);
    m = Model{reader.config(), weights_fingerprint(reader)};
  }
  const auto tokenizer = f.find("tokenizer.ggml.model") ? text::load_tokenizer(path, m ? m->config.bos_token_id : -1) : nullptr;
  std::string types;
  for (const auto& [name, n] : by_type) types += (types.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  if (json) {
    nlohmann::json j = {{"kind", "gguf"}, {"path", path.string()}, {"version", f.version()}, {"metadata", metadata},
                        {"tokenizer", tokenizer ? tokenizer->description() : "none"}, {"tensors", list}};
    if (m) {
      j["config"] = model_config_to_json(m->config);
      j["parameters"] = parameter_count(m->config);
      j["fingerprint"] = m->fingerprint;
    }
    io.out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  io.out << "gguf        " << path.string() << " (version " << f.version() << ", " << f.metadata().size() << " metadata keys)\n";
  if (m) {
    const ModelConfig& c = m->config;
    io.out << "model       " << c.architecture << " (" << c.model_type << "), " << std::fixed << std::setprecision(2)
           << parameter_count(c) / 1e6 << "M parameters, dequantized to " << c.torch_dtype << "\n"
           << "shape       " << c.num_hidden_layers << " layers, hidden " << c.hidden_size << ", intermediate "
           << c.intermediate_size << ", heads " << c.num_attention_heads << " (KV " << c.num_key_value_heads << ", dim "
           << c.head_dim << "), vocab " << c.vocab_size << (c.tie_word_embeddings ? ", tied head" : ", separate head") << "\n"
           << "numerics    rms_norm_eps " << std::defaultfloat << c.rms_norm_eps << ", rope_theta " << c.rope_theta << "\n";
  } else {
    io.out << "model       none (no token_embd.weight: not a model file)\n";
  }
  io.out << "tensors     " << list.size() << (types.empty() ? "" : ": " + types) << "\n";
  if (m) io.out << "fingerprint " << m->fingerprint << " (of the dequantized weights)\n";
  io.out << "tokenizer   " << (tokenizer ? tokenizer->description() : "none (prompts as token ids)") << "\n"
         << "metadata\n";
  for (const auto& [key, v] : f.metadata()) io.out << "  " << key << " = " << printable(v.summary()) << "\n";
  if (tensors) {
    for (const auto& t : list) io.out << "  " << t["name"].get<std::string>() << "  " << t["type"].get<std::string>() << " " << t["shape"].dump() << "\n";
  }
  return 0;
}

int inspect_checkpoint(const std::filesystem::path& path, bool json, bool tensors, CommandIO& io) {
  if (is_gguf_file(path)) return inspect_gguf(path, json, tensors, io);
  if (is_medusa_checkpoint(path)) return inspect_medusa(path, json, tensors, io);
  const TensorStore store(path);
  if (store.has("fc.weight")) return inspect_head(path, store, json, tensors, io);
  // A folder of MTP modules alone (no target weights): described as such; modules inside a
  // target's checkpoint get a line of their own.
  MtpCheckpointInfo mtp_inside;
  {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::is_directory(path, ec) ? path : path.parent_path();
    const nlohmann::json config = read_drafter_config(dir / "config.json");
    mtp_inside = describe_mtp_checkpoint(config, store.names());
    if (!mtp_inside.layout.empty() && !store.has("model.embed_tokens.weight") && !store.has("embed_tokens.weight")) {
      return inspect_mtp(path, mtp_inside, store, json, tensors, io);
    }
  }
  const CheckpointReader reader(path);
  const ModelConfig& c = reader.config();
  const std::string fingerprint = weights_fingerprint(reader);  // streamed: no fp32 copy of the model
  const auto tokenizer = text::load_tokenizer(path, c.bos_token_id);
  nlohmann::json list = nlohmann::json::array();
  std::set<std::string> files;
  for (const std::string& name : store.names()) {
    const TensorInfo& info = store.info(name);
    files.insert(store.file_of(name).filename().string());
    list.push_back({{"name", name}, {"dtype", dtype_name(info.dtype)}, {"shape", info.shape},
                    {"file", store.file_of(name).filename().string()}});
  }
  if (json) {
    nlohmann::json j = {{"kind", "checkpoint"},
                        {"path", path.string()},
                        {"config", model_config_to_json(c)},
                        {"parameters", parameter_count(c)},
                        {"fingerprint", fingerprint},
                        {"tokenizer", tokenizer ? tokenizer->description() : "none"},
                        {"tensors", list}};
    if (!mtp_inside.layout.empty()) j["mtp_modules"] = {{"layout", mtp_inside.layout}, {"modules", mtp_inside.modules}};
    io.out << j.dump() << "\n";
    return 0;
  }
  io.out << "checkpoint  " << path.string() << "\n"
         << "model       " << c.architecture << " (" << c.model_type << "), " << std::fixed << std::setprecision(2)
         << parameter_count(c) / 1e6 << "M parameters, stored " << c.torch_dtype << "\n"
         << "shape       " << c.num_hidden_layers << " layers, hidden " << c.hidden_size << ", intermediate "
         << c.intermediate_size << ", heads " << c.num_attention_heads << " (KV " << c.num_key_value_heads << ", dim "
         << c.head_dim << "), vocab " << c.vocab_size << (c.tie_word_embeddings ? ", tied head" : ", separate head") << "\n"
         << "numerics    rms_norm_eps " << std::defaultfloat << c.rms_norm_eps << ", rope_theta " << c.rope_theta << "\n"
         << "tensors     " << list.size() << " in " << files.size() << (files.size() == 1 ? " file\n" : " files\n")
         << "fingerprint " << fingerprint << "\n"
         << "tokenizer   " << (tokenizer ? tokenizer->description() : "none (prompts as token ids)") << "\n";
  if (!mtp_inside.layout.empty()) {
    io.out << "mtp         " << mtp_inside.modules << " module" << (mtp_inside.modules == 1 ? "" : "s") << " (mtp ("
           << mtp_inside.layout << " layout)) in this checkpoint: generate --method "
           << method_drafting_with(DrafterNeed::Kind::eagle_head, EagleKind::mtp).name << " --drafter " << path.string() << "\n";
  }
  if (tensors) {
    for (const auto& t : list) io.out << "  " << t["name"].get<std::string>() << "  " << t["dtype"].get<std::string>() << " " << t["shape"].dump() << "  " << t["file"].get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace

int run_inspect(const std::vector<std::string>& args, CommandIO& io) {
  std::string path;
  bool json = false, tensors = false;
  po::options_description desc("inspect options");
  desc.add_options()
      ("path", po::value(&path)->required(), "checkpoint directory, .safetensors or GGUF file, trace (.h5) or a specdec forward output (.h5)")
      ("json", po::bool_switch(&json), "print one JSON object")
      ("tensors", po::bool_switch(&tensors), "list every tensor of a checkpoint");
  po::positional_options_description pos;
  pos.add("path", 1);
  if (!parse_options(args, desc, io, "specdec inspect PATH [--json] [--tensors]", &pos)) return 0;
  if (!std::filesystem::exists(path)) throw Error(path + ": no such file or directory");
  if (is_hdf5(path)) return is_forward_file(path) ? inspect_forward(path, json, io) : inspect_trace(path, json, io);
  return inspect_checkpoint(path, json, tensors, io);
}

}  // namespace specdec::cli
