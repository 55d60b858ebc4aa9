// Placeholder until the turbo methods land; replaced by their own file.
#include "quant/registry.h"
namespace tqlab {
std::vector<MethodInfo> turbo_methods() { return {}; }
}  // namespace tqlab
