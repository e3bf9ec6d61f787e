#include "text/tokenizer.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

std::string id_text(int32_t id) {
  std::string s = "<";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "<" + temporary
  s += std::to_string(id);
  s += ">";
  return s;
}

namespace {

// Whether text, decoded so far, may still change at its end once more tokens come: it ends in a
// partial character (kept raw) or in the replacement character a partial one became.
bool unsettled(const std::string& text) {
  return ends_with_incomplete_utf8(text) ||
         (text.size() >= kReplacementChar.size() &&
          text.compare(text.size() - kReplacementChar.size(), kReplacementChar.size(), kReplacementChar) == 0);
}

}  // namespace

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  const std::string text = tokenizer_.decode(ids_, skip_special_);
  // Held back: an unfinished character, or a decoder that rewrote what was already shown.
  if (unsettled(text) || text.compare(0, emitted_.size(), emitted_) != 0) return "";
  std::string fresh = text.substr(emitted_.size());
  emitted_ = text;
  return fresh;
}

std::string TextStream::finish() {
  const std::string text = tokenizer_.decode(ids_, skip_special_);
  std::string rest = text.compare(0, emitted_.size(), emitted_) == 0 ? text.substr(emitted_.size()) : std::string();
  emitted_ = text;
  return rest;
}

}  // namespace specdec::text
