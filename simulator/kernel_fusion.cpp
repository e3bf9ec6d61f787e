#include "simulator/kernel_fusion.hpp"

#include "reference/core/error.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

KernelFusion parse_kernel_fusion(const nlohmann::json& j, const std::string& where) {
  const std::string s = where + " (kernels.fusion)";
  if (!j.is_object()) throw Error(s + ": must be an object of the engine's kernel fusions");
  check_known_fields(j,
                     {"add_norm", "allreduce_norm", "grouped_mla_norms", "moe_routing_kernels", "moe_expert_kernels",
                      "mla_attention_kernels", "mla_cache_write_kernel", "fp8_activation_quant"},
                     s);
  KernelFusion f;
  f.add_norm = get_bool_or(j, "add_norm", f.add_norm, s);
  f.allreduce_norm = get_bool_or(j, "allreduce_norm", f.allreduce_norm, s);
  f.grouped_mla_norms = get_bool_or(j, "grouped_mla_norms", f.grouped_mla_norms, s);
  f.moe_routing_kernels = get_number_or(j, "moe_routing_kernels", f.moe_routing_kernels, s);
  require_in_range(f.moe_routing_kernels, "moe_routing_kernels", s, 1.0, 100.0, true, "kernels");
  f.moe_expert_kernels = get_number_or(j, "moe_expert_kernels", f.moe_expert_kernels, s);
  require_in_range(f.moe_expert_kernels, "moe_expert_kernels", s, 1.0, 100.0, false, "kernels");
  f.mla_attention_kernels = get_number_or(j, "mla_attention_kernels", f.mla_attention_kernels, s);
  require_in_range(f.mla_attention_kernels, "mla_attention_kernels", s, 1.0, 100.0, false, "kernels");
  f.mla_cache_write_kernel = get_bool_or(j, "mla_cache_write_kernel", f.mla_cache_write_kernel, s);
  f.fp8_activation_quant = get_bool_or(j, "fp8_activation_quant", f.fp8_activation_quant, s);
  return f;
}

nlohmann::json kernel_fusion_to_json(const KernelFusion& f) {
  return {{"add_norm", f.add_norm},
          {"allreduce_norm", f.allreduce_norm},
          {"grouped_mla_norms", f.grouped_mla_norms},
          {"moe_routing_kernels", f.moe_routing_kernels},
          {"moe_expert_kernels", f.moe_expert_kernels},
          {"mla_attention_kernels", f.mla_attention_kernels},
          {"mla_cache_write_kernel", f.mla_cache_write_kernel},
          {"fp8_activation_quant", f.fp8_activation_quant}};
}

}  // namespace specdec::sim
