#pragma once
// Editing a saved drafter checkpoint in place (tensors of model.safetensors, config.json), for the
// tests of every way a user's checkpoint can be wrong: test_eagle_head, test_mtp_checkpoint.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/io/safetensors.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec::testing {

namespace fs = std::filesystem;

struct StoredTensor {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

inline std::vector<StoredTensor> read_tensors(const fs::path& file) {
  const SafetensorsFile f(file);
  std::vector<StoredTensor> out;
  for (const TensorInfo& t : f.tensors()) {
    StoredTensor s{t.name, t.dtype, t.shape, {}, {}};
    if (is_float_dtype(t.dtype)) {
      s.floats = f.floats(t.name);
    } else {
      s.ints = f.int64s(t.name);
    }
    out.push_back(std::move(s));
  }
  return out;
}

inline void write_tensors(const fs::path& file, const std::vector<StoredTensor>& tensors) {
  SafetensorsWriter w;
  for (const StoredTensor& s : tensors) {
    if (is_float_dtype(s.dtype)) {
      w.add_floats(s.name, s.dtype, s.shape, s.floats);
    } else {
      w.add_int64s(s.name, s.dtype, s.shape, s.ints);
    }
  }
  w.write(file);
}

// Applies `edit` to the tensors of dir/model.safetensors.
inline void edit_tensors(const fs::path& dir, const std::function<void(std::vector<StoredTensor>&)>& edit) {
  std::vector<StoredTensor> t = read_tensors(dir / "model.safetensors");
  edit(t);
  write_tensors(dir / "model.safetensors", t);
}

inline StoredTensor& tensor(std::vector<StoredTensor>& ts, const std::string& name) {
  for (StoredTensor& t : ts)
    if (t.name == name) return t;
  throw std::runtime_error("test: no tensor " + name);
}

inline void remove_tensor(std::vector<StoredTensor>& ts, const std::string& name) {
  std::erase_if(ts, [&](const StoredTensor& t) { return t.name == name; });
}

inline void edit_config(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(read_text(dir / "config.json"));
  edit(j);
  write_text(dir / "config.json", j.dump(2));
}

}  // namespace specdec::testing
