#pragma once
// Draft-model speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a small language
// model sharing the target's vocabulary drafts a chain of K tokens autoregressively.
#include <memory>

#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"

namespace specdec {

class DraftModelProposer final : public Proposer {
 public:
  // The draft model must outlive the proposer. Throws if its vocabulary differs from the target's.
  DraftModelProposer(const LanguageModel& draft, const ModelConfig& target, int k, int cache_capacity);

  std::string name() const override { return "draft"; }
  int max_nodes() const override { return k_; }
  Proposal propose(const DraftContext& context) override;

  // The draft model's cache and the tokens it holds entries for (for tests and teaching views).
  const KVCache& cache() const { return *cache_; }
  const std::vector<int32_t>& cached_tokens() const { return cached_; }

 private:
  const LanguageModel& draft_;
  int k_;
  std::unique_ptr<KVCache> cache_;
  std::vector<int32_t> cached_;  // the tokens whose entries the draft cache holds, in order
};

}  // namespace specdec
