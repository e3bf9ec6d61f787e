#include "reference/model/language_model.hpp"

#include <set>
#include <string>

#include "reference/core/error.hpp"
#include "reference/model/decoder_layer.hpp"

namespace specdec {

void check_batch_entries(const std::vector<BatchEntry>& batch, const std::string& where) {
  std::set<const KVCache*> seen;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const BatchEntry& e = batch[i];
    if (!e.cache || !e.request) {
      throw Error(where + ": batch entry " + std::to_string(i) + " has no " + (e.cache ? "request" : "cache"));
    }
    if (!seen.insert(e.cache).second) {
      throw Error(where + ": batch entry " + std::to_string(i) +
                  " uses a KV cache an earlier entry uses (each sequence of a batch needs its own cache)");
    }
  }
}

std::vector<ForwardResult> LanguageModel::forward_batch(const std::vector<BatchEntry>& batch) const {
  check_batch_entries(batch, "forward_batch");
  // Every entry's checks before any entry's forward, so that a bad request leaves no cache changed.
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const ForwardRequest& r = *batch[i].request;
    const KVCache& cache = *batch[i].cache;
    try {
      check_forward_request(config(), r);
      const int T = static_cast<int>(r.tokens.size());
      if (!r.positions.empty() && static_cast<int>(r.positions.size()) != T) {
        throw Error("forward: " + std::to_string(r.positions.size()) + " positions given for " + std::to_string(T) +
                    " tokens");
      }
      if (r.mask && (r.mask->rows() != T || r.mask->cols() != cache.length() + T)) {
        throw Error("forward: the mask is " + std::to_string(r.mask->rows()) + "x" + std::to_string(r.mask->cols()) +
                    ", expected " + std::to_string(T) + "x" + std::to_string(cache.length() + T));
      }
      if (cache.length() + T > cache.capacity()) {
        throw Error("forward: " + std::to_string(T) + " tokens do not fit a KV cache holding " +
                    std::to_string(cache.length()) + " of " + std::to_string(cache.capacity()) + " slots");
      }
    } catch (const Error& e) {
      throw Error("forward_batch: entry " + std::to_string(i) + ": " + e.what());
    }
  }
  std::vector<ForwardResult> results;
  results.reserve(batch.size());
  for (const BatchEntry& e : batch) results.push_back(forward(*e.cache, *e.request));
  return results;
}

}  // namespace specdec
