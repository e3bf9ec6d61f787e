#include "reference/io/vocabulary.hpp"

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/json_int.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {

Vocabulary Vocabulary::bytes(int byte_offset, std::map<std::string, int> special_tokens) {
  // Ids are int32 token ids, and size() (largest id + 1) must be one too.
  constexpr int kMaxId = INT32_MAX - 256;
  if (byte_offset < 0 || byte_offset > kMaxId) {
    throw Error("vocabulary: byte_offset must be in [0, " + std::to_string(kMaxId) + "], got " + std::to_string(byte_offset));
  }
  Vocabulary v;
  v.byte_offset_ = byte_offset;
  for (const auto& [name, id] : special_tokens) {
    if (id > kMaxId) {
      throw Error("vocabulary: special token " + name + " has id " + std::to_string(id) + ", more than " +
                  std::to_string(kMaxId));
    }
    if (id < 0 || (id >= byte_offset && id < byte_offset + 256)) {
      throw Error("vocabulary: special token " + name + " has id " + std::to_string(id) +
                  ", which is negative or inside the byte range [" + std::to_string(byte_offset) + ", " +
                  std::to_string(byte_offset + 256) + ")");
    }
    v.special_by_id_[id] = name;
  }
  v.special_ = std::move(special_tokens);
  return v;
}

Vocabulary Vocabulary::load(const std::filesystem::path& path) {
  const nlohmann::json j = read_json_file(path.string(), "vocabulary file");
  // A field of the wrong JSON type (e.g. "format": 1) is a bad field, like a missing one.
  auto field = [&](const char* name) { return j.contains(name) ? j.at(name) : nlohmann::json(); };
  if (!j.is_object() || field("format") != "specdec-vocab") {
    throw Error(path.string() + ": not a specdec vocabulary (expected \"format\": \"specdec-vocab\")");
  }
  if (field("version") != 1) throw Error(path.string() + ": unsupported vocabulary version (expected 1)");
  if (field("type") != "bytes") throw Error(path.string() + ": unknown vocabulary type (expected \"bytes\")");
  try {
    const int byte_offset = json_int32(field("byte_offset"), "byte_offset");
    std::map<std::string, int> special;
    const nlohmann::json tokens = field("special_tokens");
    if (!tokens.is_null() && !tokens.is_object())
      throw Error(std::string("special_tokens must be an object of name: id, got a ") + tokens.type_name());
    if (tokens.is_object())
      for (const auto& [name, id] : tokens.items()) special[name] = json_int32(id, "special token " + name);
    return bytes(byte_offset, special);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": bad vocabulary field (" + e.what() + ")");
  } catch (const Error& e) {
    throw Error(path.string() + ": " + e.what());
  }
}

std::optional<Vocabulary> Vocabulary::find(const std::filesystem::path& model_dir) {
  const auto p = std::filesystem::is_directory(model_dir) ? model_dir / "vocab.json" : model_dir.parent_path() / "vocab.json";
  if (!std::filesystem::exists(p)) return std::nullopt;
  return load(p);
}

void Vocabulary::save(const std::filesystem::path& path) const {
  nlohmann::json j = {{"format", "specdec-vocab"}, {"version", 1}, {"type", "bytes"}, {"byte_offset", byte_offset_},
                      {"special_tokens", special_}};
  write_file_atomically(path, j.dump(2) + "\n");
}

int Vocabulary::size() const {
  int n = byte_offset_ + 256;
  for (const auto& [id, name] : special_by_id_) n = std::max(n, id + 1);
  return n;
}

std::vector<int32_t> Vocabulary::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (unsigned char ch : text) ids.push_back(byte_offset_ + ch);
  return ids;
}

std::string Vocabulary::token_text(int32_t id) const {
  if (id >= byte_offset_ && id < byte_offset_ + 256) return std::string(1, static_cast<char>(id - byte_offset_));
  auto it = special_by_id_.find(id);
  if (it != special_by_id_.end()) return it->second;
  std::string s = "<";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "<" + temporary
  s += std::to_string(id);
  s += ">";
  return s;
}

std::string Vocabulary::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (int32_t id : ids) s += token_text(id);
  return s;
}

std::optional<int32_t> Vocabulary::special(const std::string& name) const {
  auto it = special_.find(name);
  if (it == special_.end()) return std::nullopt;
  return it->second;
}

}  // namespace specdec
