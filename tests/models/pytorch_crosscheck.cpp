#include "tests/models/pytorch_crosscheck.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"
#include "traces/hdf5.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;

constexpr float kLogitBound = 1e-4f;
constexpr float kHiddenBound = 1e-4f;

struct Table {
  std::vector<float> values;
  uint64_t rows = 0, cols = 0;
  const float* row(uint64_t r) const { return values.data() + r * cols; }
};

Table read_table(const h5::Group& g, const std::string& name) {
  Table t;
  t.values = g.read_matrix<float>(name, &t.rows, &t.cols);
  return t;
}

// Largest violation ratio |a − b| / bound(b) over a row; > 1 fails.
struct Worst {
  double ratio = 0, error = 0;
  std::string where;
};

void compare_row(const float* cpp, const float* torch, uint64_t n, float bound, bool relative, const std::string& where,
                 Worst& worst) {
  for (uint64_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(cpp[i]) - torch[i]);
    const double allowed = bound * (relative ? std::max(1.0, std::fabs(static_cast<double>(torch[i]))) : 1.0);
    if (!std::isfinite(cpp[i]) || err / allowed > worst.ratio) {
      worst.ratio = std::isfinite(cpp[i]) ? err / allowed : INFINITY;
      worst.error = err;
      worst.where = where + " column " + std::to_string(i);
    }
  }
}

}  // namespace

class PyTorchCrossCheck::Impl {
 public:
  explicit Impl(const fs::path& dir) : dir_(dir), file_(h5::File::open_read_only(dir / "pytorch_reference.h5")) {
    tokens_ = read_table_i32("sequences/tokens");
  }

  std::vector<std::vector<int32_t>> read_table_i32(const std::string& name) const {
    uint64_t rows = 0, cols = 0;
    const std::vector<int32_t> v = file_.read_matrix<int32_t>(name, &rows, &cols);
    std::vector<std::vector<int32_t>> out(rows);
    for (uint64_t r = 0; r < rows; ++r) out[r].assign(v.begin() + r * cols, v.begin() + (r + 1) * cols);
    return out;
  }

  // Full forward of `model` over sequence s with every hidden state.
  static ForwardResult run(const Transformer& model, const std::vector<int32_t>& tokens, bool all_hidden) {
    auto cache = model.new_cache(static_cast<int>(tokens.size()));
    ForwardRequest req = ForwardRequest::chain(tokens);
    if (all_hidden) {
      for (int l = 0; l <= model.config().num_hidden_layers; ++l) req.aux_layers.push_back(l);
    }
    return model.forward(*cache, req);
  }

  void check_language_model(const std::string& name) {
    const LlamaModel loaded = load_llama_checkpoint(dir_ / name);
    const Transformer model(loaded.config, loaded.weights);
    const h5::Group g = file_.open_group(name);
    const Table logits = read_table(g, "logits"), hidden = read_table(g, "hidden");
    const int L = model.config().num_hidden_layers, H = model.config().hidden_size;
    Worst wl, wh;
    for (size_t s = 0; s < tokens_.size(); ++s) {
      const int T = static_cast<int>(tokens_[s].size());
      const ForwardResult r = run(model, tokens_[s], true);
      for (int t = 0; t < T; ++t) {
        const std::string at = name + " sequence " + std::to_string(s) + " position " + std::to_string(t);
        compare_row(r.logits.row(t).data(), logits.row(s * T + t), logits.cols, kLogitBound, false, at + " logits",
                    wl);
        for (int l = 0; l <= L; ++l) {
          compare_row(r.aux_hidden.row(t).data() + static_cast<ptrdiff_t>(l) * H,
                      hidden.row((s * (L + 1) + l) * T + t), hidden.cols, kHiddenBound, true,
                      at + " hidden state " + std::to_string(l), wh);
        }
      }
    }
    EXPECT_LE(wl.ratio, 1.0) << "worst logit error " << wl.error << " at " << wl.where << " (bound " << kLogitBound << ")";
    EXPECT_LE(wh.ratio, 1.0) << "worst hidden-state error " << wh.error << " at " << wh.where;
    std::printf("%s: max |logit error| %.3g, worst hidden error %.3g (%.3g of its bound)\n", name.c_str(), wl.error,
                wh.error, wh.ratio);
  }

