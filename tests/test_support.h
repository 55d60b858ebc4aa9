// Helpers shared by the test files: quantizer round trips, error messages, errors.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "quant/quantizer.h"

namespace tqlab::testing {

/// The message of the InputError `action` throws; a test failure (and "") when none.
inline std::string input_error_message(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  } catch (const std::exception& other) {
    ADD_FAILURE() << "expected an InputError, got: " << other.what();
    return "";
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

/// A quantizer's bytes and what they decode to.
struct RoundTrip {
  EncodedTensor encoded;
  std::vector<float> decoded;
};

/// Encodes x (tokens x dim) and decodes the bytes with the same quantizer and context.
inline RoundTrip round_trip(const Quantizer& quantizer, std::int64_t tokens, int dim, const std::vector<float>& x,
                            const QuantContext& context) {
  RoundTrip result;
  result.encoded = quantizer.encode(tokens, dim, x.data(), context);
  result.decoded.resize(x.size());
  quantizer.decode(result.encoded, context, result.decoded.data());
  return result;
}

/// sum |x - y|^2 / sum |x|^2.
inline double relative_mse(const std::vector<float>& x, const std::vector<float>& y) {
  double error = 0, energy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double difference = static_cast<double>(x[i]) - y[i];
    error += difference * difference;
    energy += static_cast<double>(x[i]) * x[i];
  }
  return error / energy;
}

}  // namespace tqlab::testing
