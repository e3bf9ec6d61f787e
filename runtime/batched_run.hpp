#pragma once
// The methods of a batched run: each request decodes with one of them (a batch may mix methods).
// Every drafter is loaded once and shared by the requests using it, so their drafter forwards
// are gathered into one forward_batch per drafter and round (reference/decoding/batched.hpp).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference/decoding/batched.hpp"
#include "runtime/decode_request.hpp"
#include "runtime/method_runner.hpp"

namespace specdec {

class BatchedMethods {
 public:
  // The target must outlive this object.
  explicit BatchedMethods(const LoadedModel& target) : target_(target) {}

  // The lane of `a`'s method (its method options and drafter), loading the drafter on first use,
  // or using `drafter` when given (loaded by load_drafter for this target; it must outlive this
  // object). Checks the method's options; throws specdec::Error as generate would.
  std::size_t add(const DecodeArgs& a, const LoadedDrafter* drafter = nullptr);
  const DecodeArgs& lane(std::size_t i) const { return lanes_.at(i).args; }
  std::size_t lanes() const { return lanes_.size(); }

  // Request i decodes with lane lane_of_request[i]; the proposer's own caches are sized for the
  // request (prompt + max_new_tokens). Both vectors must outlive the factory.
  ProposerFactory factory(const std::vector<std::size_t>& lane_of_request,
                          const std::vector<BatchRequest>& requests) const;

 private:
  struct Lane {
    DecodeArgs args;
    const LoadedDrafter* drafter = nullptr;  // null: sequential
    std::shared_ptr<LoadedDrafter> own_drafter;  // a draft-free method's (its run state), per lane
  };
  const LoadedModel& target_;
  std::vector<Lane> lanes_;
  std::map<std::string, std::unique_ptr<LoadedDrafter>> drafters_;  // by kind and path
};

}  // namespace specdec
