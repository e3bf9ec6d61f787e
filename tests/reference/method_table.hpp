#pragma once
// The method registry's test table, shared by the tests that run every method on the bundled
// trained models (test_methods.cpp, test_batched.cpp): one row per registered method and draft
// shape, the backends built here, and the bundled target loaded once per backend.
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "reference/methods/registry.hpp"
#include "runtime/backend.hpp"
#include "runtime/decode_request.hpp"

namespace specdec::testing {

inline const std::string kBundledModels = std::string(SPECDEC_SOURCE_DIR) + "/models/";

// Every registered method with each shape it takes: sequential or a chain of 3, a static tree with
// leaves at every depth, a small dynamic tree. A new method adds its rows here by registering.
inline std::vector<MethodSpec> method_rows() {
  std::vector<MethodSpec> rows;
  for (const MethodEntry& e : method_registry()) {
    MethodSpec s;
    s.name = e.name;
    s.k = 3;
    // Suffix decoding's shared tree of earlier responses makes a sequence's drafts depend on the
    // run's other requests (by design, as in the engines); without it every sequence drafts the
    // same alone and in any batch, which these rows assert. test_draft_free covers the shared tree.
    for (const MethodParam& p : e.params)
      if (p.name == "cached_requests") s.params[p.name] = 0;
    rows.push_back(s);
    if (e.shapes.static_tree) {
      s.tree = "[[0],[1],[0,0],[0,1],[1,0],[0,0,0]]";
      rows.push_back(s);
    }
    if (e.shapes.dynamic_tree) {
      s.tree = "dynamic";
      s.depth = 3, s.tree_top_k = 2, s.total_tokens = 8;
      rows.push_back(s);
    }
  }
  return rows;
}

// "reference", and "cpu" when this build has it.
inline std::vector<std::string> backends_built_here() {
  std::vector<std::string> b = {"reference"};
  if (backend_available("cpu")) b.push_back("cpu");
  return b;
}

// The bundled target on `backend`, loaded once.
inline const LoadedModel& bundled_target(const std::string& backend) {
  static std::map<std::string, LoadedModel> loaded;
  auto it = loaded.find(backend);
  if (it == loaded.end()) it = loaded.emplace(backend, load_model(kBundledModels + "target", backend)).first;
  return it->second;
}

// Decoding options for `spec` on the bundled target with its bundled drafter.
inline DecodeArgs bundled_method_args(const MethodSpec& spec, const std::string& backend) {
  DecodeArgs a;
  a.model = kBundledModels + "target";
  a.method = spec;
  const MethodEntry& e = method_entry(spec.name);
  if (e.drafter.loads_checkpoint()) a.drafter = kBundledModels + e.drafter.bundled_dir;
  a.backend = backend;
  return a;
}

}  // namespace specdec::testing
