#pragma once
// A speculation policy as one value: its registry name and its parameters (a JSON object; the
// registry entry fills defaults and checks ranges). The form --policy, sweep cells, run configs
// and traces hold; text form "NAME[,key=value...]" with list values separated by '/' and map
// entries written key:value, e.g. "sglang-ema,alpha=0.2,tiers=1/3/7" or "trtllm,schedule=1:4/8:2".
#include <string>

#include <nlohmann/json.hpp>

namespace specdec {

struct PolicySpec {
  std::string name = "fixed";
  nlohmann::json params = nlohmann::json::object();  // complete once normalized

  // {"policy": name, ...params}.
  nlohmann::json to_json() const;
  // "fixed", "hf-heuristic,start=5".
  std::string label() const;
  bool operator==(const PolicySpec& other) const { return name == other.name && params == other.params; }
};

// Parses the text form; the result is normalized (checked, defaults filled). Throws specdec::Error
// naming `where`, the parameter and what it expected.
PolicySpec parse_policy_spec(const std::string& text, const std::string& where = "--policy");
// {"policy": name, ...params} (a bare string: the name alone) → normalized spec.
PolicySpec policy_from_json(const nlohmann::json& j, const std::string& where);
// A parameter value as a user writes it: integers without a fraction or exponent (1048576), other
// numbers with up to 10 significant digits.
std::string policy_number_text(double v);

// The spec with the entry's defaults filled in and every parameter checked.
PolicySpec normalized(const PolicySpec& spec, const std::string& where);

}  // namespace specdec
