// libFuzzer target. A quantizer spec string (quant/spec.h, quant/registry.h): split,
// built, checked against a head dim, and, when accepted, used on a tiny tensor
// (encode, decode). The decoded values must be finite and the canonical spec must
// parse back to itself (quant/quantizer.h).
// Input: byte 0 picks the head dim, the rest is the spec.
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "quant/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  if (size < 1) return 0;
  constexpr int kDims[] = {1, 2, 3, 8, 16, 32, 64, 96, 128, 192};
  const int dim = kDims[data[0] % std::size(kDims)];
  const std::string_view spec(reinterpret_cast<const char*>(data + 1), size - 1);
  fuzz::expect_success_or_input_error([&] {
    const std::unique_ptr<Quantizer> quantizer = make_quantizer(spec);
    const std::string canonical = quantizer->spec();
    if (make_quantizer(canonical)->spec() != canonical)
      fuzz::finding("spec() does not parse back to itself", canonical);
    quantizer->check_dim(dim);
    (void)quantizer->spec_for_dim(dim);
    constexpr std::int64_t kTokens = 5;
    std::vector<float> x(static_cast<std::size_t>(kTokens * dim));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i)) * 3.0f;
    const QuantContext context{7, Role::key, 1, 0};
    const EncodedTensor encoded = quantizer->encode(kTokens, dim, x.data(), context);
    std::vector<float> decoded(x.size());
    quantizer->decode(encoded, context, decoded.data());
    for (const float value : decoded) {
      if (!std::isfinite(value)) fuzz::finding("decoded value is not finite", canonical);
    }
  });
  return 0;
}
