#pragma once
// Finds spec files by name: `name` looks up <dir>/<kind>/<name>.json in the spec directories
// (the bundled simulator/specs first, then any added), and anything that names an existing file
// is read as that file (e.g. a Hugging Face config.json given on the command line).
#include <filesystem>
#include <string>
#include <vector>

#include "simulator/drafter_spec.hpp"
#include "simulator/engine_spec.hpp"
#include "simulator/hardware_spec.hpp"
#include "simulator/model_shape.hpp"

namespace specdec::sim {

class SpecLibrary {
 public:
  // With no directories, uses the bundled specs (compile-time SPECDEC_SPECS_DIR).
  explicit SpecLibrary(std::vector<std::filesystem::path> dirs = {});
  static std::filesystem::path bundled_dir();

  HardwareSpec hardware(const std::string& name_or_path) const;
  // An engine spec with the shared defaults (engine_defaults.json) filled in where it gives none.
  EngineSpec engine(const std::string& name_or_path) const;
  // The shared engine defaults (the last directory's engine_defaults.json; {} when none has one).
  nlohmann::json engine_defaults() const;
  // The named engine, or the hardware kind's default (default_engine_for) when `name` is empty.
  EngineSpec engine_for(const std::string& name, const HardwareSpec& hw) const;
  ModelShape model(const std::string& name_or_path) const;
  DrafterSpec drafter_spec(const std::string& name_or_path) const;
  // Resolves a drafter for a target (reads a draft LM's model spec when needed).
  Drafter drafter(const std::string& name_or_path, const ModelShape& target) const;

  // Names available for a kind ("hardware", "engines", "models", "drafters"), sorted.
  std::vector<std::string> names(const std::string& kind) const;
  // Path of a spec; throws listing what exists when there is none.
  std::filesystem::path find(const std::string& kind, const std::string& name_or_path) const;

 private:
  std::vector<std::filesystem::path> dirs_;
};

}  // namespace specdec::sim
