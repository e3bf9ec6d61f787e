#pragma once
// The plug-in backend interface: a shared library that specdec loads with
// `--backend plugin:PATH.so` and whose models run wherever a backend runs (generate, compare,
// record, validate, bench, sweep). The library exports one C symbol,
//
//   extern "C" const specdec::plugin::PluginV1* specdec_plugin_entry();
//
// (write it with SPECDEC_PLUGIN_ENTRY below), returning a table that lives as long as the process:
// the ABI version, the specdec version, headers digest and toolchain it was compiled with, a name, and C++
// factories for the target / draft LM and, optionally, an EAGLE-family head engine. specdec never
// unloads a plug-in, so objects it created (models, KV caches, engines) may be used until exit.
//
// Where this header lives: beside the loader (plugin_backend.hpp) and the built-in backends, and
// installed at the same relative path (P/include/specdec/runtime/plugin_api.hpp, with
// P/include/specdec on the include path), so a plug-in's #include lines read the same in the tree
// and out of it, as do those of every reference header it pulls in (all root-relative).
//
// ABI rule. The table and the factories pass C++ types (LanguageModel, EagleHeadEngine,
// std::filesystem::path, std::unique_ptr, std::string, Eigen matrices) across the library
// boundary, so a plug-in must be compiled
//   - against the headers of the same specdec version as the specdec that loads it
//     (`specdec_version` is compared with the loader's, exactly), and of the same content
//     (`headers_digest`, the SHA-256 of the reference's headers and this one, generated at build
//     time into specdec/plugin_abi.hpp: a plug-in built before a header changed is refused even
//     when the version string is the same), and
//   - by the same compiler family and major version with the same standard library and C++ ABI
//     (`toolchain` is compared with the loader's, exactly; see SPECDEC_PLUGIN_TOOLCHAIN), in C++20.
// All three are filled in by SPECDEC_PLUGIN_ENTRY from the headers the plug-in is compiled with; the
// loader refuses a mismatch with both values in the message. `abi_version` changes whenever this
// table changes; a loader refuses any other version.
//
// Build a plug-in out of tree against an installed specdec
// (`cmake --install build --prefix P --component sdk`; examples/plugin_backend):
//
//   find_package(specdec CONFIG REQUIRED)             # CMAKE_PREFIX_PATH=P
//   add_library(my_plugin MODULE my_plugin.cpp)
//   target_link_libraries(my_plugin PRIVATE specdec::plugin_sdk)
//
// specdec::plugin_sdk carries the include directories, the reference library (compiled as
// position-independent code, so it links into a shared library), its dependencies (Eigen,
// nlohmann_json, Threads, OpenMP) and the exactness flags (-ffp-contract=off -fno-fast-math).
// The plug-in gets its own copy of the reference code; only specdec_plugin_entry needs to be
// visible (the SDK links with --exclude-libs so the reference's symbols stay private). That copy
// has its own globals: e.g. ops::set_parallel_work_threshold in specdec does not reach it
// (OpenMP's thread count, in the shared libgomp, does).
//
// Contract of the factories (what `specdec validate` checks, docs/validation.md):
//   - load_model(path): the checkpoint at `path` (directory or .safetensors / index file, as
//     load_llama_checkpoint takes it) as a LanguageModel whose config() is that checkpoint's
//     (the loader compares vocabulary, hidden size and layer count with config.json). Throw
//     specdec::Error (or any std::exception) with a message saying what is wrong; the loader adds
//     the plug-in's path and name.
//   - make_model(config, weights, precision), optional (null = not supported): the same from
//     in-memory fp32 weights (bench and tests over random models). `precision` is the weight
//     precision the caller asks for (F32, BF16 or F16); a plug-in may refuse what it cannot store.
//   - make_head_engine(head), optional (null = EAGLE-family heads compute in the reference's own
//     code): an EagleHeadEngine computing `head`'s forward (reference/drafters/eagle_head.hpp);
//     the head's weights and its target outlive the engine.
//   - weight_bytes(model), optional (null = the fp32 size of the model's weights): the bytes of
//     weights one single-token forward reads, for bench's bandwidth figure.
#include <filesystem>
#include <memory>

