#include "reference/sampling/sampling_params.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"

namespace specdec {

std::string to_string(SamplingParams::Mode mode) {
  switch (mode) {
    case SamplingParams::Mode::greedy: return "greedy";
    case SamplingParams::Mode::sample: return "sample";
    case SamplingParams::Mode::coupled: return "coupled";
  }
  throw Error("sampling mode: invalid value " + std::to_string(static_cast<int>(mode)) +
              "; expected greedy, sample or coupled");
}

SamplingParams::Mode parse_sampling_mode(const std::string& name) {
  if (name == "greedy") return SamplingParams::Mode::greedy;
  if (name == "sample") return SamplingParams::Mode::sample;
  if (name == "coupled") return SamplingParams::Mode::coupled;
  throw Error("sampling mode '" + name + "' is unknown; expected one of: greedy, sample, coupled");
}

void SamplingParams::validate() const {
  if (mode != Mode::greedy && mode != Mode::sample && mode != Mode::coupled) {
    throw Error("sampling parameters: mode has invalid value " +
                std::to_string(static_cast<int>(mode)) + "; expected greedy, sample or coupled");
  }
  if (mode != Mode::greedy && !(std::isfinite(temperature) && temperature > 0.0)) {
    throw Error("sampling parameters: temperature = " + format_double(temperature) +
                " is invalid for mode '" + specdec::to_string(mode) +
                "'; expected a finite value > 0 (use mode 'greedy' for temperature 0)");
  }
  if (top_k < 0) {
    throw Error("sampling parameters: top_k = " + std::to_string(top_k) +
                " is invalid; expected an integer >= 0 (0 = off)");
  }
  if (!(top_p > 0.0 && top_p <= 1.0)) {
    throw Error("sampling parameters: top_p = " + format_double(top_p) +
                " is invalid; expected a value in (0, 1] (1 = off)");
  }
}

std::string SamplingParams::to_string() const {
  return "mode=" + specdec::to_string(mode) + " temperature=" + format_double(temperature) +
         " top_k=" + std::to_string(top_k) + " top_p=" + format_double(top_p) +
         " seed=" + std::to_string(seed);
}

void to_json(nlohmann::json& j, const SamplingParams& params) {
  j = nlohmann::json{{"mode", to_string(params.mode)},
                     {"temperature", params.temperature},
                     {"top_k", params.top_k},
                     {"top_p", params.top_p},
                     {"seed", params.seed}};
}

void from_json(const nlohmann::json& j, SamplingParams& params) {
  const std::string where = "sampling parameters (JSON)";
  if (!j.is_object()) {
    throw Error(where + ": expected an object, got " + std::string(j.type_name()));
  }
  SamplingParams out;
  for (const auto& [key, value] : j.items()) {
    if (key == "mode") {
      if (!value.is_string()) {
        throw Error(where + ": field 'mode' must be a string (greedy, sample or coupled), got " +
                    std::string(value.type_name()));
      }
      out.mode = parse_sampling_mode(value.get<std::string>());
    } else if (key == "temperature" || key == "top_p") {
      if (!value.is_number()) {
        throw Error(where + ": field '" + key + "' must be a number, got " +
                    std::string(value.type_name()));
      }
      (key == "temperature" ? out.temperature : out.top_p) = value.get<double>();
    } else if (key == "top_k") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() > std::numeric_limits<int>::max()) {
        throw Error(where + ": field 'top_k' must be an integer in [0, " +
                    std::to_string(std::numeric_limits<int>::max()) + "], got " + value.dump());
      }
      out.top_k = static_cast<int>(value.get<int64_t>());
    } else if (key == "seed") {
      // Parsed text stores non-negative integers as unsigned, JSON built in C++ may hold int64.
      const bool ok = value.is_number_unsigned() ||
                      (value.is_number_integer() && value.get<int64_t>() >= 0);
      if (!ok) {
        throw Error(where + ": field 'seed' must be an integer in [0, 2^64 - 1], got " + value.dump());
      }
      out.seed = value.get<uint64_t>();
    } else {
      throw Error(where + ": unknown field '" + key +
                  "'; expected mode, temperature, top_k, top_p, seed");
    }
  }
  out.validate();
  params = out;
}

}  // namespace specdec
