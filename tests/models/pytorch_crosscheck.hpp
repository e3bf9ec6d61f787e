#pragma once
// Compares models in a directory (target, draft, eagle1, eagle3, peagle) with the PyTorch outputs
// stored beside them in pytorch_reference.h5 (experiments/train/crosscheck.py writes it). Bounds:
//   logits:        |cpp − torch| ≤ 1e-4 absolute
//   hidden states: |cpp − torch| ≤ 1e-4 · max(1, |torch|)  (the residual stream grows with depth)
// Heads get their features from the C++ target (checked first). Failures are GoogleTest
// expectation failures naming the model, sequence, row and column of the worst error.
#include <filesystem>
#include <memory>
#include <string>

namespace specdec {

class PyTorchCrossCheck {
 public:
  explicit PyTorchCrossCheck(const std::filesystem::path& models_dir);
  ~PyTorchCrossCheck();
  void check_language_model(const std::string& name);  // "target" | "draft"
  void check_head(const std::string& name);            // "eagle1" | "eagle3" | "peagle"

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace specdec