#include "reference/core/tensor.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/language_model.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/weights.hpp"
#include "specdec/plugin_abi.hpp"
#include "specdec/version.hpp"

namespace specdec::plugin {

// Version of PluginV1's layout and meaning. 1: the SDK header was installed as
// specdec/experiments/runtime/plugin_api.hpp; 2: it is specdec/runtime/plugin_api.hpp (same table).
inline constexpr int kAbiVersion = 2;

#define SPECDEC_PLUGIN_STR_(x) #x
#define SPECDEC_PLUGIN_STR(x) SPECDEC_PLUGIN_STR_(x)
#if defined(__clang__)
#define SPECDEC_PLUGIN_COMPILER "clang-" SPECDEC_PLUGIN_STR(__clang_major__)
#elif defined(__GNUC__)
#define SPECDEC_PLUGIN_COMPILER "gcc-" SPECDEC_PLUGIN_STR(__GNUC__)
#else
#define SPECDEC_PLUGIN_COMPILER "unknown-compiler"
#endif
#if defined(_GLIBCXX_RELEASE)
#define SPECDEC_PLUGIN_STDLIB "libstdc++-" SPECDEC_PLUGIN_STR(_GLIBCXX_RELEASE) " cxx11-abi=" SPECDEC_PLUGIN_STR(_GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define SPECDEC_PLUGIN_STDLIB "libc++-" SPECDEC_PLUGIN_STR(_LIBCPP_VERSION)
#else
#define SPECDEC_PLUGIN_STDLIB "unknown-stdlib"
#endif
// The toolchain a translation unit is compiled with, as the loader compares it: compiler family
// and major version, standard library and its ABI, C++ standard.
#define SPECDEC_PLUGIN_TOOLCHAIN SPECDEC_PLUGIN_COMPILER " " SPECDEC_PLUGIN_STDLIB " c++" SPECDEC_PLUGIN_STR(__cplusplus)

struct PluginV1 {
  int abi_version;             // kAbiVersion the plug-in was compiled with
  const char* specdec_version;  // specdec::kVersion of the headers it was compiled with
  const char* toolchain;        // SPECDEC_PLUGIN_TOOLCHAIN where it was compiled
  const char* headers_digest;   // kHeadersDigest of the headers it was compiled with
  const char* name;             // short name for messages and reports, e.g. "example"
  const char* description;      // one line; may be null

  std::unique_ptr<LanguageModel> (*load_model)(const std::filesystem::path& checkpoint);  // required
  std::unique_ptr<LanguageModel> (*make_model)(const ModelConfig& config, const LlamaWeights& weights,
                                               Dtype precision);                        // optional
  std::shared_ptr<const EagleHeadEngine> (*make_head_engine)(const EagleHead& head);     // optional
  double (*weight_bytes)(const LanguageModel& model);                                    // optional
};

}  // namespace specdec::plugin

// The symbol the loader looks up.
#define SPECDEC_PLUGIN_ENTRY_SYMBOL "specdec_plugin_entry"

// Defines the entry point returning a static table. Usage, at namespace scope in one source file:
//   SPECDEC_PLUGIN_ENTRY("example", "blocked fp32 linear layers", &load, &make, nullptr, nullptr)
#define SPECDEC_PLUGIN_ENTRY(NAME, DESCRIPTION, LOAD_MODEL, MAKE_MODEL, MAKE_HEAD_ENGINE, WEIGHT_BYTES)        \
  extern "C" __attribute__((visibility("default"))) const ::specdec::plugin::PluginV1* specdec_plugin_entry() { \
    static const ::specdec::plugin::PluginV1 table{::specdec::plugin::kAbiVersion,                             \
                                                   ::specdec::kVersion,                                        \
                                                   SPECDEC_PLUGIN_TOOLCHAIN,                                   \
                                                   ::specdec::plugin::kHeadersDigest,                          \
                                                   NAME,                                                       \
                                                   DESCRIPTION,                                                \
                                                   LOAD_MODEL,                                                 \
                                                   MAKE_MODEL,                                                 \
                                                   MAKE_HEAD_ENGINE,                                           \
                                                   WEIGHT_BYTES};                                              \
    return &table;                                                                                             \
  }
