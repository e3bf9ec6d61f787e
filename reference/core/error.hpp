#pragma once
// One exception type for every user-facing failure: the message says what was wrong, where, and
// what was expected. The command line prints it and exits non-zero.
#include <stdexcept>
#include <string>

namespace specdec {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace specdec