  void check_head(const std::string& name) {
    const LlamaModel t = load_llama_checkpoint(dir_ / "target");
    const Transformer target(t.config, t.weights);
    const EagleHead head = load_eagle_head(dir_ / name, target);
    const h5::Group g = file_.open_group(name);
    const Table logits = read_table(g, "logits"), hidden = read_table(g, "hidden");
    const bool peagle = head.config().kind == EagleKind::peagle;
    const bool mtp = head.config().kind == EagleKind::mtp;
    const bool final_hidden = head.config().reads_final_hidden();  // EAGLE-1, MTP
    // MTP depth 2: the module again, on its own depth-1 outputs (before the final norm) at
    // positions 0..N-2 with the tokens t_{i+2}.
    Table logits2, hidden2;
    if (mtp) {
      logits2 = read_table(g, "depth2_logits");
      hidden2 = read_table(g, "depth2_hidden");
    }
    Worst wl2, wh2;
    uint64_t row2 = 0;
    std::vector<std::vector<int32_t>> ptokens, ppositions;
    if (peagle) {
      ptokens = read_table_i32(name + "/tokens");
      ppositions = read_table_i32(name + "/positions");
    }
    Worst wl, wh;
    uint64_t row0 = 0;
    for (size_t s = 0; s < tokens_.size(); ++s) {
      const int T = static_cast<int>(tokens_[s].size()), N = T - 1;
      auto tcache = target.new_cache(T);
      ForwardRequest req = ForwardRequest::chain(tokens_[s]);
      req.logit_rows.clear();
      req.final_hidden = final_hidden;
      if (!final_hidden) req.aux_layers = head.config().aux_layers;
      const ForwardResult tr = target.forward(*tcache, req);
      const Matrix& feats = final_hidden ? tr.final_hidden : tr.aux_hidden;

      EagleHead::Input in;
      const int rows = peagle ? static_cast<int>(ptokens[s].size()) : N;
      in.tokens = peagle ? ptokens[s] : std::vector<int32_t>(tokens_[s].begin() + 1, tokens_[s].end());
      if (peagle) in.positions = ppositions[s];
      in.features = Matrix(rows, feats.cols());
      for (int i = 0; i < rows; ++i) {
        if (i < N) {
          in.features.row(i) = feats.row(i);
        } else {
          for (int c = 0; c < feats.cols(); ++c) in.features(i, c) = head.mask_hidden()[c];
        }
      }
      for (int i = 0; i < rows; ++i) in.logit_rows.push_back(i);
      auto hcache = head.new_cache(rows);
      const EagleHead::Output out = head.forward(*hcache, in);
      for (int i = 0; i < rows; ++i) {
        const std::string at = name + " sequence " + std::to_string(s) + " slot " + std::to_string(i);
        compare_row(out.logits.row(i).data(), logits.row(row0 + i), logits.cols, kLogitBound, false, at + " logits", wl);
        compare_row(out.hidden.row(i).data(), hidden.row(row0 + i), hidden.cols, kHiddenBound, true, at + " hidden", wh);
      }
      row0 += rows;
      if (mtp) {
        const int n2 = N - 1;
        EagleHead::Input in2;
        in2.tokens.assign(tokens_[s].begin() + 2, tokens_[s].end());
        in2.features = Matrix(n2, out.hidden.cols());
        for (int i = 0; i < n2; ++i) {
          in2.features.row(i) = out.hidden.row(i);
          in2.logit_rows.push_back(i);
        }
        auto cache2 = head.new_cache(n2);
        const EagleHead::Output out2 = head.forward(*cache2, in2);
        for (int i = 0; i < n2; ++i) {
          const std::string at = name + " depth 2 sequence " + std::to_string(s) + " position " + std::to_string(i);
          compare_row(out2.logits.row(i).data(), logits2.row(row2 + i), logits2.cols, kLogitBound, false,
                      at + " logits", wl2);
          compare_row(out2.hidden.row(i).data(), hidden2.row(row2 + i), hidden2.cols, kHiddenBound, true,
                      at + " hidden", wh2);
        }
        row2 += n2;
      }
    }
    ASSERT_EQ(row0, logits.rows) << name << ": row count differs from the PyTorch file";
    if (mtp) {
      ASSERT_EQ(row2, logits2.rows) << name << ": depth-2 row count differs from the PyTorch file";
      EXPECT_LE(wl2.ratio, 1.0) << "worst depth-2 logit error " << wl2.error << " at " << wl2.where;
      EXPECT_LE(wh2.ratio, 1.0) << "worst depth-2 hidden-state error " << wh2.error << " at " << wh2.where;
      std::printf("%s depth 2: max |logit error| %.3g, worst hidden error %.3g (%.3g of its bound)\n", name.c_str(),
                  wl2.error, wh2.error, wh2.ratio);
    }
    EXPECT_LE(wl.ratio, 1.0) << "worst logit error " << wl.error << " at " << wl.where << " (bound " << kLogitBound << ")";
    EXPECT_LE(wh.ratio, 1.0) << "worst hidden-state error " << wh.error << " at " << wh.where;
    std::printf("%s: max |logit error| %.3g, worst hidden error %.3g (%.3g of its bound)\n", name.c_str(), wl.error,
                wh.error, wh.ratio);
  }

