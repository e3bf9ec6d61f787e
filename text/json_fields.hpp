#pragma once
// Reading tokenizer.json fields with errors that name the file and the field path, e.g.
// "tok/tokenizer.json: field 'model.merges[3]' must be a pair of strings".
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::text {

using json = nlohmann::json;

// A position in a JSON file: the file, and the dotted field path inside it. The path is kept as
// a chain of shared segments and spelled out only for an error: nested components (a Sequence of
// Sequences ...) hold one place per level, and a spelled-out path per level would make their memory
// quadratic in the depth.
class JsonPlace {
 public:
  JsonPlace(std::string file, const std::string& path) : file_(std::make_shared<const std::string>(std::move(file))) {
    if (!path.empty()) tail_ = std::make_shared<const Segment>(Segment{nullptr, path, false});
  }

  JsonPlace at(const std::string& key) const { return JsonPlace(file_, std::make_shared<const Segment>(Segment{tail_, key, false})); }
  JsonPlace index(std::size_t i) const {
    return JsonPlace(file_, std::make_shared<const Segment>(Segment{tail_, "[" + std::to_string(i) + "]", true}));
  }

  const std::string& file() const { return *file_; }
  // "model.merges[3]"; "" at the top level.
  std::string path() const {
    std::vector<const Segment*> chain;
    for (const Segment* s = tail_.get(); s; s = s->parent.get()) chain.push_back(s);
    std::string p;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (!p.empty() && !(*it)->is_index) p += '.';
      p += (*it)->text;
    }
    return p;
  }
  // "tok/tokenizer.json: field 'model.merges[3]'" (just the file at the top level).
  std::string where() const {
    const std::string p = path();
    return file() + (p.empty() ? std::string() : ": field '" + p + "'");
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(where() + " " + what); }

 private:
  struct Segment {
    std::shared_ptr<const Segment> parent;
    std::string text;  // a key, or "[i]"
    bool is_index;
  };
  JsonPlace(std::shared_ptr<const std::string> file, std::shared_ptr<const Segment> tail)
      : file_(std::move(file)), tail_(std::move(tail)) {}
  std::shared_ptr<const std::string> file_;
  std::shared_ptr<const Segment> tail_;
};

// A JSON value as error messages show it: compact and cut after about `max_chars` characters with
// "...", so that a message never holds a whole (possibly huge) value. Never dumps more than it shows.
inline std::string json_excerpt(const json& j, std::size_t max_chars = 200) {
  std::string out;
  const auto full = [&] { return out.size() >= max_chars; };
  const std::function<void(const json&)> put = [&](const json& v) {
    if (full()) return;
    if (v.is_object()) {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end() && !full(); ++it) {
        if (!first) out += ',';
        first = false;
        put(json(it.key().substr(0, max_chars)));
        out += ':';
        put(it.value());
      }
      out += '}';
    } else if (v.is_array()) {
      out += '[';
      for (std::size_t i = 0; i < v.size() && !full(); ++i) {
        if (i) out += ',';
        put(v[i]);
      }
      out += ']';
    } else if (v.is_string()) {
      out += json(v.get_ref<const std::string&>().substr(0, max_chars)).dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
      out += v.dump();
    }
  };
  put(j);
  if (out.size() > max_chars) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

// j[key] when present and not null; nullptr otherwise.
inline const json* optional_member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

inline const json& required_member(const json& j, const char* key, const JsonPlace& place) {
  const json* m = optional_member(j, key);
  if (!m) place.at(key).fail("is missing");
  return *m;
}

inline std::string string_member(const json& j, const char* key, const JsonPlace& place) {
  const json& m = required_member(j, key, place);
  if (!m.is_string()) place.at(key).fail(std::string("must be a string, got ") + m.type_name());
  return m.get<std::string>();
}

inline bool bool_member(const json& j, const char* key, bool fallback, const JsonPlace& place) {
  const json* m = optional_member(j, key);
  if (!m) return fallback;
  if (!m->is_boolean()) place.at(key).fail(std::string("must be true or false, got ") + m->type_name());
  return m->get<bool>();
}

// A short excerpt of a string from the file for an error message (a token, a pattern, a type name
// may be megabytes long): at most `max_bytes` bytes, then "...".
inline std::string text_excerpt(const std::string& s, std::size_t max_bytes = 200) {
  return s.size() <= max_bytes ? s : s.substr(0, max_bytes) + "...";
}

// A token id field: an integer in [0, kMaxTokenId] (see reference/core/input_limits.hpp).
inline int32_t token_id_value(const json& v, const JsonPlace& place) {
  const bool in_range = (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t(kMaxTokenId)) ||
                        (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxTokenId);
  if (!in_range) {
    place.fail("must be a token id, an integer in [0, " + std::to_string(kMaxTokenId) + "] (got " + json_excerpt(v) +
               "; specdec supports vocabularies of up to 2^24 tokens)");
  }
  return static_cast<int32_t>(v.get<int64_t>());
}

// The "type" of a component object (normalizer, pre_tokenizer, model, decoder, ...).
inline std::string component_type(const json& j, const JsonPlace& place) {
  if (!j.is_object()) place.fail(std::string("must be an object, got ") + j.type_name());
  return string_member(j, "type", place);
}

}  // namespace specdec::text
