#include "quant/quantizer.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/name_table.h"
#include "quant/quantizer_support.h"

namespace tqlab {

double EncodedTensor::bits_per_value() const {
  const double values = static_cast<double>(tokens) * dim;
  return values > 0 ? 8.0 * static_cast<double>(bytes.size()) / values : 0.0;
}

namespace {

constexpr auto kRoleNames = make_name_table<Role>({{Role::key, "key"}, {Role::value, "value"}, {Role::query, "query"}});

}  // namespace

const char* role_name(Role role) { return kRoleNames.name(role).data(); }

void require_finite(std::int64_t tokens, int dim, const float* x, const QuantContext& context) {
  const std::int64_t i = first_non_finite(tokens * dim, x);
  if (i < 0) return;
  fail("non-finite value ({}) in the {} tensor of layer {}, kv head {}, at token {}, channel {}", x[i],
       role_name(context.role), context.layer, context.kv_head, i / dim, i % dim);
}

}  // namespace tqlab
