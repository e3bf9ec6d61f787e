#include "runtime/decode_request.hpp"

#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/fingerprint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/ops.hpp"
#include "runtime/backend.hpp"
#include "runtime/thread_count.hpp"
#include "text/load_tokenizer.hpp"

namespace specdec {

LoadedModel load_model(const std::string& path, const std::string& backend) {
  check_backend(backend, "--backend");
  LoadedModel m;
  m.path = path;
  m.backend = backend;
  if (backend == "reference") {
    LlamaModel loaded = load_llama_checkpoint(path);
    m.config = loaded.config;
    m.model_ = std::make_unique<Transformer>(std::move(loaded.config), std::move(loaded.weights));
  } else {
    m.config = load_checkpoint_config(path);
    m.backend_model = load_backend(backend, path);
  }
  m.stored_dtype = m.config.torch_dtype;
  m.tokenizer = text::load_tokenizer(path, m.config.bos_token_id);
  if (m.tokenizer && m.tokenizer->size() > m.config.vocab_size) {
    throw Error(m.tokenizer->description() + " has token ids up to " + std::to_string(m.tokenizer->size() - 1) +
                ", but the model's config has vocab_size " + std::to_string(m.config.vocab_size) +
                ": the tokenizer and the model do not belong together");
  }
  return m;
}

const Transformer& LoadedModel::reference() const {
  if (!model_) {
    LlamaModel loaded = load_llama_checkpoint(path);
    model_ = std::make_unique<Transformer>(std::move(loaded.config), std::move(loaded.weights));
  }
  return *model_;
}

std::unique_ptr<Transformer> LoadedModel::take_reference() {
  (void)reference();
  if (fingerprint_.empty()) fingerprint_ = weights_fingerprint(model_->weights());
  return std::move(model_);
}

TargetTensors LoadedModel::head_target() const {
  if (model_) return TargetTensors(*model_);
  const bool lent = backend_model && backend_lends_target_tensors(backend);
  if (!shared_) {
    auto s = std::make_unique<SharedTensors>();
    if (lent) {  // the backend's own packed tensors serve the head (bind_head with forward_model())
      s->config = config;
      shared_ = std::move(s);
      return TargetTensors(shared_->config);
    }
    const CheckpointReader reader(path);
    const ModelConfig& c = reader.config();
    s->config = c;
    s->embed_tokens = reader.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size);
    if (!c.tie_word_embeddings) {
      reader.check_shape("lm_head.weight", c.vocab_size, c.hidden_size, " (config.json has tie_word_embeddings false)");
      s->lm_head = reader.matrix("lm_head.weight", c.vocab_size, c.hidden_size);
    }
    shared_ = std::move(s);
  }
  const SharedTensors& s = *shared_;
  if (lent) return TargetTensors(s.config);
  return TargetTensors(s.config, s.embed_tokens, s.config.tie_word_embeddings ? s.embed_tokens : s.lm_head);
}

const std::string& LoadedModel::fingerprint() const {
  if (fingerprint_.empty())
    fingerprint_ = model_ ? weights_fingerprint(model_->weights()) : weights_fingerprint(CheckpointReader(path));
  return fingerprint_;
}

std::vector<int32_t> prompt_tokens(const DecodeArgs& a, const LoadedModel& m) {
  if (!a.prompt.empty() && !a.prompt_ids.empty()) throw Error("give either --prompt or --prompt-ids, not both");
  std::vector<int32_t> ids;
  if (!a.prompt_ids.empty()) {
    std::stringstream ss(a.prompt_ids);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || v < 0 || v >= m.config.vocab_size) {
        throw Error("--prompt-ids: '" + item + "' is not a token id in [0, " + std::to_string(m.config.vocab_size) + ")");
      }
      ids.push_back(static_cast<int32_t>(v));
    }
  } else if (!a.prompt.empty()) {
    if (!m.tokenizer) {
      throw Error(m.path + " has no tokenizer (tokenizer.json, tokenizer.model or vocab.json), so text prompts cannot be encoded; "
                  "give --prompt-ids instead");
    }
    ids = m.tokenizer->encode(a.prompt, true);
  }
  if (ids.empty()) throw Error("no prompt: give --prompt TEXT or --prompt-ids 1,2,3");
  return ids;
}

SamplingParams sampling_params(const DecodeArgs& a) {
  SamplingParams p;
  p.mode = parse_sampling_mode(a.sampling);
  p.temperature = a.temperature;
  p.top_k = a.top_k;
  p.top_p = a.top_p;
  p.seed = a.seed;
  p.validate();
  return p;
}

GenerationOptions generation_options(const DecodeArgs& a) {
  if (a.max_new_tokens < 0) throw Error("--max-new-tokens must be >= 0");
  GenerationOptions o;
  o.max_new_tokens = a.max_new_tokens;
  o.stop_at_eos = !a.ignore_eos;
  o.sequence = a.sequence;
  return o;
}

void apply_threads(int threads) {
  if (threads < 0) throw Error("--threads must be >= 0 (0 = the cores other processes are not busy on), got " + std::to_string(threads));
  if (threads > kMaxThreads)
    throw Error("--threads is " + std::to_string(threads) + ", more than specdec supports (" + std::to_string(kMaxThreads) + ")");
  ops::set_num_threads(threads > 0 ? threads : automatic_thread_count(machine_load()));
}

}  // namespace specdec
