// The training recipes (experiments/train/) run end to end on a tiny slice of the corpus: corpus
// extraction, every model's recipe with --smoke (a few steps, small shapes), the PyTorch
// cross-check file; then the C++ reference loads every exported model and matches PyTorch on it.
// Needs /usr/bin/python3 with python3-torch, python3-h5py and the bible-kjv packages
// (scripts/setup.sh installs them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/models/pytorch_crosscheck.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;

int run(const std::string& command) { return std::system((command + " > /dev/null 2>&1").c_str()); }

std::string recipe(const std::string& args) {
  return std::string(SPECDEC_PYTHON) + " " + SPECDEC_SOURCE_DIR + "/experiments/train/" + args;
}

TEST(TrainingRecipes, EveryRecipeRunsAndItsExportMatchesTheReference) {
  specdec::testing::ScratchDir dir("recipes");
  const fs::path data = dir.path() / "data", models = dir.path() / "models";
  const std::string q = "'";
  ASSERT_EQ(run(recipe("train.py corpus --data " + q + data.string() + q)), 0) << "corpus extraction failed";
  for (const char* kind : {"target", "draft", "eagle1", "eagle3", "peagle", "mtp", "medusa"}) {
    const std::string cmd = recipe(std::string("train.py ") + kind + " --smoke --data '" + data.string() + "' --target '" +
                                   (models / "target").string() + "' --out '" + (models / kind).string() + "'");
    ASSERT_EQ(run(cmd), 0) << "recipe failed: " << cmd;
    EXPECT_TRUE(fs::exists(models / kind / "config.json")) << kind;
    EXPECT_TRUE(fs::exists(models / kind / "README.md")) << kind << ": no model card";
    EXPECT_TRUE(fs::exists(models / kind / "train_log.csv")) << kind << ": no loss log";
  }
  ASSERT_EQ(run(recipe("crosscheck.py --models '" + models.string() + "' --data '" + data.string() + "' --out '" +
                       (models / "pytorch_reference.h5").string() + "' --k 3")),
            0);
  PyTorchCrossCheck check(models);
  check.check_language_model("target");
  check.check_language_model("draft");
  check.check_head("eagle1");
  check.check_head("eagle3");
  check.check_head("peagle");
  check.check_head("mtp");
  check.check_medusa("medusa");
}

TEST(TrainingRecipes, AHeadWithoutATargetIsAUsageError) {
  specdec::testing::ScratchDir dir("recipes");
  EXPECT_NE(run(recipe("train.py eagle3 --smoke --data '" + dir.path().string() + "' --out '" +
                       (dir.path() / "head").string() + "'")),
            0);
  EXPECT_FALSE(fs::exists(dir.path() / "head"));
}

}  // namespace
}  // namespace specdec
