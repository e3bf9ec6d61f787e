#pragma once
// The specdec::Error message of a call, and a check that a message names what it should.
#include <functional>
#include <string>

#include "reference/core/error.hpp"

namespace specdec::testing {

// Runs f and returns the specdec::Error message ("" if nothing was thrown).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace specdec::testing

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "expected '" << (needle) << "' in: " << (haystack)
