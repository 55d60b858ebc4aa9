// What `tqlab roundtrip` does before and around the writing, shared by the
// streamed writer (roundtrip/roundtrip.cpp) and the in-memory reference it is
// tested against (roundtrip/roundtrip_reference.cpp): the checked plan of which
// tensors are quantized with which spec, the output's tensor list and
// metadata, where a slab lies (the slab itself: roundtrip/roundtrip_slab.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/tensor_file.h"
#include "kv/kv_dump.h"
#include "quant/quantizer.h"
#include "roundtrip/roundtrip.h"

namespace tqlab {

/// One tensor to quantize: which role it plays in which selected layer.
struct QuantizedTensor {
  const TensorView* view = nullptr;
  Role role = Role::key;
  int layer_index = 0;  ///< index into KvDump::layers()
  const Quantizer* quantizer = nullptr;
};

/// Everything checked and resolved before any tensor byte is read.
struct RoundtripPlan {
  std::unique_ptr<Quantizer> key_quantizer, value_quantizer, query_quantizer;  ///< query: null without --q
  std::string engine;  ///< the engine whose cache keys and values go through ("": tqlab's quantizers)
  std::unique_ptr<TensorFile> file;
  std::string layout;               ///< the layout used
  KvLayout axes;
  std::unique_ptr<KvDump> dump;
  std::vector<QuantizedTensor> work;  ///< in layer order: keys, values (, queries) of each layer
  std::int64_t work_values = 0;       ///< elements of the tensors in `work`
};

/// Parses the specs, opens and checks the input, the output path and every
/// head dim; throws InputError (see run_roundtrip) before any work.
RoundtripPlan plan_roundtrip(const std::string& input_path, const std::string& output_path,
                             const RoundtripOptions& options);

/// The input file's metadata plus tqlab.version, tqlab.git_commit and tqlab.roundtrip.*.
std::map<std::string, std::string> roundtrip_metadata(const RoundtripPlan& plan, const RoundtripOptions& options);

/// Every input tensor, in file order, as the output holds it (name, dtype, shape; no bytes).
std::vector<TensorToWrite> roundtrip_output_tensors(const RoundtripPlan& plan);

/// The result fields of `tensor` known before its data is read (no error sums, no bytes).
RoundtripTensorResult roundtrip_result_header(const RoundtripPlan& plan, const QuantizedTensor& tensor);

/// Element offset of slab (seq, head) in a tensor with element `strides` (layout axes).
std::int64_t slab_base(const KvLayout& axes, const std::vector<std::int64_t>& strides, int seq, int head);

/// True when the slab is one [token][dim] run of the tensor (strides in elements).
bool slab_is_contiguous(const KvLayout& axes, const std::vector<std::int64_t>& strides, int dim);

}  // namespace tqlab
