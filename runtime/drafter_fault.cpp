#include "runtime/drafter_fault.hpp"

#include <chrono>
#include <limits>
#include <thread>

#include "reference/core/error.hpp"

namespace specdec {

std::string DrafterFault::to_string() const {
  const char* k = kind == Kind::throw_error ? "throw" : kind == Kind::nan ? "nan" : "slow";
  return std::string(k) + "@" + std::to_string(step);
}

DrafterFault parse_drafter_fault(const std::string& text, const std::string& where) {
  const std::string expected = "; expected KIND@STEP with KIND throw, nan or slow and STEP >= 1, e.g. throw@2";
  const auto at = text.find('@');
  if (at == std::string::npos) throw Error(where + ": '" + text + "' has no '@STEP'" + expected);
  const std::string kind = text.substr(0, at), step = text.substr(at + 1);
  DrafterFault f;
  if (kind == "throw") f.kind = DrafterFault::Kind::throw_error;
  else if (kind == "nan") f.kind = DrafterFault::Kind::nan;
  else if (kind == "slow") f.kind = DrafterFault::Kind::slow;
  else throw Error(where + ": unknown fault kind '" + kind + "'" + expected);
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(step, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (step.empty() || used != step.size() || n < 1 || n > std::numeric_limits<int>::max()) {
    throw Error(where + ": step '" + step + "' is not a whole number >= 1" + expected);
  }
  f.step = static_cast<int>(n);
  return f;
}

Proposal FaultyProposer::propose(const DraftContext& context) {
  ++proposals_;
  if (proposals_ != fault_.step) return inner_.propose(context);
  switch (fault_.kind) {
    case DrafterFault::Kind::throw_error:
      throw Error("injected fault (--drafter-fault " + fault_.to_string() + ")");
    case DrafterFault::Kind::nan: {
      // The drafter's own check of its logits, on a row holding a NaN: the error a real NaN gives.
      const float row[1] = {std::numeric_limits<float>::quiet_NaN()};
      choose_draft_token(row, 1, context.sampling, context.sequence_id, static_cast<uint32_t>(context.committed + 1));
      throw Error("injected fault (--drafter-fault " + fault_.to_string() + "): a NaN logit");  // not reached
    }
    case DrafterFault::Kind::slow: {
      const int64_t ns = budget_ns_ > 0 ? 2 * budget_ns_ : int64_t{50'000'000};
      std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
      return inner_.propose(context);
    }
  }
  return inner_.propose(context);
}

}  // namespace specdec
