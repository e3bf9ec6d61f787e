// The bundled models (models/) against an independent implementation: PyTorch's fp32 outputs on
// held-out windows (models/pytorch_reference.h5, written by experiments/train/crosscheck.py); the
// bounds are in pytorch_crosscheck.hpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/models/pytorch_crosscheck.hpp"

namespace specdec {
namespace {

std::filesystem::path bundled() { return std::filesystem::path(SPECDEC_SOURCE_DIR) / "models"; }

TEST(BundledModels, TargetMatchesPyTorch) { PyTorchCrossCheck(bundled()).check_language_model("target"); }
TEST(BundledModels, DraftModelMatchesPyTorch) { PyTorchCrossCheck(bundled()).check_language_model("draft"); }
TEST(BundledModels, Eagle1HeadMatchesPyTorch) { PyTorchCrossCheck(bundled()).check_head("eagle1"); }
TEST(BundledModels, Eagle3HeadMatchesPyTorch) { PyTorchCrossCheck(bundled()).check_head("eagle3"); }
TEST(BundledModels, PEagleDrafterMatchesPyTorch) { PyTorchCrossCheck(bundled()).check_head("peagle"); }
TEST(BundledModels, MtpModuleMatchesPyTorch) { PyTorchCrossCheck(bundled()).check_head("mtp"); }
TEST(BundledModels, MedusaHeadsMatchPyTorch) { PyTorchCrossCheck(bundled()).check_medusa("medusa"); }

}  // namespace
}  // namespace specdec
