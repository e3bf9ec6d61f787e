#include "text/byte_tokenizer.hpp"

#include "reference/core/input_limits.hpp"

namespace specdec::text {

ByteTokenizer::ByteTokenizer(Vocabulary vocabulary, std::filesystem::path file, int32_t bos)
    : vocabulary_(std::move(vocabulary)), file_(std::move(file)) {
  if (bos >= 0) bos_ = bos;
  if (const auto eos = vocabulary_.special("<eos>")) eos_.push_back(*eos);
}

std::string ByteTokenizer::description() const {
  return file_.string() + " (bytes, " + std::to_string(size()) + " token ids)";
}

std::vector<int32_t> ByteTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  check_input_limit(file_.string(), "the text to encode (bytes)", static_cast<long long>(text.size()), kMaxPromptBytes);
  std::vector<int32_t> ids;
  if (add_special_tokens && bos_) ids.push_back(*bos_);
  const auto bytes = vocabulary_.encode(text);
  ids.insert(ids.end(), bytes.begin(), bytes.end());
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  if (!skip_special_tokens) return vocabulary_.decode(ids);
  std::vector<int32_t> kept;
  for (int32_t id : ids) {
    const std::string t = vocabulary_.token_text(id);
    if (!(t.size() > 1 && vocabulary_.special(t) == id)) kept.push_back(id);
  }
  return vocabulary_.decode(kept);
}

}  // namespace specdec::text
