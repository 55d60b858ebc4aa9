#include "kv/fake_quantize.h"

#include "core/error.h"

namespace tqlab {

std::size_t fake_quantize_rows(const Quantizer& quantizer, const QuantContext& context, std::int64_t rows, int dim,
                               const float* x, float* decoded, std::string_view where) {
  try {
    const EncodedTensor encoded = quantizer.encode(rows, dim, x, context);
    quantizer.decode(encoded, context, decoded);
    return encoded.bytes.size();
  } catch (const InputError& error) {
    fail("{}: {}", where, error.what());
  }
}

}  // namespace tqlab
