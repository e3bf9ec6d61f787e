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
  const std::vector<int32_t> context(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.begin() + static_cast<std::ptrdiff_t>(read_));
  const std::vector<int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.end());
  const std::string before = tokenizer_.decode(context, skip_special_);
  const std::string text = tokenizer_.decode(window, skip_special_);
  // Held back: an unfinished character, or a decoder that rewrote what was already shown.
  if (text.size() <= before.size() || unsettled(text) || text.compare(0, before.size(), before) != 0) return "";
  prefix_ = read_;
  read_ = ids_.size();
  return text.substr(before.size());
}

std::string TextStream::finish() {
  const std::vector<int32_t> context(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.begin() + static_cast<std::ptrdiff_t>(read_));
  const std::vector<int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.end());
  const std::string before = tokenizer_.decode(context, skip_special_);
  const std::string text = tokenizer_.decode(window, skip_special_);
  prefix_ = read_ = ids_.size();
  return text.size() > before.size() && text.compare(0, before.size(), before) == 0 ? text.substr(before.size()) : std::string();
}

}  // namespace specdec::text
