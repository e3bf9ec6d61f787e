#include "text/hf_tokenizer.hpp"

#include <algorithm>

#include "reference/core/input_limits.hpp"
#include "reference/io/json_input.hpp"

#include "text/byte_level.hpp"
#include "text/regex.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

namespace {

// A tokenizer's JSON file: a regular file of bounded size (never a pipe or a device), nested no
// deeper than kMaxJsonDepth, so that nothing after parsing recurses without bound.
json read_json(const std::filesystem::path& path, const char* what) {
  return parse_json(read_input_file(path.string(), what), path.string());
}

// Whether a component (or any step of a Sequence of them) has the given type.
bool has_component(const json& j, const std::string& type) {
  if (!j.is_object()) return false;
  if (j.contains("type") && j.at("type") == type) return true;
  for (const char* list : {"decoders", "pretokenizers", "processors"}) {
    if (j.contains(list) && j.at(list).is_array()) {
      for (const json& e : j.at(list))
        if (has_component(e, type)) return true;
    }
  }
  return false;
}

// The post-processor's ids around a single sequence.
void parse_post_processor(const json& j, const JsonPlace& place, SpecialTemplate& t) {
  if (j.is_null()) return;
  const std::string type = component_type(j, place);
  if (type == "Sequence") {
    const json& list = required_member(j, "processors", place);
    if (!list.is_array()) place.at("processors").fail("must be a list");
    for (std::size_t i = 0; i < list.size(); ++i) parse_post_processor(list[i], place.at("processors").index(i), t);
  } else if (type == "ByteLevel") {
    // Offsets only; no ids.
  } else if (type == "TemplateProcessing") {
    const json& single = required_member(j, "single", place);
    if (!single.is_array()) place.at("single").fail("must be a list");
    const json& specials = required_member(j, "special_tokens", place);
    bool after = false;
    // A template repeats its special tokens around every text: refused at load when it adds more
    // ids than any real one (a few), before they are built.
    const auto add = [&](const json& ids, const JsonPlace& where) {
      if (t.before.size() + t.after.size() + ids.size() > kMaxTemplateTokens) {
        where.fail("makes the post-processor add more than " + std::to_string(kMaxTemplateTokens) +
                   " token ids around a text, more than specdec supports; see docs/reliability.md");
      }
      for (std::size_t k = 0; k < ids.size(); ++k) (after ? t.after : t.before).push_back(token_id_value(ids[k], where.index(k)));
    };
    for (std::size_t i = 0; i < single.size(); ++i) {
      const JsonPlace p = place.at("single").index(i);
      const json& piece = single[i];
      if (piece.is_object() && piece.contains("Sequence")) {
        after = true;
      } else if (piece.is_object() && piece.contains("SpecialToken")) {
        const std::string name = string_member(piece.at("SpecialToken"), "id", p.at("SpecialToken"));
        const json* s = optional_member(specials, name.c_str());
        if (!s) p.fail("names the special token '" + text_excerpt(name) + "', which post_processor.special_tokens does not define");
        const JsonPlace sp = place.at("special_tokens").at(text_excerpt(name));
        const json& ids = required_member(*s, "ids", sp);
        if (!ids.is_array()) sp.at("ids").fail("must be a list of ids");
        add(ids, sp.at("ids"));
      } else {
        p.fail("must be {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    const auto token = [&](const char* key) {
      const json& pair = required_member(j, key, place);
      if (!pair.is_array() || pair.size() != 2) place.at(key).fail("must be [token, id]");
      return token_id_value(pair[1], place.at(key).index(1));
    };
    t.before.push_back(token("cls"));
    t.after.push_back(token("sep"));
  } else {
    place.at("type").fail("is '" + text_excerpt(type) +
                          "', a post-processor specdec does not support (supported: TemplateProcessing, ByteLevel, "
                          "BertProcessing, RobertaProcessing, Sequence)");
  }
}

// A tokenizer_config.json special token: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> special_token_name(const json& config, const char* key, const JsonPlace& place) {
  const json* v = optional_member(config, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_object() && v->contains("content") && v->at("content").is_string()) return v->at("content").get<std::string>();
  place.at(key).fail("must be a token string or {\"content\": ...}");
}

std::vector<int32_t> id_list(const json& j, const char* key, const JsonPlace& place) {
  const json* v = optional_member(j, key);
  if (!v) return {};
  std::vector<int32_t> ids;
  if (v->is_array()) {
    for (std::size_t i = 0; i < v->size(); ++i) ids.push_back(token_id_value((*v)[i], place.at(key).index(i)));
  } else {
    ids.push_back(token_id_value(*v, place.at(key)));
  }
  return ids;
}

}  // namespace

std::unique_ptr<HfTokenizer> HfTokenizer::parse(const json& j, const std::string& source) {
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  t->file_ = source;
  const JsonPlace top{source, ""};
  if (!j.is_object()) top.fail("is not a JSON object");
  static const json null_json;
  const auto member = [&](const char* key) -> const json& { return j.contains(key) ? j.at(key) : null_json; };
  t->model_ = TokenModel::parse(required_member(j, "model", top), top.at("model"));
  t->added_ = AddedVocabulary::parse(member("added_tokens"), top.at("added_tokens"));
  t->normalizer_ = Normalizer::parse(member("normalizer"), top.at("normalizer"));
  t->added_.normalize_patterns(t->normalizer_);
  t->pre_tokenizer_ = PreTokenizer::parse(member("pre_tokenizer"), top.at("pre_tokenizer"));
  t->decoder_ = TokenDecoder::parse(member("decoder"), top.at("decoder"));
  parse_post_processor(member("post_processor"), top.at("post_processor"), t->template_);
  t->byte_level_ = has_component(member("decoder"), "ByteLevel") || has_component(member("pre_tokenizer"), "ByteLevel");
  for (const auto* ids : {&t->template_.before, &t->template_.after}) {
    for (const int32_t id : *ids)
      if (!t->token_string(id)) top.at("post_processor").fail("adds the id " + std::to_string(id) + ", which is not a token");
  }
  return t;
}

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "tokenizer.json";
  std::unique_ptr<HfTokenizer> t = parse(read_json(path, "tokenizer file"), path.string());

