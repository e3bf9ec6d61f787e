#include "validation/observed_head.hpp"

namespace specdec::validation {

EagleHead::Output ObservedHeadEngine::forward(KVCache& cache, const EagleHead::Input& in) const {
  HeadForwardRecord rec;
  rec.step = *step_;
  rec.tokens = in.tokens;
  rec.positions = in.positions;
  if (rec.positions.empty()) {
    for (size_t t = 0; t < in.tokens.size(); ++t) rec.positions.push_back(cache.length() + static_cast<int32_t>(t));
  }
  rec.features = in.features;
  rec.projected = in.projected;
  rec.logit_rows = in.logit_rows;
  EagleHead::Output out = inner_.forward(cache, in);
  rec.logits = out.logits;
  rec.hidden = out.hidden;
  records_.push_back(std::move(rec));
  return out;
}

EagleHead observe_head(const EagleHead& head, const int* step, std::shared_ptr<const ObservedHeadEngine>& observer) {
  auto engine = std::make_shared<ObservedHeadEngine>(head, step);
  observer = engine;
  return head.with_engine(engine);
}

}  // namespace specdec::validation
