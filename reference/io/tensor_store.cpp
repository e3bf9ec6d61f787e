#include "reference/io/tensor_store.hpp"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TensorStore::TensorStore(const std::filesystem::path& path) : source_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path single, index;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / kSingleFile, ec)) {
      single = path / kSingleFile;
    } else if (fs::exists(path / kIndexFile, ec)) {
      index = path / kIndexFile;
    } else if (fs::exists(path / "pytorch_model.bin", ec) || fs::exists(path / "pytorch_model.bin.index.json", ec)) {
      throw Error("model directory '" + path.string() + "' has its weights as pytorch_model.bin (a PyTorch pickle), which specdec " +
                  "does not read; convert them to " + kSingleFile + " first (safetensors.torch.save_file)");
    } else {
      throw Error("model directory '" + path.string() + "' has neither " + kSingleFile + " nor " + kIndexFile);
    }
  } else if (fs::exists(path, ec)) {
    const std::string file = path.filename().string();
    if (ends_with(file, ".json") && !ends_with(file, ".index.json")) {
      const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
      throw Error("'" + path.string() + "' is a JSON file, not weights: give the checkpoint directory that holds it ('" +
                  dir.string() + "'), its .safetensors file or its shard index (.index.json)");
    }
    if (ends_with(file, ".bin") || ends_with(file, ".pt") || ends_with(file, ".pth")) {
      throw Error("'" + path.string() + "' is a PyTorch pickle, which specdec does not read; convert it to " + kSingleFile +
                  " first (safetensors.torch.save_file)");
    }
    (ends_with(file, ".index.json") ? index : single) = path;
  } else {
    throw Error("model path '" + path.string() + "' does not exist");
  }

  if (!single.empty()) {
    add_file(single);
    for (const TensorInfo& t : files_.back().tensors()) where_[t.name] = 0;
    return;
  }

  const std::string index_name = index.string();
  const nlohmann::json j = read_json_file(index_name, "shard index");
  if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object()) {
    throw Error(index_name + ": shard index must be an object with a 'weight_map' object {tensor: file}");
  }
  std::map<std::string, std::size_t> shard_slot;
  for (const auto& [tensor, shard] : j.at("weight_map").items()) {
    if (!shard.is_string()) {
      throw Error(index_name + ": weight_map entry for '" + tensor + "' must be a file name, got " + shard.dump());
    }
    const fs::path rel = shard.get<std::string>();
    bool escapes = rel.empty() || rel.is_absolute();
    for (const fs::path& part : rel) escapes = escapes || part == "..";
    if (escapes) {
      throw Error(index_name + ": weight_map entry for '" + tensor + "' names '" + rel.string() +
                  "', expected a file inside the model directory");
    }
    auto slot = shard_slot.find(rel.string());
    if (slot == shard_slot.end()) {
      const fs::path shard_path = index.parent_path() / rel;
      if (!fs::is_regular_file(shard_path, ec)) {
        throw Error(index_name + ": shard '" + rel.string() + "' (listed for tensor '" + tensor +
                    "') does not exist in '" + index.parent_path().string() + "'");
      }
      add_file(shard_path);
      slot = shard_slot.emplace(rel.string(), files_.size() - 1).first;
    }
    const SafetensorsFile& f = files_[slot->second];
    if (!f.has(tensor)) {
      throw Error(index_name + ": tensor '" + tensor + "' is listed for shard '" + rel.string() +
                  "' but that file does not contain it");
    }
    where_[tensor] = slot->second;
  }
}

void TensorStore::add_file(const std::filesystem::path& path) { files_.emplace_back(path); }

std::vector<std::string> TensorStore::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, slot] : where_) out.push_back(name);
  return out;
}

const SafetensorsFile& TensorStore::file(const std::string& name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) throw Error("'" + source_.string() + "': missing tensor '" + name + "'");
  return files_[it->second];
}

const TensorInfo& TensorStore::info(const std::string& name) const { return file(name).info(name); }

const std::filesystem::path& TensorStore::file_of(const std::string& name) const { return file(name).path(); }

void TensorStore::check_shape(const std::string& name, const std::vector<int64_t>& expected) const {
  const TensorInfo& t = info(name);
  if (t.shape != expected) {
    throw Error(file_of(name).string() + ": tensor '" + name + "' has shape " + shape_string(t.shape) +
                ", expected " + shape_string(expected));
  }
}

Matrix TensorStore::matrix(const std::string& name, int64_t rows, int64_t cols) const {
  check_shape(name, {rows, cols});
  Matrix m(rows, cols);  // row-major (tensor.hpp): converted straight into place
  file(name).floats_into(name, 0, std::span<float>(m.data(), static_cast<std::size_t>(m.size())));
  release(name);
  return m;
}

Vector TensorStore::vector(const std::string& name, int64_t n) const {
  check_shape(name, {n});
  const std::vector<float> v = file(name).floats(name);
  return Eigen::Map<const Vector>(v.data(), n);
}

Vector TensorStore::flat_vector(const std::string& name, int64_t n) const {
  const TensorInfo& t = info(name);
  bool ok = !t.shape.empty() && t.shape.back() == n;
  for (std::size_t i = 0; ok && i + 1 < t.shape.size(); ++i) ok = t.shape[i] == 1;
  if (!ok) {
    throw Error(file_of(name).string() + ": tensor '" + name + "' has shape " + shape_string(t.shape) +
                ", expected [" + std::to_string(n) + "] (optionally with leading 1-dimensions)");
  }
  const std::vector<float> v = file(name).floats(name);
  return Eigen::Map<const Vector>(v.data(), n);
}

std::vector<int64_t> TensorStore::int64s(const std::string& name, int64_t n) const {
  check_shape(name, {n});
  return file(name).int64s(name);
}

std::vector<float> TensorStore::floats(const std::string& name) const { return file(name).floats(name); }

void TensorStore::floats_into(const std::string& name, uint64_t first, std::span<float> out) const {
  file(name).floats_into(name, first, out);
}

void TensorStore::release(const std::string& name) const noexcept {
  const auto it = where_.find(name);
  if (it != where_.end()) files_[it->second].release(name);
}

}  // namespace specdec
