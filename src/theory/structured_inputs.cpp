// Rotations on structured inputs; see structured_inputs.h.
#include "theory/structured_inputs.h"

#include <cassert>

#include "core/rng.h"
#include "quant/quantizer.h"

namespace tqlab {

StructuredInputStats measure_structured_input(const Quantizer& quantizer, int dim, std::int64_t count,
                                              const float* x, int seeds, std::uint64_t seed) {
  assert(seeds >= 2 && count >= 1);
  RunningStats d_mse, inner_product;
  std::vector<float> decoded(static_cast<std::size_t>(count * dim));
  for (int s = 0; s < seeds; ++s) {
    const QuantContext context{derive_seed({seed, static_cast<std::uint64_t>(s)}), Role::key, 0, 0};
    const EncodedTensor encoded = quantizer.encode(count, dim, x, context);
    quantizer.decode(encoded, context, decoded.data());
    double error_sum = 0, inner_sum = 0;
    for (std::int64_t t = 0; t < count; ++t) {
      double error = 0, inner = 0, norm2 = 0;
      for (int c = 0; c < dim; ++c) {
        const double value = x[t * dim + c];
        const double approx = decoded[static_cast<std::size_t>(t * dim + c)];
        error += (value - approx) * (value - approx);
        inner += value * approx;
        norm2 += value * value;
      }
      error_sum += error / norm2;
      inner_sum += inner / norm2;
    }
    d_mse.add(error_sum / static_cast<double>(count));
    inner_product.add(inner_sum / static_cast<double>(count));
  }
  return {d_mse.estimate(), inner_product.estimate()};
}

std::vector<float> one_hot_vectors(int dim) {
  std::vector<float> x(static_cast<std::size_t>(dim) * static_cast<std::size_t>(dim), 0.0f);
  for (int i = 0; i < dim; ++i) x[static_cast<std::size_t>(i) * static_cast<std::size_t>(dim + 1)] = 1.0f;
  return x;
}

}  // namespace tqlab
