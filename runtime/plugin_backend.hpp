#pragma once
// Loading plug-in backends (`--backend plugin:PATH.so`, plugin_api.hpp): dlopen, the entry symbol,
// the ABI / version / toolchain checks, and models and head engines made by the plug-in's
// factories. A library is loaded once per path and never unloaded.
#include <filesystem>
#include <memory>
#include <string>

#include "runtime/plugin_api.hpp"

namespace specdec::plugin {

// "plugin:" — the prefix of a plug-in backend's name.
inline constexpr const char* kBackendPrefix = "plugin:";
// Whether `backend` names a plug-in ("plugin:PATH").
bool is_plugin_backend(const std::string& backend);

// A loaded, checked plug-in.
struct LoadedPlugin {
  std::string path;  // as given after "plugin:"
  const PluginV1* table = nullptr;
};

// Loads (once per path) and checks the plug-in named by `backend` ("plugin:PATH"). Throws
// specdec::Error naming the path and what was expected: no path given, file not found, not a
// loadable shared library (dlerror's message), no specdec_plugin_entry symbol, a null table, an
// ABI version, specdec version, headers digest or toolchain other than the loader's, a missing load_model.
const LoadedPlugin& load_plugin(const std::string& backend);

// The plug-in's model for a checkpoint: load_model(path), with the factory's exceptions rethrown
// as specdec::Error naming the plug-in, and the result checked against the checkpoint's
// config.json (vocabulary size, hidden size, layer count).
std::unique_ptr<LanguageModel> load_plugin_model(const std::string& backend, const std::filesystem::path& checkpoint);
// The same from in-memory weights (make_model); throws if the plug-in has no make_model.
std::unique_ptr<LanguageModel> make_plugin_model(const std::string& backend, const ModelConfig& config,
                                                 const LlamaWeights& weights, Dtype precision);
// `head` computing on the plug-in's engine, or in the reference's code if it has none.
EagleHead bind_plugin_head(const std::string& backend, const EagleHead& head);

// For a model made by this file's functions: the plug-in's name ("plugin:NAME"), else empty.
std::string plugin_model_name(const LanguageModel& model);
// For a model made by this file's functions: its weight bytes per single-token forward (the
// plug-in's weight_bytes, else fp32 of the config's shapes); negative for any other model.
double plugin_weight_bytes(const LanguageModel& model);

}  // namespace specdec::plugin
