#include "runtime/backend.hpp"

#include <algorithm>

#include "runtime/plugin_backend.hpp"
#include "reference/core/error.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"

#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
#include "optimized/cpu/cpu_eagle_head.hpp"
#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/cpu_medusa_heads.hpp"
#include "optimized/cpu/cpu_transformer.hpp"
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
#include <cstdlib>

#include "optimized/cuda/cuda_eagle_head.hpp"
#include "optimized/cuda/cuda_transformer.hpp"
#endif

namespace specdec {

namespace {

std::string available_list() {
  std::string s;
  for (const std::string& n : known_backends())
    if (backend_available(n)) s += (s.empty() ? "" : ", ") + n;
  return s + ", plugin:PATH.so";
}

// Bytes of every tensor one single-token forward reads, at `bytes_per_value` per weight.
double step_bytes(const LlamaWeights& w, double bytes_per_value) {
  double values = static_cast<double>(w.norm.size()) + static_cast<double>(w.output_head().size()) +
                  static_cast<double>(w.embed_tokens.cols());  // one embedding row
  for (const LayerWeights& l : w.layers) {
    for (const Matrix* m : layer_matrices(l)) values += static_cast<double>(m->size());
    for (const Vector* v : layer_vectors(l)) values += static_cast<double>(v->size());
  }
  return values * bytes_per_value;
}

#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
// The device the cuda backend runs on, shared by every model of the run (target and draft LM):
// the GPU, or with SPECDEC_CUDA_DEVICE=emulator the CPU grid emulator (slow; for machines without
// a GPU). Empty, with the reason in `why`, when neither is at hand.
std::shared_ptr<cuda::DeviceRuntime> cuda_device(std::string* why = nullptr) {
  static std::shared_ptr<cuda::DeviceRuntime> device;
  static std::string failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const char* env = std::getenv("SPECDEC_CUDA_DEVICE");
    const std::string choice = env ? env : "";
    try {
      if (choice == "emulator") {
        device = cuda::emulator_runtime();
      } else if (choice.empty() || choice == "gpu") {
        device = cuda::cuda_runtime();
      } else {
        failure = "SPECDEC_CUDA_DEVICE is '" + choice + "'; expected gpu (the default) or emulator";
      }
    } catch (const Error& e) {
      failure = std::string(e.what()) + " (SPECDEC_CUDA_DEVICE=emulator runs the cuda backend on the CPU grid emulator)";
    }
  }
  if (why) *why = failure;
  return device;
}
#endif

}  // namespace

const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> names = {"reference", "cpu", "cuda"};
  return names;
}

bool backend_available(const std::string& name) {
  if (name == "reference") return true;
  if (plugin::is_plugin_backend(name)) {
    try {
      plugin::load_plugin(name);
      return true;
    } catch (const Error&) {
      return false;
    }
  }
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return true;
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (name == "cuda") return cuda_device() != nullptr;
#endif
  return false;
}

void check_backend(const std::string& name, const std::string& option) {
  if (plugin::is_plugin_backend(name)) {
    try {
      plugin::load_plugin(name);
    } catch (const Error& e) {
      throw Error(option + " '" + name + "': " + e.what());
    }
    return;
  }
  const auto& known = known_backends();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw Error(option + " '" + name + "' is not a backend; available backends: " + available_list());
  }
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") {
    try {
      cpu::active_isa();
    } catch (const Error& e) {
      throw Error(option + " '" + name + "': " + e.what());
    }
  }
#endif
  if (!backend_available(name)) {
    std::string why = "this build has no " + name + " backend (the specdec_optimized_" + name + " library was not built)";
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
    if (name == "cuda") cuda_device(&why);
#endif
    throw Error(option + " '" + name + "': " + why + "; available backends: " + available_list());
  }
}

std::unique_ptr<LanguageModel> load_backend(const std::string& name, const std::filesystem::path& path) {
  check_backend(name, "backend");
  if (plugin::is_plugin_backend(name)) return plugin::load_plugin_model(name, path);
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return cpu::load_cpu_transformer(path);
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (name == "cuda") return cuda::load_cuda_transformer(cuda_device(), path);
#endif
  LlamaModel m = load_llama_checkpoint(path);
  return std::make_unique<Transformer>(std::move(m.config), std::move(m.weights));
}

