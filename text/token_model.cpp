#include "text/token_model.hpp"

namespace specdec::text {

std::unique_ptr<TokenModel> make_bpe_model(const json& j, const JsonPlace& place);
std::unique_ptr<TokenModel> make_unigram_model(const json& j, const JsonPlace& place);

std::unique_ptr<TokenModel> TokenModel::parse(const json& j, const JsonPlace& place) {
  if (!j.is_object()) place.fail(std::string("must be an object, got ") + j.type_name());
  // Older files leave out "type"; the fields tell the model then.
  std::string type;
  if (j.contains("type")) {
    type = string_member(j, "type", place);
  } else if (j.contains("merges")) {
    type = "BPE";
  } else if (j.contains("vocab") && j.at("vocab").is_array()) {
    type = "Unigram";
  } else {
    place.fail("has no 'type' and is neither a BPE (merges) nor a Unigram (vocab list) model");
  }
  if (type == "BPE") return make_bpe_model(j, place);
  if (type == "Unigram") return make_unigram_model(j, place);
  place.at("type").fail("is '" + text_excerpt(type) + "', a model specdec does not support (supported: BPE, Unigram)");
}

std::string byte_fallback_token(unsigned char byte) {
  static const char* hex = "0123456789ABCDEF";
  std::string s = "<0x";
  s += hex[byte >> 4];
  s += hex[byte & 15];
  s += '>';
  return s;
}

}  // namespace specdec::text
