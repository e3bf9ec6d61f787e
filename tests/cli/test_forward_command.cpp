// specdec forward: the HDF5 it writes holds exactly what the library computes (the reference
// Transformer's logits and output_hidden_states, an EAGLE-family head's teacher-forced first
// step), on the bundled models; bad input fails with a clear message and leaves no file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/backend.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"
#include "tests/cli/cli_runner.hpp"
#include "traces/hdf5.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run;

std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

const std::vector<int32_t> kTokens = {0, 40, 75, 107, 104, 35, 74, 111, 103, 35, 118, 100};
const std::string kIds = "0,40,75,107,104,35,74,111,103,35,118,100";

class ForwardCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("specdec_forward_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const LlamaModel t = load_llama_checkpoint(bundled("target"));
    target_ = new Transformer(t.config, t.weights);
  }
  static void TearDownTestSuite() {
    delete target_;
    target_ = nullptr;
    fs::remove_all(dir_);
  }
  static std::string out(const std::string& name) { return (dir_ / name).string(); }

  // The target's forward over kTokens with every output_hidden_states entry.
  static ForwardResult reference_forward() {
    ForwardRequest req = ForwardRequest::chain(kTokens);
    for (int l = 0; l <= target_->config().num_hidden_layers; ++l) req.aux_layers.push_back(l);
    auto cache = target_->new_cache(static_cast<int>(kTokens.size()));
    return target_->forward(*cache, req);
  }

  // The head's first step built the way tests/models/pytorch_crosscheck.cpp builds it.
  static EagleHead::Output head_step(const EagleHead& head, int k, std::vector<int32_t>* tokens,
                                     std::vector<int32_t>* positions) {
    const int T = static_cast<int>(kTokens.size()), N = T - 1;
    const bool eagle1 = head.config().kind == EagleKind::eagle1, peagle = head.config().kind == EagleKind::peagle;
    ForwardRequest req = ForwardRequest::chain(kTokens);
    req.final_hidden = eagle1;
    if (!eagle1) req.aux_layers = head.config().aux_layers;
    auto tcache = target_->new_cache(T);
    const ForwardResult tr = target_->forward(*tcache, req);
    const Matrix& feats = eagle1 ? tr.final_hidden : tr.aux_hidden;
    EagleHead::Input in;
    const int rows = peagle ? N + k - 1 : N;
    for (int i = 0; i < rows; ++i) {
      in.tokens.push_back(i < N ? kTokens[i + 1] : head.config().mask_token_id);
      in.positions.push_back(i);
      in.logit_rows.push_back(i);
    }
    in.features = Matrix(rows, feats.cols());
    for (int i = 0; i < rows; ++i) {
      if (i < N) {
        in.features.row(i) = feats.row(i);
      } else {
        for (int c = 0; c < feats.cols(); ++c) in.features(i, c) = head.mask_hidden()[c];
      }
    }
    *tokens = in.tokens;
    *positions = in.positions;
    auto hcache = head.new_cache(rows);
    return head.forward(*hcache, in);
  }

  static fs::path dir_;
  static Transformer* target_;
};
fs::path ForwardCommand::dir_;
Transformer* ForwardCommand::target_ = nullptr;