std::unique_ptr<LanguageModel> make_backend(const std::string& name, const ModelConfig& config, const LlamaWeights& weights,
                                            Dtype precision) {
  check_backend(name, "backend");
  if (precision != Dtype::F32 && precision != Dtype::BF16 && precision != Dtype::F16) {
    throw Error("backend " + name + ": weight precision " + dtype_name(precision) + " is not supported; expected F32, BF16 or F16");
  }
  if (plugin::is_plugin_backend(name)) return plugin::make_plugin_model(name, config, weights, precision);
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return std::make_unique<cpu::CpuTransformer>(config, weights, precision);
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (name == "cuda") return std::make_unique<cuda::CudaTransformer>(cuda_device(), config, weights, precision);
#endif
  if (precision != Dtype::F32) {
    throw Error("backend reference computes in fp32 and stores F32 weights, not " + dtype_name(precision) +
                "; give it the rounded weights (round_weights) as F32");
  }
  return std::make_unique<Transformer>(config, weights);
}

EagleHead bind_head(const std::string& name, const EagleHead& head) {
  check_backend(name, "backend");
  head.require_weights("bind_head to backend " + name);
  if (plugin::is_plugin_backend(name)) return plugin::bind_plugin_head(name, head);
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return cpu::cpu_eagle_head(head);
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (name == "cuda") return cuda::cuda_eagle_head(cuda_device(), head);
#endif
  return head.with_engine(nullptr);
}

EagleHead bind_head(const std::string& name, EagleHead&& head, const LanguageModel& target_model) {
  check_backend(name, "backend");
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") {
    // A target on another backend lends nothing: the head reads its own TargetTensors.
    return cpu::cpu_eagle_head(std::move(head), dynamic_cast<const cpu::CpuTransformer*>(&target_model));
  }
#endif
  (void)target_model;
  return bind_head(name, head);
}

bool backend_lends_target_tensors(const std::string& name) {
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return true;
#endif
  (void)name;
  return false;
}

MedusaHeads bind_medusa(const std::string& name, const MedusaHeads& heads) {
  check_backend(name, "backend");
  heads.require_weights("bind_medusa to backend " + name);
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return cpu::cpu_medusa_heads(heads);
#endif
  // cuda and plug-ins have no Medusa engine: the heads run the reference's code on the host (a
  // one-row forward per step), on the hidden state the backend's target forward returned.
  return heads.with_engine(nullptr);
}

MedusaHeads bind_medusa(const std::string& name, MedusaHeads&& heads) {
  check_backend(name, "backend");
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (name == "cpu") return cpu::cpu_medusa_heads(std::move(heads));
#endif
  return bind_medusa(name, static_cast<const MedusaHeads&>(heads));
}

double weight_bytes_per_step(const LanguageModel& model) {
  if (const double b = plugin::plugin_weight_bytes(model); b >= 0) return b;
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (const auto* c = dynamic_cast<const cpu::CpuTransformer*>(&model)) return static_cast<double>(c->weight_bytes_per_step());
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (const auto* c = dynamic_cast<const cuda::CudaTransformer*>(&model)) return static_cast<double>(c->weight_bytes_per_step());
#endif
  if (const auto* t = dynamic_cast<const Transformer*>(&model)) return step_bytes(t->weights(), sizeof(float));
  throw Error("weight_bytes_per_step: the model is not one of the reference, cpu or cuda backends");
}

std::string backend_name(const LanguageModel& model) {
  if (std::string p = plugin::plugin_model_name(model); !p.empty()) return p;
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  if (dynamic_cast<const cpu::CpuTransformer*>(&model)) return "cpu";
#endif
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (dynamic_cast<const cuda::CudaTransformer*>(&model)) return "cuda";
#endif
  if (dynamic_cast<const Transformer*>(&model)) return "reference";
  return "other";
}

std::string backend_summary(const std::string& name) {
  if (name == "cpu") return "cpu (" + cpu_kernel_path() + " kernels)";
#ifdef SPECDEC_HAVE_OPTIMIZED_CUDA
  if (name == "cuda") {
    const std::shared_ptr<cuda::DeviceRuntime> device = cuda_device();
    if (!device) return name;
    const std::string on = device->name();
    if (on.rfind("CPU grid emulator", 0) == 0) {
      return "cuda on the " + on + " (SPECDEC_CUDA_DEVICE=emulator: bitwise the GPU's results, far slower)";
    }
    return "cuda on " + on;
  }
#endif
  return name;
}

std::string cpu_kernel_path() {
#ifdef SPECDEC_HAVE_OPTIMIZED_CPU
  return cpu::isa_name(cpu::active_isa());
#else
  return "";
#endif
}

}  // namespace specdec
