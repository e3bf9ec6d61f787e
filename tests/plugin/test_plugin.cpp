// A plug-in for the loader's tests (test_plugin_loader.cpp). What its table says is chosen when the
// entry point runs, by SPECDEC_TEST_PLUGIN_MODE: ok (loads the checkpoint into the reference
// Transformer), abi, version, toolchain, digest (a mismatch of that field), null (no table),
// noname, noload (no load_model), throws (load_model throws), vocab (a model of another
// vocabulary), head (a head engine computing in the reference's code), nullhead (an engine
// factory that gives none).
// The tests load copies of the library under different names, so each copy keeps its own table.
#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/plugin_api.hpp"
#include "reference/core/error.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"

namespace {

std::unique_ptr<specdec::LanguageModel> load_ok(const std::filesystem::path& p) {
  specdec::LlamaModel m = specdec::load_llama_checkpoint(p);
  return std::make_unique<specdec::Transformer>(std::move(m.config), std::move(m.weights));
}

std::unique_ptr<specdec::LanguageModel> load_throws(const std::filesystem::path& p) {
  throw specdec::Error("test plugin: refusing " + p.string());
}

// A model whose config claims another vocabulary than the checkpoint's.
class OtherVocab final : public specdec::LanguageModel {
 public:
  explicit OtherVocab(specdec::ModelConfig c) : c_(std::move(c)) { c_.vocab_size = 7; }
  const specdec::ModelConfig& config() const override { return c_; }
  std::unique_ptr<specdec::KVCache> new_cache(int) const override { return nullptr; }
  specdec::ForwardResult forward(specdec::KVCache&, const specdec::ForwardRequest&) const override { return {}; }

 private:
  specdec::ModelConfig c_;
};

// A head engine that computes in the reference's code (what a real one must match), named "test".
class RefEngine final : public specdec::EagleHeadEngine {
 public:
  explicit RefEngine(const specdec::EagleHead& head) : head_(head.with_engine(nullptr)) {}
  std::string name() const override { return "test"; }
  std::unique_ptr<specdec::KVCache> new_cache(int capacity) const override { return head_.new_cache(capacity); }
  specdec::EagleHead::Output forward(specdec::KVCache& cache, const specdec::EagleHead::Input& in) const override {
    return head_.forward(cache, in);
  }

 private:
  specdec::EagleHead head_;
};

std::shared_ptr<const specdec::EagleHeadEngine> make_engine(const specdec::EagleHead& head) {
  return std::make_shared<RefEngine>(head);
}
std::shared_ptr<const specdec::EagleHeadEngine> make_no_engine(const specdec::EagleHead&) { return nullptr; }

std::unique_ptr<specdec::LanguageModel> load_vocab(const std::filesystem::path& p) {
  return std::make_unique<OtherVocab>(specdec::load_llama_checkpoint(p).config);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const specdec::plugin::PluginV1* specdec_plugin_entry() {
  static specdec::plugin::PluginV1 table{specdec::plugin::kAbiVersion, specdec::kVersion, SPECDEC_PLUGIN_TOOLCHAIN,
                                         specdec::plugin::kHeadersDigest, "test", "the loader's test plugin", &load_ok, nullptr, nullptr, nullptr};
  const char* env = std::getenv("SPECDEC_TEST_PLUGIN_MODE");
  const std::string mode = env ? env : "ok";
  if (mode == "abi") table.abi_version = 99;
  if (mode == "abi1") table.abi_version = 1;
  if (mode == "version") table.specdec_version = "0.0.0-other";
  if (mode == "toolchain") table.toolchain = "othercc-1 otherlib";
  if (mode == "digest") table.headers_digest = "sha256:0";
  if (mode == "null") return nullptr;
  if (mode == "noname") table.name = "";
  if (mode == "noload") table.load_model = nullptr;
  if (mode == "throws") table.load_model = &load_throws;
  if (mode == "vocab") table.load_model = &load_vocab;
  if (mode == "head") table.make_head_engine = &make_engine;
  if (mode == "nullhead") table.make_head_engine = &make_no_engine;
  return &table;
}
