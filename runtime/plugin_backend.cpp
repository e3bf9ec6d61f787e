#include "runtime/plugin_backend.hpp"

#include <dlfcn.h>

#include <exception>
#include <map>
#include <mutex>
#include <system_error>

#include "reference/core/error.hpp"

namespace specdec::plugin {

namespace {

std::string path_of(const std::string& backend) { return backend.substr(std::string(kBackendPrefix).size()); }

// A model of a plug-in: forwards to the plug-in's model and remembers where it came from.
class PluginModel final : public LanguageModel {
 public:
  PluginModel(const LoadedPlugin& plugin, std::unique_ptr<LanguageModel> inner) : plugin_(plugin), inner_(std::move(inner)) {}
  const ModelConfig& config() const override { return inner_->config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_->new_cache(capacity); }
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override { return inner_->forward(cache, request); }

  const LoadedPlugin& plugin() const { return plugin_; }
  const LanguageModel& inner() const { return *inner_; }

 private:
  const LoadedPlugin& plugin_;
  std::unique_ptr<LanguageModel> inner_;
};

std::string where(const LoadedPlugin& p) { return "plugin " + p.path + " ('" + p.table->name + "')"; }

void check_table(const std::string& path, const PluginV1* t) {
  const std::string at = "plugin " + path + ": ";
  if (!t) throw Error(at + SPECDEC_PLUGIN_ENTRY_SYMBOL "() returned null; expected a pointer to its specdec::plugin::PluginV1 table");
  // abi_version is the first member of every version of the table, so it can be read first.
  if (t->abi_version != kAbiVersion) {
    throw Error(at + "plugin ABI version " + std::to_string(t->abi_version) + ", expected " + std::to_string(kAbiVersion) +
                " (rebuild the plugin against this specdec's plugin_api.hpp" +
                (t->abi_version == 1 ? ", now included as \"runtime/plugin_api.hpp\" instead of \"experiments/runtime/plugin_api.hpp\")"
                                     : ")"));
  }
  const std::string version = t->specdec_version ? t->specdec_version : "(null)";
  if (version != kVersion) {
    throw Error(at + "built against specdec " + version + ", expected " + kVersion +
                " (a plugin shares C++ types with specdec: rebuild it against this specdec's installed headers)");
  }
  const std::string toolchain = t->toolchain ? t->toolchain : "(null)";
  if (toolchain != SPECDEC_PLUGIN_TOOLCHAIN) {
    throw Error(at + "built with toolchain '" + toolchain + "', expected '" SPECDEC_PLUGIN_TOOLCHAIN
                "' (a plugin shares C++ types with specdec: build it with the same compiler and standard library)");
  }
  const std::string digest = t->headers_digest ? t->headers_digest : "(null)";
  if (digest != kHeadersDigest) {
    throw Error(at + "built against specdec headers with digest " + digest + ", expected " + kHeadersDigest +
                " (the headers changed since the plugin was built: rebuild it against this specdec's installed headers)");
  }
  if (!t->name || !*t->name) throw Error(at + "the table has no name; expected a short non-empty name");
  if (!t->load_model) throw Error(at + "the table's load_model is null; expected a factory making a LanguageModel from a checkpoint");
}

template <typename F>
auto call_factory(const LoadedPlugin& p, const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw Error(where(p) + ": " + what + " failed: " + e.what());
  } catch (...) {
    throw Error(where(p) + ": " + what + " threw an exception that is not a std::exception");
  }
}

void check_model(const LoadedPlugin& p, const std::string& what, const LanguageModel* m, const ModelConfig& expected,
                 const std::string& source) {
  if (!m) throw Error(where(p) + ": " + what + " returned no model");
  const ModelConfig& c = m->config();
  auto mismatch = [&](const char* field, int got, int want) {
    if (got != want) {
      throw Error(where(p) + ": " + what + " gave a model with " + field + " " + std::to_string(got) + ", expected " +
                  std::to_string(want) + " (" + source + ")");
    }
  };
  mismatch("vocab_size", c.vocab_size, expected.vocab_size);
  mismatch("hidden_size", c.hidden_size, expected.hidden_size);
  mismatch("num_hidden_layers", c.num_hidden_layers, expected.num_hidden_layers);
}

}  // namespace

bool is_plugin_backend(const std::string& backend) { return backend.rfind(kBackendPrefix, 0) == 0; }