  // tokenizer_config.json: the named BOS/EOS, and whether BOS/EOS go around a prompt (when it
  // says so explicitly, as older transformers files do, it overrides the post-processor).
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    const json c = read_json(config_path, "tokenizer config");
    const JsonPlace cp{config_path.string(), ""};
    if (!c.is_object()) cp.fail("is not a JSON object");
    const auto resolve = [&](const char* key) -> std::optional<int32_t> {
      const auto name = special_token_name(c, key, cp);
      if (!name) return std::nullopt;
      const auto id = t->token_id(*name);
      if (!id) cp.at(key).fail("is '" + text_excerpt(*name) + "', which is not a token of " + path.filename().string());
      return id;
    };
    t->bos_ = resolve("bos_token");
    if (const auto eos = resolve("eos_token")) t->eos_.push_back(*eos);
    const json* add_bos = optional_member(c, "add_bos_token");
    const json* add_eos = optional_member(c, "add_eos_token");
    if (add_bos || add_eos) {
      SpecialTemplate o;
      if (bool_member(c, "add_bos_token", false, cp)) {
        if (!t->bos_) cp.at("add_bos_token").fail("is true but no bos_token is named");
        o.before.push_back(*t->bos_);
      }
      if (bool_member(c, "add_eos_token", false, cp)) {
        if (t->eos_.empty()) cp.at("add_eos_token").fail("is true but no eos_token is named");
        o.after.push_back(t->eos_.front());
      }
      t->template_ = o;
    }
  }
  // generation_config.json: what generation starts and stops with.
  const std::filesystem::path gen_path = dir / "generation_config.json";
  if (std::filesystem::exists(gen_path)) {
    const json g = read_json(gen_path, "generation config");
    const JsonPlace gp{gen_path.string(), ""};
    const auto bos = id_list(g, "bos_token_id", gp);
    if (!t->bos_ && !bos.empty()) t->bos_ = bos.front();
    for (int32_t e : id_list(g, "eos_token_id", gp))
      if (std::find(t->eos_.begin(), t->eos_.end(), e) == t->eos_.end()) t->eos_.push_back(e);
  }
  return t;
}

