// The plain roundtrip, kept as the reference the streamed one (roundtrip.cpp)
// is tested against: one thread, each quantized tensor built whole in memory,
// everything written at the end by write_tensor_file.
#include <cstring>
#include <map>

#include "kv/kv_slab.h"
#include "roundtrip/roundtrip.h"
#include "roundtrip/roundtrip_plan.h"
#include "roundtrip/roundtrip_slab.h"

namespace tqlab {
namespace {

// Copies one [token][dim] slab of elements (element_size bytes each, packed)
// to its place in a C-order tensor: element (t, d) goes to
// base + t * token_stride + d * dim_stride (in elements).
void scatter_slab(std::int64_t tokens, int dim, std::size_t element_size, const std::byte* slab, std::int64_t base,
                  std::int64_t token_stride, std::int64_t dim_stride, std::byte* tensor) {
  const auto row_bytes = static_cast<std::size_t>(dim) * element_size;
  std::byte* at = tensor + static_cast<std::size_t>(base) * element_size;
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int d = 0; d < dim; ++d) {
      std::memcpy(at + static_cast<std::size_t>(t * token_stride + d * dim_stride) * element_size,
                  slab + static_cast<std::size_t>(t) * row_bytes + d * element_size, element_size);
    }
  }
}

}  // namespace

RoundtripReport run_roundtrip_reference(const std::string& input_path, const std::string& output_path,
                                        const RoundtripOptions& options) {
  const RoundtripPlan plan = plan_roundtrip(input_path, output_path, options);
  const KvDump& dump = *plan.dump;
  std::map<const TensorView*, std::vector<std::byte>> written;
  std::map<const TensorView*, RoundtripTensorResult> results;
  SlabBuffers buffers;
  for (const QuantizedTensor& tensor : plan.work) {
    const TensorView& view = *tensor.view;
    RoundtripTensorResult result = roundtrip_result_header(plan, tensor);
    const int dim = slab_dim(dump, KvSlab{tensor.role, tensor.layer_index, 0, 0});
    const std::size_t element_size = dtype_size(view.dtype);
    std::vector<std::byte>& out = written[&view];
    out.assign(static_cast<std::size_t>(result.value_count) * element_size, std::byte{0});
    const std::vector<std::int64_t> strides = c_order_strides(view.shape);
    const int seqs = dump.layers()[static_cast<std::size_t>(tensor.layer_index)].seqs;
    for (int seq = 0; seq < seqs; ++seq) {
      for (int head = 0; head < role_heads(dump, tensor.layer_index, tensor.role); ++head) {
        const std::int64_t token_stride = strides[static_cast<std::size_t>(plan.axes.token_axis)];
        const std::int64_t base = slab_base(plan.axes, strides, seq, head);
        const auto scatter = [&](std::int64_t first_token, std::span<const std::byte> rows) {
          const auto row_count =
              static_cast<std::int64_t>(rows.size() / (static_cast<std::size_t>(dim) * element_size));
          scatter_slab(row_count, dim, element_size, rows.data(), base + first_token * token_stride, token_stride,
                       strides[static_cast<std::size_t>(plan.axes.dim_axis)], out.data());
        };
        const SlabOutcome outcome =
            roundtrip_slab(plan, tensor, seq, head, options.seed, SlabPieces::whole, buffers, scatter);
        result.encoded_bytes += outcome.encoded_bytes;
        result.squared_error += outcome.squared_error;
        result.energy += outcome.energy;
      }
    }
    results[&view] = result;
  }

  RoundtripReport report;
  report.layout = plan.layout;
  std::vector<TensorToWrite> outputs = roundtrip_output_tensors(plan);
  std::vector<std::vector<std::byte>> copies;
  copies.reserve(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const TensorView& tensor = plan.file->tensors()[i];
    if (const auto found = written.find(&tensor); found != written.end()) {
      outputs[i].bytes = found->second;
      report.tensors.push_back(results.at(&tensor));
    } else {
      ++report.copied_tensors;
      copies.push_back(read_all_bytes(tensor));
      outputs[i].bytes = copies.back();
    }
  }
  write_tensor_file(output_path, outputs, roundtrip_metadata(plan, options));
  return report;
}

}  // namespace tqlab
