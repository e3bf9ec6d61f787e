#pragma once
// Compares models in a directory (target, draft, eagle1, eagle3, peagle, mtp, medusa) with the
// PyTorch outputs stored beside them in pytorch_reference.h5 (experiments/train/crosscheck.py
// writes it). Bounds:
//   logits:        |cpp − torch| ≤ 1e-4 absolute
//   hidden states: |cpp − torch| ≤ 1e-4 · max(1, |torch|)  (the residual stream grows with depth)
// Heads get their features from the C++ target (checked first), the MTP module's depth 2 from its
// own depth-1 outputs; Medusa is checked on its logits (MedusaHeads does not expose the ResBlock
// outputs stored as /medusa/hidden). Failures are GoogleTest expectation failures naming the
// model, sequence, row and column of the worst error.
#include <filesystem>
#include <memory>
#include <string>

namespace specdec {

class PyTorchCrossCheck {
 public:
  explicit PyTorchCrossCheck(const std::filesystem::path& models_dir);
  ~PyTorchCrossCheck();
  void check_language_model(const std::string& name);  // "target" | "draft"
  void check_head(const std::string& name);            // "eagle1" | "eagle3" | "peagle" | "mtp" (+ depth 2)
  void check_medusa(const std::string& name);          // "medusa": every head's logits

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace specdec
