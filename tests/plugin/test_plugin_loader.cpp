// The plug-in loader's error paths and a good load (runtime/plugin_backend.hpp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "runtime/backend.hpp"
#include "runtime/plugin_backend.hpp"
#include "reference/core/error.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"

namespace fs = std::filesystem;
using namespace specdec;

namespace {

const std::string kModel = std::string(SPECDEC_SOURCE_DIR) + "/models/target";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

fs::path scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("specdec_plugin_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// A copy of the test plugin under its own name, so the loader (one load per path) and the dynamic
// linker (one load per file) see a fresh library whose entry point reads `mode`.
std::string copy_in_mode(const std::string& mode) {
  const fs::path p = scratch() / ("libtest_plugin_" + mode + ".so");
  fs::copy_file(TEST_PLUGIN_PATH, p, fs::copy_options::overwrite_existing);
  ::setenv("SPECDEC_TEST_PLUGIN_MODE", mode.c_str(), 1);
  return "plugin:" + p.string();
}

// Removes the scratch directory when the tests end (loaded copies may go: the mappings stay).
class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch(), ec);
  }
};
[[maybe_unused]] const auto* const kRemoveScratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

}  // namespace

TEST(PluginLoader, NamesNoLibrary) {
  EXPECT_HAS(error_of([] { check_backend("plugin:", "--backend"); }), "no library path after 'plugin:'");
  EXPECT_TRUE(plugin::is_plugin_backend("plugin:x.so"));
  EXPECT_FALSE(plugin::is_plugin_backend("cpu"));
}

TEST(PluginLoader, MissingFile) {
  const std::string path = (scratch() / "absent.so").string();
  const std::string e = error_of([&] { check_backend("plugin:" + path, "--backend"); });
  EXPECT_HAS(e, "--backend 'plugin:" + path + "'");
  EXPECT_HAS(e, "plugin " + path + ": no such file");
  EXPECT_FALSE(backend_available("plugin:" + path));
}

TEST(PluginLoader, NotASharedLibrary) {
  const fs::path p = scratch() / "text.so";
  std::ofstream out(p);
  for (int i = 0; i < 20; ++i) out << "this is a text file, not an ELF shared library\n";
  out.close();
  const std::string e = error_of([&] { plugin::load_plugin("plugin:" + p.string()); });
  EXPECT_HAS(e, "plugin " + p.string() + ": cannot be loaded as a shared library");
  EXPECT_HAS(e, "invalid ELF header");  // dlerror's words
  EXPECT_HAS(error_of([&] { plugin::load_plugin("plugin:" + scratch().string()); }), "is a directory");
}

TEST(PluginLoader, MissingEntrySymbol) {
  const std::string e = error_of([] { plugin::load_plugin(std::string("plugin:") + NO_ENTRY_PATH); });
  EXPECT_HAS(e, std::string("plugin ") + NO_ENTRY_PATH + ": no symbol specdec_plugin_entry");
  EXPECT_HAS(e, "SPECDEC_PLUGIN_ENTRY");
}

TEST(PluginLoader, VersionMismatches) {
  EXPECT_HAS(error_of([] { plugin::load_plugin(copy_in_mode("abi")); }), "plugin ABI version 99, expected 2");
  // A plug-in built before the SDK header moved to specdec/runtime/ is told where it is now.
  const std::string old = error_of([] { plugin::load_plugin(copy_in_mode("abi1")); });
  EXPECT_HAS(old, "plugin ABI version 1, expected 2");
  EXPECT_HAS(old, "now included as \"runtime/plugin_api.hpp\"");
  EXPECT_HAS(error_of([] { plugin::load_plugin(copy_in_mode("version")); }),
             std::string("built against specdec 0.0.0-other, expected ") + kVersion);
  const std::string t = error_of([] { plugin::load_plugin(copy_in_mode("toolchain")); });
  EXPECT_HAS(t, "built with toolchain 'othercc-1 otherlib', expected '" SPECDEC_PLUGIN_TOOLCHAIN "'");
  EXPECT_HAS(error_of([] { plugin::load_plugin(copy_in_mode("digest")); }),
             std::string("built against specdec headers with digest sha256:0, expected ") + plugin::kHeadersDigest);
}

TEST(PluginLoader, IncompleteTables) {
  EXPECT_HAS(error_of([] { plugin::load_plugin(copy_in_mode("null")); }), "specdec_plugin_entry() returned null");
  EXPECT_HAS(error_of([] { plugin::load_plugin(copy_in_mode("noname")); }), "the table has no name");
  EXPECT_HAS(error_of([] { plugin::load_plugin(copy_in_mode("noload")); }), "load_model is null");
}

TEST(PluginLoader, FactoryThrowsOrGivesAnotherVocabulary) {
  const std::string thrown = error_of([] { load_backend(copy_in_mode("throws"), kModel); });
  EXPECT_HAS(thrown, "('test'): load_model(" + kModel + ") failed: test plugin: refusing " + kModel);
  const std::string vocab = error_of([] { load_backend(copy_in_mode("vocab"), kModel); });
  EXPECT_HAS(vocab, "gave a model with vocab_size 7, expected ");
  EXPECT_HAS(vocab, kModel + "/config.json");
}

TEST(PluginLoader, LoadsAModel) {
  const std::string b = copy_in_mode("ok");
  check_backend(b, "--backend");
  EXPECT_TRUE(backend_available(b));
  const auto m = load_backend(b, kModel);
  EXPECT_EQ(backend_name(*m), "plugin:test");
  EXPECT_GT(weight_bytes_per_step(*m), 0.0);
  auto cache = m->new_cache(8);
  const ForwardResult r = m->forward(*cache, ForwardRequest::chain({3, 4, 5}));
  EXPECT_EQ(r.logits.rows(), 3);
  EXPECT_EQ(r.logits.cols(), m->config().vocab_size);
  // No make_model in this plug-in: building from in-memory weights is refused by name.
  EXPECT_HAS(error_of([&] { make_backend(b, m->config(), LlamaWeights{}, Dtype::F32); }), "has no make_model");
}

TEST(PluginLoader, HeadEngines) {
  LlamaModel m = load_llama_checkpoint(kModel);
  const Transformer target(std::move(m.config), std::move(m.weights));
  const EagleHead head = load_eagle_head(std::string(SPECDEC_SOURCE_DIR) + "/models/eagle3", target);
  // No make_head_engine: the head computes in the reference's code.
  EXPECT_EQ(bind_head(copy_in_mode("ok"), head).engine(), nullptr);
  const EagleHead bound = bind_head(copy_in_mode("head"), head);
  ASSERT_NE(bound.engine(), nullptr);
  EXPECT_EQ(bound.engine()->name(), "test");
  EagleHead::Input in;
  in.tokens = {5, 6};
  in.features = Matrix::Zero(2, head.config().feature_width());
  in.logit_rows = {1};
  auto c1 = bound.new_cache(4), c2 = head.new_cache(4);
  EXPECT_EQ(bound.forward(*c1, in).logits, head.forward(*c2, in).logits);
  EXPECT_HAS(error_of([&] { bind_head(copy_in_mode("nullhead"), head); }), "make_head_engine returned no engine");
}
