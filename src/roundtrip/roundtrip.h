// Fake quantization of a whole KV dump: every selected key, value (and
// optionally query) tensor goes through quantize -> pack -> unpack ->
// dequantize and is written back with its name, shape, dtype and layout, so
// that any other pipeline (an inference engine, a notebook) can measure what
// the quantizer does to it (docs/REFERENCE.md#tqlab-roundtrip).
//
// Each (layer, sequence, head) slab of `tokens` vectors is quantized as one
// tensor with QuantContext{seed, role, layer number, head}: the rotation of a
// head is shared by its sequences, as in a real cache, and a layer's result
// does not depend on which other layers were selected. Every other tensor of
// the input is copied bit-exactly. Same input, specs and seed give the same
// output bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/dtype.h"
#include "io/tensor_file.h"
#include "kv/kv_dump.h"
#include "quant/quantizer.h"

namespace tqlab {

struct RoundtripOptions {
  std::string key_spec;    ///< quantizer spec for keys, e.g. "tq:b=3"
  std::string value_spec;  ///< quantizer spec for values
  std::string query_spec;  ///< empty: queries are copied unchanged
  /// An engine whose cache the keys and values go through (engine/engine.h: "llama.cpp",
  /// "llama.cpp:rot=off"; its cache types as --k/--v); "" or "tqlab": tqlab's quantizers.
  std::string engine;
  std::string keys = "layers.{layer}.k";     ///< name templates, as the sweep config's "data"
  std::string values = "layers.{layer}.v";
  std::string queries = "layers.{layer}.q";  ///< only read when query_spec is set
  std::string layout;                        ///< empty: the file's "layout" metadata, else "head token dim"
  std::optional<std::vector<int>> layers;    ///< nullopt: every layer the keys template matches
  std::uint64_t seed = 0;
  bool raw16_as_bf16 = false;                ///< read raw 2-byte npy values as bfloat16
  int threads = 1;                           ///< worker threads (0: every core); same bytes for any count
  /// page_cache: the output is renamed into place complete but not fsynced (as cp);
  /// on_disk: fsynced first. The reference always fsyncs (write_tensor_file).
  Durability durability = Durability::page_cache;
  /// Called (from any worker) after each (sequence, head) slab: slabs done, slabs in all, its layer number.
  std::function<void(std::size_t done, std::size_t total, int layer)> on_progress;
};

/// What one quantized tensor came out as.
struct RoundtripTensorResult {
  std::string name;
  Role role = Role::key;
  int layer = 0;                     ///< the layer number in the name
  std::string spec;                  ///< canonical quantizer spec
  DType dtype = DType::f32;          ///< stored (and written) element type
  std::vector<std::int64_t> shape;
  std::int64_t value_count = 0;      ///< elements of the tensor
  std::uint64_t encoded_bytes = 0;   ///< packed bytes over all (sequence, head) slabs
  double squared_error = 0;          ///< sum of (x - x~)^2 over the tensor, x~ as written in `dtype`
  double energy = 0;                 ///< sum of x^2 over the tensor

  /// 8 * encoded_bytes / value_count.
  double bits_per_value() const;
  /// squared_error / energy (0 for an all-zero tensor decoded to zero).
  double relative_mse() const;
};

struct RoundtripReport {
  std::string layout;                          ///< the layout used
  std::vector<RoundtripTensorResult> tensors;  ///< quantized tensors, in input file order
  int copied_tensors = 0;                      ///< tensors copied unchanged
};

/// Reads `input_path`, fake-quantizes the selected tensors and writes every
/// tensor to `output_path` (.safetensors or .npz by extension, atomically: on
/// any error nothing is written; .npy is refused, as it holds one tensor and a
/// dump has at least keys and values). Safetensors metadata is
/// kept, plus tqlab.version, tqlab.git_commit and tqlab.roundtrip.{k,v,q,seed,layout}.
/// Throws InputError naming the file, tensor and spec for bad specs, a head
/// dim a spec cannot take (before any work), missing tensors, NaN/Inf input,
/// or decoded values that overflow the stored dtype.
///
/// Streams: the output's header is written first, then every (tensor,
/// sequence, head) slab is quantized on one of options.threads workers and
/// written at its final offset, in pieces of about 256 KiB read from the
/// input by pread where the quantizer and layout allow it
/// (roundtrip/roundtrip_slab.h); tensors that are copied go out in pieces read the
/// same way. Input read through the map (slabs that are not one run of f32,
/// f16 or bf16) gives its pages back as soon as a slab (or a layer, for a
/// layout whose slabs are not one run) is done, so the resident memory is a few pieces'
/// or slabs' worth whatever the file's size. One exception: a layout whose
/// slabs are not one run of the output tensor ("token head dim") holds each
/// such tensor in memory until it is complete.
RoundtripReport run_roundtrip(const std::string& input_path, const std::string& output_path,
                              const RoundtripOptions& options);

/// The same job done the plain way, on one thread: every output tensor is
/// built in memory and written at the end by write_tensor_file. Same output
/// bytes and report; the reference run_roundtrip is tested against.
RoundtripReport run_roundtrip_reference(const std::string& input_path, const std::string& output_path,
                                        const RoundtripOptions& options);

}  // namespace tqlab
