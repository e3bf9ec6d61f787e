#pragma once
// Named model shapes for random-weight models that specdec generates itself: the bundled default
// (until trained models exist) and benchmark shapes.
#include <string>
#include <vector>

#include "reference/model/model_config.hpp"

namespace specdec {

struct ModelPreset {
  std::string name;
  std::string description;
  ModelConfig config;
};

// "tiny": byte vocabulary, 4 layers, H 256, GQA 8/4 — the default model (~3.5M parameters).
// "llama-100m": Llama shape with 32000 vocab, 12 layers, H 768, GQA 12/4 (~125M parameters).
// "llama-22m", "llama-4m-draft": the target / draft LM pair the reference calibration records
// (scripts/calibrate_reference.sh); 32000 vocab, 8 and 2 layers.
// "llama-0.5b", "llama-1b": bandwidth-bound benchmark shapes; "llama-3.1-8b" for a GPU.
const std::vector<ModelPreset>& model_presets();
// Throws specdec::Error listing the known names.
const ModelPreset& find_model_preset(const std::string& name);
// Parameter count of a Llama-family model with this config.
long long parameter_count(const ModelConfig& c);

}  // namespace specdec
