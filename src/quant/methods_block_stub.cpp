// Placeholder until the block methods land; replaced by their own file.
#include "quant/registry.h"
namespace tqlab {
std::vector<MethodInfo> block_methods() { return {}; }
}  // namespace tqlab