std::vector<float> read_cube(const h5::File& f, const std::string& name, std::vector<uint64_t>* shape) {
  const h5::Dataset d = f.open_dataset(name);
  EXPECT_EQ(d.dtype(), h5::Dtype::float32);
  *shape = d.shape();
  std::vector<float> v(static_cast<size_t>(d.checked_elements()));
  EXPECT_GE(H5Dread(d.id(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  return v;
}

void expect_rows_equal(const std::vector<float>& file, uint64_t rows, uint64_t cols, const Matrix& lib,
                       const std::string& what) {
  ASSERT_EQ(rows, static_cast<uint64_t>(lib.rows())) << what;
  ASSERT_EQ(cols, static_cast<uint64_t>(lib.cols())) << what;
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(file[r * cols + c], lib(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)))
          << what << " row " << r << " column " << c;
    }
}

TEST_F(ForwardCommand, TargetLogitsAndHiddenStatesAreTheLibrarys) {
  const CliRun r = run({"forward", "--model", bundled("target"), "--prompt-ids", kIds, "--out", out("t.h5")});
  ASSERT_EQ(r.code, 0) << r.err;
  const ForwardResult lib = reference_forward();
  const int T = static_cast<int>(kTokens.size()), L = target_->config().num_hidden_layers,
            H = target_->config().hidden_size, V = target_->config().vocab_size;
  const h5::File f = h5::File::open_read_only(out("t.h5"));
  EXPECT_EQ(f.read_vector<int32_t>("tokens"), kTokens);
  uint64_t rows = 0, cols = 0;
  const std::vector<float> logits = f.read_matrix<float>("logits", &rows, &cols);
  EXPECT_EQ(cols, static_cast<uint64_t>(V));
  expect_rows_equal(logits, rows, cols, lib.logits, "logits");
  std::vector<uint64_t> shape;
  const std::vector<float> hidden = read_cube(f, "hidden", &shape);
  ASSERT_EQ(shape, (std::vector<uint64_t>{static_cast<uint64_t>(L + 1), static_cast<uint64_t>(T), static_cast<uint64_t>(H)}));
  for (int l = 0; l <= L; ++l)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h) {
        ASSERT_EQ(hidden[(static_cast<size_t>(l) * T + t) * H + h], lib.aux_hidden(t, l * H + h))
            << "hidden state " << l << " position " << t << " column " << h;
      }
  // Index 0 is the embedding row; index L is the output after the final norm (transformers'
  // last entry), the final_hidden EAGLE-1 takes.
  for (int h = 0; h < H; ++h) EXPECT_EQ(hidden[static_cast<size_t>(h)], target_->weights().embed_tokens(kTokens[0], h));
  ForwardRequest req = ForwardRequest::chain(kTokens);
  req.final_hidden = true;
  auto cache = target_->new_cache(T);
  const ForwardResult fin = target_->forward(*cache, req);
  for (int h = 0; h < H; ++h) EXPECT_EQ(hidden[(static_cast<size_t>(L) * T + T - 1) * H + h], fin.final_hidden(T - 1, h));
  EXPECT_FALSE(f.has("draft"));

  if (backend_available("cpu")) {  // bitwise equal to the reference
    const CliRun c = run({"forward", "--model", bundled("target"), "--prompt-ids", kIds, "--out", out("c.h5"), "--backend", "cpu"});
    ASSERT_EQ(c.code, 0) << c.err;
    const h5::File fc = h5::File::open_read_only(out("c.h5"));
    expect_rows_equal(fc.read_matrix<float>("logits", &rows, &cols), rows, cols, lib.logits, "cpu logits");
    std::vector<uint64_t> cshape;
    EXPECT_EQ(read_cube(fc, "hidden", &cshape), hidden);
  }
}

TEST_F(ForwardCommand, DrafterFirstStepIsTheHeads) {
  const int N = static_cast<int>(kTokens.size()) - 1;
  for (const std::string name : {"eagle1", "eagle3", "peagle"}) {
    SCOPED_TRACE(name);
    const int k = 5;
    const CliRun r = run({"forward", "--model", bundled("target"), "--prompt-ids", kIds, "--out", out(name + ".h5"),
                          "--drafter", bundled(name), "--k", std::to_string(k)});
    ASSERT_EQ(r.code, 0) << r.err;
    const EagleHead head = load_eagle_head(bundled(name), *target_);
    std::vector<int32_t> tokens, positions;
    const EagleHead::Output lib = head_step(head, k, &tokens, &positions);
    const h5::File f = h5::File::open_read_only(out(name + ".h5"));
    const h5::Group g = f.open_group("draft");
    EXPECT_EQ(g.read_string_attribute("kind"), eagle_kind_name(head.config().kind));
    EXPECT_EQ(g.read_vector<int32_t>("tokens"), tokens);
    EXPECT_EQ(g.read_vector<int32_t>("positions"), positions);
    EXPECT_EQ(static_cast<int>(tokens.size()), name == "peagle" ? N + k - 1 : N);
    uint64_t rows = 0, cols = 0;
    const std::vector<float> logits = g.read_matrix<float>("logits", &rows, &cols);
    expect_rows_equal(logits, rows, cols, lib.logits, "draft logits");
    const std::vector<float> hidden = g.read_matrix<float>("hidden", &rows, &cols);
    expect_rows_equal(hidden, rows, cols, lib.hidden, "draft hidden");
  }
}

TEST_F(ForwardCommand, BadInputFailsClearlyAndWritesNothing) {
  const std::string m = bundled("target");
  CliRun r = run({"forward", "--model", m, "--prompt-ids", kIds});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;

  r = run({"forward", "--model", m, "--prompt-ids", "0,259,3", "--out", out("bad.h5")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("'259' is not a token id in [0, 259)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("bad.h5")));

  // A head for another target: the tiny preset's hidden size differs from the bundled heads'.
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--seed", "3", "--out", out("tiny")}).code, 0);
  r = run({"forward", "--model", out("tiny"), "--prompt-ids", "0,4,5", "--out", out("bad.h5"), "--drafter", bundled("eagle3")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bundled("eagle3")), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("bad.h5")));

  // P-EAGLE beyond its trained depth, and a head without a second token to pair.
  r = run({"forward", "--model", m, "--prompt-ids", kIds, "--out", out("bad.h5"), "--drafter", bundled("peagle"), "--k", "9"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("trained"), std::string::npos) << r.err;
  r = run({"forward", "--model", m, "--prompt-ids", "0", "--out", out("bad.h5"), "--drafter", bundled("eagle1")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("at least 2 tokens"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("bad.h5")));

  r = run({"forward", "--model", m, "--prompt-ids", "0,1", "--out", out("missing-dir/x.h5")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;

  const CliRun h = run({"forward", "--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("output AFTER the final norm"), std::string::npos) << h.out;
}

}  // namespace
}  // namespace specdec
