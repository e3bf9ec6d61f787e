#pragma once
// Integers read from JSON in untrusted files. nlohmann's get<int>() casts unchecked: a float
// beyond int's range is undefined behaviour, and 2^32 silently becomes 0.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "reference/core/error.hpp"

namespace specdec {

// v as an int; an Error naming `what` when v is not a JSON integer or does not fit in 32 bits.
inline int json_int32(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_integer())
    throw Error(what + " must be an integer, got " + (v.is_number() ? v.dump() : std::string("a ") + v.type_name()));
  const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX)
                                           : v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
  if (!fits) throw Error(what + " must fit in 32 bits, got " + v.dump());
  return int(v.get<int64_t>());
}

}  // namespace specdec
