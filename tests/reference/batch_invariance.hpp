#pragma once
// The batch-invariance check every LanguageModel implementation must pass: a T-token forward
// equals T one-token forwards (logits, final hidden, aux hidden, the cache) and an uneven split
// of the same tokens, bitwise.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reference/model/language_model.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec::testing {

// caches_equal(a, b): whether two caches of `model` hold bitwise the same keys and values.
template <class CachesEqual>
void expect_batch_invariant(const LanguageModel& model, const std::vector<int32_t>& tokens, const std::string& name,
                            const CachesEqual& caches_equal) {
  const int T = static_cast<int>(tokens.size());
  const std::vector<int> aux = {0, 1, model.config().num_hidden_layers};
  auto batched_cache = model.new_cache(T);
  ForwardRequest all = ForwardRequest::chain(tokens);
  all.final_hidden = true;
  all.aux_layers = aux;
  const ForwardResult batched = model.forward(*batched_cache, all);

  auto single_cache = model.new_cache(T);
  for (int t = 0; t < T; ++t) {
    ForwardRequest one = ForwardRequest::chain({tokens[static_cast<std::size_t>(t)]});
    one.final_hidden = true;
    one.aux_layers = aux;
    const ForwardResult r = model.forward(*single_cache, one);
    EXPECT_TRUE(bitwise_equal(r.logits, batched.logits.middleRows(t, 1))) << name << ": logits row " << t;
    EXPECT_TRUE(bitwise_equal(r.final_hidden, batched.final_hidden.middleRows(t, 1))) << name << ": hidden row " << t;
    EXPECT_TRUE(bitwise_equal(r.aux_hidden, batched.aux_hidden.middleRows(t, 1))) << name << ": aux row " << t;
  }
  EXPECT_TRUE(caches_equal(*batched_cache, *single_cache)) << name << ": caches differ";

  // Uneven chunks (5 + the rest) give the same too.
  auto chunk_cache = model.new_cache(T);
  model.forward(*chunk_cache, ForwardRequest::chain({tokens.begin(), tokens.begin() + 5}));
  const Matrix rest = model.forward(*chunk_cache, ForwardRequest::chain({tokens.begin() + 5, tokens.end()})).logits;
  EXPECT_TRUE(bitwise_equal(rest, batched.logits.bottomRows(T - 5))) << name << ": chunked prefill";
}

}  // namespace specdec::testing
