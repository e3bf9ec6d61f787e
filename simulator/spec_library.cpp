#include "simulator/spec_library.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/core/suggest.hpp"
#include "simulator/engine_defaults.hpp"
#include "simulator/join.hpp"
#include "simulator/spec_json.hpp"

#ifndef SPECDEC_SPECS_DIR
#define SPECDEC_SPECS_DIR "simulator/specs"
#endif

namespace specdec::sim {

SpecLibrary::SpecLibrary(std::vector<std::filesystem::path> dirs) : dirs_(std::move(dirs)) {
  dirs_.insert(dirs_.begin(), bundled_dir());
}

std::filesystem::path SpecLibrary::bundled_dir() { return std::filesystem::path(SPECDEC_SPECS_DIR); }

std::vector<std::string> SpecLibrary::names(const std::string& kind) const {
  std::vector<std::string> out;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    const auto d = dir / kind;
    if (!std::filesystem::is_directory(d, ec)) continue;
    for (const auto& e : std::filesystem::directory_iterator(d, ec))
      if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::filesystem::path SpecLibrary::find(const std::string& kind, const std::string& name_or_path) const {
  std::error_code ec;
  if (name_or_path.empty()) throw Error("empty " + kind + " name");
  // Anything at the path but a directory is returned, so that its reader refuses a device, a pipe
  // or a dangling link by name instead of calling it an unknown spec.
  auto present = [&](const std::filesystem::path& p) {
    const auto st = std::filesystem::symlink_status(p, ec);
    return std::filesystem::exists(st) && !std::filesystem::is_directory(p, ec);
  };
  if (present(name_or_path)) return name_or_path;
  // Later directories override the bundled ones.
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    const auto p = *it / kind / (name_or_path + ".json");
    if (present(p)) return p;
  }
  const std::vector<std::string> known = names(kind);
  const std::string have = join_names(known);
  throw Error("unknown " + kind + " spec '" + name_or_path + "': not a file and not one of: " +
              (have.empty() ? "(none found)" : have) + did_you_mean(name_or_path, known));
}

HardwareSpec SpecLibrary::hardware(const std::string& name_or_path) const {
  return load_hardware_spec(find("hardware", name_or_path));
}

nlohmann::json SpecLibrary::engine_defaults() const {
  std::error_code ec;
  // Later directories override the bundled file, as they override specs.
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    const auto p = *it / "engine_defaults.json";
    if (!std::filesystem::exists(p, ec)) continue;
    nlohmann::json d = read_json_file(p, "engine defaults");
    check_engine_defaults(d, p.filename().string());
    return d;
  }
  return nlohmann::json::object();
}

EngineSpec SpecLibrary::engine(const std::string& name_or_path) const {
  const auto path = find("engines", name_or_path);
  return parse_engine_spec(with_engine_defaults(read_json_file(path, "engine spec"), engine_defaults()),
                           path.filename().string());
}

EngineSpec SpecLibrary::engine_for(const std::string& name, const HardwareSpec& hw) const {
  return engine(name.empty() ? default_engine_for(hw.kind) : name);
}

ModelShape SpecLibrary::model(const std::string& name_or_path) const {
  const auto path = find("models", name_or_path);
  ModelShape m = load_model_shape(path);
  // A bare config.json has no name: call it after its folder.
  if (m.name == path.filename().string() && path.filename() == "config.json")
    m.name = path.parent_path().filename().string();
  return m;
}

DrafterSpec SpecLibrary::drafter_spec(const std::string& name_or_path) const {
  return load_drafter_spec(find("drafters", name_or_path));
}

Drafter SpecLibrary::drafter(const std::string& name_or_path, const ModelShape& target) const {
  const DrafterSpec spec = drafter_spec(name_or_path);
  if (spec.method == Method::draft_model) {
    const ModelShape dm = model(spec.model);
    return resolve_drafter(spec, target, &dm);
  }
  return resolve_drafter(spec, target);
}

}  // namespace specdec::sim