std::optional<std::string> HfTokenizer::token_string(int32_t id) const {
  if (const AddedToken* a = added_.by_id(id)) return a->content;
  return model_->id_to_token(id);
}

std::optional<int32_t> HfTokenizer::token_id(const std::string& token) const {
  if (const auto id = added_.id_of(token)) return id;
  return model_->token_to_id(token);
}

// Ids are at most kMaxTokenId (checked at load), so the size fits int32; computed in 64 bits all the same.
int32_t HfTokenizer::size() const {
  return static_cast<int32_t>(std::max<int64_t>(model_->max_id(), added_.max_id()) + 1);
}

std::string HfTokenizer::description() const {
  return file_ + " (" + model_->type() + (byte_level_ ? ", byte-level" : "") + ", " + std::to_string(size()) + " token ids)";
}

void HfTokenizer::encode_text(const std::string& text, std::size_t offset, std::vector<int32_t>& out, uint64_t& left) const {
  const std::string normalized = normalizer_.apply(text, left);
  const uint64_t pieces_limit = left;  // the pieces are this stretch's normalized text, regrouped
  left -= normalized.size();
  for (const TextSegment& s : added_.split(normalized, true)) {
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    for (const Piece& p : pre_tokenizer_.apply({Piece{s.text, offset == 0 && s.offset == 0}}, pieces_limit)) model_->tokenize(p.text, out);
  }
}

std::vector<int32_t> HfTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  check_input_limit(file_, "the text to encode (bytes)", static_cast<long long>(text.size()), kMaxPromptBytes);
  require_valid_utf8(text, "the text to encode");
  // What the normalizer may make of the whole text, shared by the stretches between added tokens
  // (each would otherwise get its own slack), and the time all its regex searches may take.
  uint64_t left = expansion_limit(text.size());
  const RegexTimeBudget regex_time(text.size());
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = template_.before;
  for (const TextSegment& s : added_.split(text, false)) {
    if (s.id >= 0) {
      ids.push_back(s.id);
    } else {
      encode_text(s.text, s.offset, ids, left);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), template_.after.begin(), template_.after.end());
  return ids;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    const AddedToken* a = added_.by_id(id);
    if (a && a->special && skip_special_tokens) continue;
    if (a) {
      tokens.push_back(a->pattern);  // a normalized token as it was matched ("▁main"), for the decoder to undo
    } else if (auto s = model_->id_to_token(id)) {
      tokens.push_back(std::move(*s));  // ids outside the vocabulary are dropped, as HF does
    }
  }
  return decoder_.decode(std::move(tokens));
}

std::string HfTokenizer::token_text(int32_t id) const {
  if (const AddedToken* a = added_.by_id(id)) return a->content;
  const auto token = model_->id_to_token(id);
  if (!token) return id_text(id);
  std::string bytes;
  if (byte_level_) {
    const auto b = from_byte_level(*token);
    bytes = b ? *b : *token;
  } else {
    bytes = *token;
    for (std::size_t at = bytes.find("\xE2\x96\x81"); at != std::string::npos; at = bytes.find("\xE2\x96\x81", at + 1)) {
      bytes.replace(at, 3, " ");  // SentencePiece's word-start mark '▁'
    }
  }
  std::string shown;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = utf8_sequence_length(bytes, i);
    if (n > 0) {
      shown.append(bytes, i, n);
      i += n;
    } else {
      shown += byte_fallback_token(static_cast<unsigned char>(bytes[i++]));
    }
  }
  return shown;
}

}  // namespace specdec::text
