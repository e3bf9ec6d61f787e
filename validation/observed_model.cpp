#include "validation/observed_model.hpp"

#include "reference/core/error.hpp"

namespace specdec::validation {

bool ForwardRecord::same_request(const ForwardRecord& o) const {
  return tokens == o.tokens && positions == o.positions && cache_length == o.cache_length;
}

ObservedModel::ObservedModel(const LanguageModel& inner, bool keep_logits, const int* step, bool layer_states)
    : inner_(inner), keep_logits_(keep_logits), step_(step), layer_states_(layer_states) {}

ForwardResult ObservedModel::forward(KVCache& cache, const ForwardRequest& request) const {
  ForwardRecord rec;
  const int index = static_cast<int>(records_.size());
  rec.step = step_ ? *step_ : index;
  rec.tokens = request.tokens;
  rec.positions = request.positions;
  rec.cache_length = cache.length();
  rec.logit_rows = request.logit_rows;
  ForwardResult out;
  if (layer_states_ && !request.layer_states) {
    ForwardRequest with = request;
    with.layer_states = true;
    out = inner_.forward(cache, with);
    rec.layer_states = std::move(out.layer_states);
    out.layer_states.clear();
  } else {
    out = inner_.forward(cache, request);
  }
  if (keep_logits_) rec.logits = out.logits;
  rec.final_hidden = out.final_hidden;
  rec.aux_hidden = out.aux_hidden;
  records_.push_back(std::move(rec));
  const auto it = replacements_.find(index);
  if (it != replacements_.end()) {
    if (it->second.rows() != out.logits.rows() || it->second.cols() != out.logits.cols()) {
      throw Error("validation: forced logits for forward " + std::to_string(index) + " have shape (" +
                  std::to_string(it->second.rows()) + ", " + std::to_string(it->second.cols()) + "); the forward returned (" +
                  std::to_string(out.logits.rows()) + ", " + std::to_string(out.logits.cols()) + ")");
    }
    out.logits = it->second;
  }
  return out;
}

}  // namespace specdec::validation