const LoadedPlugin& load_plugin(const std::string& backend) {
  static std::mutex mutex;
  static std::map<std::string, LoadedPlugin> loaded;  // never unloaded: models and caches may outlive any scope
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string path = path_of(backend);
  if (auto it = loaded.find(path); it != loaded.end()) return it->second;

  if (path.empty()) throw Error("no library path after 'plugin:'; expected plugin:PATH to a shared library (.so)");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error("plugin " + path + ": no such file; expected a shared library (.so) exporting " SPECDEC_PLUGIN_ENTRY_SYMBOL);
  }
  if (std::filesystem::is_directory(path, ec)) throw Error("plugin " + path + ": is a directory; expected a shared library (.so)");
  // dlopen of a FIFO blocks forever and of a device reads without end.
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("plugin " + path + ": is not a regular file (a pipe, device or socket); expected a shared library (.so)");
  // dlopen searches the library path for a name without a slash; a path given is meant as a path.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error("plugin " + path + ": cannot be loaded as a shared library: " + (why ? why : "unknown dlopen error"));
  }
  dlerror();
  void* symbol = dlsym(handle, SPECDEC_PLUGIN_ENTRY_SYMBOL);
  if (!symbol) {
    const char* err = dlerror();
    const std::string why = err ? err : "not found";  // copied: dlclose may invalidate it
    dlclose(handle);
    throw Error("plugin " + path + ": no symbol " SPECDEC_PLUGIN_ENTRY_SYMBOL " (" + why +
                "); expected extern \"C\" const specdec::plugin::PluginV1* " SPECDEC_PLUGIN_ENTRY_SYMBOL
                "() (SPECDEC_PLUGIN_ENTRY in runtime/plugin_api.hpp)");
  }
  using Entry = const PluginV1* (*)();
  const PluginV1* table = nullptr;
  try {
    table = reinterpret_cast<Entry>(symbol)();
  } catch (const std::exception& e) {
    throw Error("plugin " + path + ": " SPECDEC_PLUGIN_ENTRY_SYMBOL "() threw: " + e.what());
  }
  try {
    check_table(path, table);
  } catch (...) {
    dlclose(handle);
    throw;
  }
  return loaded.emplace(path, LoadedPlugin{path, table}).first->second;
}

std::unique_ptr<LanguageModel> load_plugin_model(const std::string& backend, const std::filesystem::path& checkpoint) {
  const LoadedPlugin& p = load_plugin(backend);
  const std::filesystem::path dir = std::filesystem::is_directory(checkpoint) ? checkpoint : checkpoint.parent_path();
  const ModelConfig expected = load_model_config(dir / "config.json");
  std::unique_ptr<LanguageModel> m =
      call_factory(p, "load_model(" + checkpoint.string() + ")", [&] { return p.table->load_model(checkpoint); });
  check_model(p, "load_model(" + checkpoint.string() + ")", m.get(), expected, (dir / "config.json").string());
  return std::make_unique<PluginModel>(p, std::move(m));
}

std::unique_ptr<LanguageModel> make_plugin_model(const std::string& backend, const ModelConfig& config,
                                                 const LlamaWeights& weights, Dtype precision) {
  const LoadedPlugin& p = load_plugin(backend);
  if (!p.table->make_model) {
    throw Error(where(p) + ": has no make_model, so it cannot build a model from in-memory weights; give it a checkpoint");
  }
  std::unique_ptr<LanguageModel> m = call_factory(p, "make_model", [&] { return p.table->make_model(config, weights, precision); });
  check_model(p, "make_model", m.get(), config, "the config it was given");
  return std::make_unique<PluginModel>(p, std::move(m));
}

EagleHead bind_plugin_head(const std::string& backend, const EagleHead& head) {
  const LoadedPlugin& p = load_plugin(backend);
  if (!p.table->make_head_engine) return head.with_engine(nullptr);
  std::shared_ptr<const EagleHeadEngine> engine =
      call_factory(p, "make_head_engine", [&] { return p.table->make_head_engine(head); });
  if (!engine) throw Error(where(p) + ": make_head_engine returned no engine");
  return head.with_engine(std::move(engine));
}

std::string plugin_model_name(const LanguageModel& model) {
  if (const auto* m = dynamic_cast<const PluginModel*>(&model)) return std::string(kBackendPrefix) + m->plugin().table->name;
  return "";
}

double plugin_weight_bytes(const LanguageModel& model) {
  const auto* m = dynamic_cast<const PluginModel*>(&model);
  if (!m) return -1.0;
  if (m->plugin().table->weight_bytes) return m->plugin().table->weight_bytes(m->inner());
  const ModelConfig& c = model.config();
  const double H = c.hidden_size, I = c.intermediate_size, L = c.num_hidden_layers;
  const double per_layer = H * c.q_dim() + 2.0 * H * c.kv_dim() + c.q_dim() * H + 3.0 * H * I + 2.0 * H;
  return (L * per_layer + H + static_cast<double>(c.vocab_size) * H + H) * sizeof(float);
}

}  // namespace specdec::plugin
