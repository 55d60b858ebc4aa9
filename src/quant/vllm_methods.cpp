// The registry entries of vLLM's KV cache formats (vllm_key_quantizer.h,
// vllm_value_quantizer.h, vllm_fp8_quantizer.h); vllm_presets.h says which
// preset uses which.
#include <memory>
#include <optional>

#include "core/error.h"
#include "quant/registry.h"
#include "quant/vllm_fp8_quantizer.h"
#include "quant/vllm_key_quantizer.h"
#include "quant/vllm_value_quantizer.h"

namespace tqlab {
namespace {

std::string bits_range(int lo, int hi) { return fmt::format("{}..{}", lo, hi); }

std::vector<OptionDoc> key_option_docs() {
  return {{"b", bits_range(VllmKeyQuantizer::kMinBits, VllmKeyQuantizer::kMaxBits), "code bits per value (required)"},
          {"nc", "", "norm correction: rescale the decoded levels to unit length (vLLM's _nc presets)"}};
}

std::vector<OptionDoc> value_option_docs() {
  return {{"b", bits_range(VllmValueQuantizer::kMinBits, VllmValueQuantizer::kMaxBits),
           "code bits per value (required)"}};
}

std::vector<OptionDoc> fp8_option_docs() {
  return {{"scale", choice_list(choice_words(kVllmFp8Scales, vllm_fp8_scale_name)),
           "unit: vLLM's per-layer scale at its default 1.0 (default); token_head: one fp32 scale per token and head"}};
}

// b=lo..hi, required: the message names the range, as every method's does.
int required_bits(SpecOptionReader& reader, int lo, int hi, const std::vector<OptionDoc>& docs) {
  const std::optional<int> bits = reader.integer("b", lo, hi);
  reader.finish(docs);
  if (!bits) fail("quantizer spec '{}': missing required option b ({}..{})", reader.spec().text, lo, hi);
  return *bits;
}

}  // namespace

std::vector<MethodInfo> vllm_methods() {
  MethodInfo key;
  key.name = "vllm_tq_key";
  key.summary = "vLLM TurboQuant keys: fp16 norm, plain Hadamard rotation, its Gaussian Lloyd-Max codes, no QJL";
  key.options = key_option_docs();
  key.bits_formula = "(ceil(D*b/8) + 2) * 8 / D (b + 16/D for D a multiple of 8)";
  key.example_specs = {"vllm_tq_key:b=3", "vllm_tq_key:b=4,nc"};
  key.make = [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
    const bool norm_correction = reader.flag("nc");
    const int bits = required_bits(reader, VllmKeyQuantizer::kMinBits, VllmKeyQuantizer::kMaxBits, key_option_docs());
    return std::make_unique<VllmKeyQuantizer>(bits, norm_correction);
  };

  MethodInfo value;
  value.name = "vllm_uniform";
  value.summary = "vLLM TurboQuant values: per-vector min/max uniform codes with fp16 scale and zero";
  value.options = value_option_docs();
  value.bits_formula = "(ceil(D*b/8) + 4) * 8 / D (b + 32/D for D a multiple of 8)";
  value.example_specs = {"vllm_uniform:b=3", "vllm_uniform:b=4"};
  value.make = [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
    return std::make_unique<VllmValueQuantizer>(
        required_bits(reader, VllmValueQuantizer::kMinBits, VllmValueQuantizer::kMaxBits, value_option_docs()));
  };

  MethodInfo fp8;
  fp8.name = "vllm_fp8";
  fp8.summary = "vLLM fp8 KV cache: E4M3FN codes with its default per-layer scale 1.0, or one scale per token and head";
  fp8.options = fp8_option_docs();
  fp8.bits_formula = "8 (scale=unit); 8 + 32/D (scale=token_head)";
  fp8.example_specs = {"vllm_fp8", "vllm_fp8:scale=token_head"};
  fp8.make = [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
    const std::optional<VllmFp8Scale> scale = reader.choice("scale", kVllmFp8Scales, vllm_fp8_scale_name);
    reader.finish(fp8_option_docs());
    return std::make_unique<VllmFp8Quantizer>(scale.value_or(VllmFp8Scale::unit));
  };
  return {std::move(key), std::move(value), std::move(fp8)};
}

}  // namespace tqlab
