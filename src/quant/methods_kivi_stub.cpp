// Placeholder until the kivi methods land; replaced by their own file.
#include "quant/registry.h"
namespace tqlab {
std::vector<MethodInfo> kivi_methods() { return {}; }
}  // namespace tqlab
