#include "quant/quantizer.h"

namespace tqlab {

double EncodedTensor::bits_per_value() const {
  const double values = static_cast<double>(tokens) * dim;
  return values > 0 ? 8.0 * static_cast<double>(bytes.size()) / values : 0.0;
}

}  // namespace tqlab