  void check_medusa(const std::string& name) {
    const LlamaModel t = load_llama_checkpoint(dir_ / "target");
    const Transformer target(t.config, t.weights);
    const MedusaHeads heads = load_medusa_heads(dir_ / name, t.config);
    const h5::Group g = file_.open_group(name);
    const Table logits = read_table(g, "logits");
    const int K = heads.num_heads();
    Worst wl;
    uint64_t rows = 0;
    for (size_t s = 0; s < tokens_.size(); ++s) {
      const int T = static_cast<int>(tokens_[s].size());
      auto tcache = target.new_cache(T);
      ForwardRequest req = ForwardRequest::chain(tokens_[s]);
      req.logit_rows.clear();
      req.final_hidden = true;
      const std::vector<Matrix> out = heads.forward(target.forward(*tcache, req).final_hidden);
      ASSERT_EQ(static_cast<int>(out.size()), K);
      for (int k = 0; k < K; ++k) {
        for (int i = 0; i < T; ++i) {
          const std::string at = name + " sequence " + std::to_string(s) + " head " + std::to_string(k) +
                                 " position " + std::to_string(i);
          compare_row(out[k].row(i).data(), logits.row((s * K + k) * T + i), logits.cols, kLogitBound, false,
                      at + " logits", wl);
        }
        rows += T;
      }
    }
    ASSERT_EQ(rows, logits.rows) << name << ": row count differs from the PyTorch file";
    EXPECT_LE(wl.ratio, 1.0) << "worst logit error " << wl.error << " at " << wl.where << " (bound " << kLogitBound << ")";
    std::printf("%s: max |logit error| %.3g\n", name.c_str(), wl.error);
  }

  fs::path dir_;
  h5::File file_;
  std::vector<std::vector<int32_t>> tokens_;
};


PyTorchCrossCheck::PyTorchCrossCheck(const std::filesystem::path& models_dir)
    : impl_(std::make_unique<Impl>(models_dir)) {}
PyTorchCrossCheck::~PyTorchCrossCheck() = default;
void PyTorchCrossCheck::check_language_model(const std::string& name) { impl_->check_language_model(name); }
void PyTorchCrossCheck::check_head(const std::string& name) { impl_->check_head(name); }
void PyTorchCrossCheck::check_medusa(const std::string& name) { impl_->check_medusa(name); }

}  // namespace specdec
