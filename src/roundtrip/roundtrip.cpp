// The streamed roundtrip: the output's header goes out first, slabs are
// fake-quantized on the workers and written at their final offsets, the
// input's pages are given back as soon as they are used. The plain reference
// is roundtrip_reference.cpp; both share roundtrip_plan.h.
#include "roundtrip/roundtrip.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#include "core/log.h"
#include "core/parallel.h"
#include "io/tensor_stream_writer.h"
#include "kv/kv_slab.h"
#include "roundtrip/roundtrip_plan.h"
#include "roundtrip/roundtrip_slab.h"

namespace tqlab {
namespace {

// Copied tensors are work items of this size, read (pread) and written kCopyReadBytes at a
// time through the worker's buffer, which stays in cache; nothing of them is mapped.
constexpr std::uint64_t kCopyPieceBytes = std::uint64_t{8} << 20;
constexpr std::uint64_t kCopyReadBytes = std::uint64_t{256} << 10;

// One unit of work: a (sequence, head) slab of a quantized tensor, or a piece of a copied one.
struct Item {
  enum class Kind { slab, copy } kind = Kind::slab;
  std::size_t tensor = 0;  ///< slab: index into plan.work; copy: index into the file's tensors
  int seq = 0, head = 0;
  std::uint64_t offset = 0, size = 0;  ///< copy: bytes of the tensor's data; size 0: the whole tensor, converted
};

// What the workers share about one quantized tensor.
struct TensorState {
  std::size_t output = 0;                 ///< index among the file's (and output's) tensors
  int dim = 0, tokens = 0;
  std::vector<std::int64_t> out_strides;  ///< C order, elements
  bool out_contiguous = false;            ///< each slab is one run of the output: written straight
  bool in_contiguous = false;             ///< each slab is one run of the input: released straight
  // Otherwise the tensor is assembled here and written when its last slab is in.
  std::unique_ptr<std::vector<std::byte>> buffer;
  std::unique_ptr<std::atomic<int>> slabs_left;
};

class StreamedRoundtrip {
 public:
  StreamedRoundtrip(const RoundtripPlan& plan, const RoundtripOptions& options, TensorStreamWriter& writer)
      : plan_(plan), options_(options), writer_(writer), dump_(*plan.dump) {}

  RoundtripReport run() {
    plan_items();
    const int threads = resolve_thread_count(options_.threads);
    std::vector<SlabBuffers> buffers(static_cast<std::size_t>(threads));
    outcomes_.assign(slab_items_, SlabOutcome{});
    parallel_for(items_.size(), threads, [&](std::size_t item, int worker) {
      run_item(item, buffers[static_cast<std::size_t>(worker)]);
    });
    return report();
  }

 private:
  void plan_items() {
    const TensorView* first = plan_.file->tensors().data();
    layers_left_ = std::make_unique<std::atomic<int>[]>(dump_.layers().size());
    for (std::size_t i = 0; i < plan_.work.size(); ++i) {
      const QuantizedTensor& tensor = plan_.work[i];
      const KvSlab first_slab{tensor.role, tensor.layer_index, 0, 0};
      TensorState state;
      state.output = static_cast<std::size_t>(tensor.view - first);
      state.dim = slab_dim(dump_, first_slab);
      state.tokens = slab_tokens(dump_, first_slab);
      state.out_strides = c_order_strides(tensor.view->shape);
      state.out_contiguous = slab_is_contiguous(plan_.axes, state.out_strides, state.dim);
      state.in_contiguous = slab_is_contiguous(plan_.axes, tensor.view->strides, state.dim);
      const int seqs = dump_.layers()[static_cast<std::size_t>(tensor.layer_index)].seqs;
      const int heads = role_heads(dump_, tensor.layer_index, tensor.role);
      state.slabs_left = std::make_unique<std::atomic<int>>(seqs * heads);
      layers_left_[static_cast<std::size_t>(tensor.layer_index)] += seqs * heads;
      for (int seq = 0; seq < seqs; ++seq) {
        for (int head = 0; head < heads; ++head) items_.push_back({Item::Kind::slab, i, seq, head, 0, 0});
      }
      states_.push_back(std::move(state));
    }
    slab_items_ = items_.size();
    std::vector<bool> quantized(plan_.file->tensors().size(), false);
    for (const TensorState& state : states_) quantized[state.output] = true;
    for (std::size_t i = 0; i < quantized.size(); ++i) {
      if (quantized[i]) continue;
      const TensorView& tensor = plan_.file->tensors()[i];
      if (!tensor.is_c_contiguous() || tensor.big_endian) {
        items_.push_back({Item::Kind::copy, i, 0, 0, 0, 0});  // converted whole (token ids, masks: small)
        continue;
      }
      for (std::uint64_t offset = 0; offset < tensor.byte_size; offset += kCopyPieceBytes) {
        items_.push_back({Item::Kind::copy, i, 0, 0, offset, std::min(kCopyPieceBytes, tensor.byte_size - offset)});
      }
    }
  }

  void run_item(std::size_t index, SlabBuffers& buffers) {
    const Item& item = items_[index];
    if (item.kind == Item::Kind::copy) return copy_piece(item, buffers.raw);
    const QuantizedTensor& tensor = plan_.work[item.tensor];
    TensorState& state = states_[item.tensor];
    const std::size_t element_size = dtype_size(tensor.view->dtype);
    const auto row_bytes = static_cast<std::uint64_t>(state.dim) * element_size;
    const auto out_base = static_cast<std::uint64_t>(slab_base(plan_.axes, state.out_strides, item.seq, item.head));
    std::vector<std::byte>* assembled = state.out_contiguous ? nullptr : assembled_tensor(state);
    // Each piece of rows goes out as soon as it is decoded: straight to its place in the
    // file, or into the tensor being assembled.
    const auto put_rows = [&](std::int64_t first_token, std::span<const std::byte> rows) {
      if (assembled == nullptr) {
        writer_.write(state.output, out_base * element_size + static_cast<std::uint64_t>(first_token) * row_bytes,
                      rows);
      } else {
        scatter_rows(state, out_base, first_token, element_size, rows, *assembled);
      }
    };
    outcomes_[index] =
        roundtrip_slab(plan_, tensor, item.seq, item.head, options_.seed, SlabPieces::cache_sized, buffers, put_rows);
    if (state.in_contiguous) {
      const auto base = static_cast<std::uint64_t>(slab_base(plan_.axes, tensor.view->strides, item.seq, item.head));
      plan_.file->release(*tensor.view, base * element_size, static_cast<std::uint64_t>(state.tokens) * row_bytes);
    }
    if (assembled != nullptr && --*state.slabs_left == 0) {
      // The tensor's last slab is in: whoever brought it writes the tensor.
      writer_.write(state.output, 0, *assembled);
      const std::lock_guard<std::mutex> lock(buffer_mutex_);
      state.buffer.reset();
    }
    const int layer = dump_.layers()[static_cast<std::size_t>(tensor.layer_index)].layer;
    if (--layers_left_[static_cast<std::size_t>(tensor.layer_index)] == 0) {
      dump_.release_layer(tensor.layer_index);
      log::debug("roundtrip: layer {} done", layer);
    }
    const std::size_t done = ++slabs_done_;
    if (options_.on_progress) options_.on_progress(done, slab_items_, layer);
  }

  // A layout whose slabs are not runs of the output ("token head dim"): the
  // tensor is assembled in memory and written when its last slab is in.
  std::vector<std::byte>* assembled_tensor(TensorState& state) {
    const std::lock_guard<std::mutex> lock(buffer_mutex_);
    if (!state.buffer) state.buffer = std::make_unique<std::vector<std::byte>>(writer_.tensor_bytes(state.output));
    return state.buffer.get();
  }

  // Copies rows [first_token, ...) of the slab at element `base` into the assembled tensor.
  void scatter_rows(const TensorState& state, std::uint64_t base, std::int64_t first_token, std::size_t element_size,
                    std::span<const std::byte> rows, std::vector<std::byte>& tensor) const {
    const std::int64_t token_stride = state.out_strides[static_cast<std::size_t>(plan_.axes.token_axis)];
    const std::int64_t dim_stride = state.out_strides[static_cast<std::size_t>(plan_.axes.dim_axis)];
    const std::size_t row_bytes = static_cast<std::size_t>(state.dim) * element_size;
    const std::size_t row_count = rows.size() / row_bytes;
    for (std::size_t r = 0; r < row_count; ++r) {
      const auto t = static_cast<std::uint64_t>(first_token) + r;
      std::byte* row = tensor.data() + (base + t * static_cast<std::uint64_t>(token_stride)) * element_size;
      const std::byte* from = rows.data() + r * row_bytes;
      if (dim_stride == 1) {
        std::memcpy(row, from, row_bytes);
        continue;
      }
      for (int d = 0; d < state.dim; ++d) {
        std::memcpy(row + static_cast<std::size_t>(d * dim_stride) * element_size, from + d * element_size,
                    element_size);
      }
    }
  }

  void copy_piece(const Item& item, std::vector<std::byte>& buffer) {
    const TensorView& tensor = plan_.file->tensors()[item.tensor];
    if (item.size == 0) {
      writer_.write(item.tensor, 0, read_all_bytes(tensor));
      return;
    }
    buffer.resize(kCopyReadBytes);
    for (std::uint64_t done = 0; done < item.size; done += kCopyReadBytes) {
      const std::span<std::byte> piece(buffer.data(), std::min(kCopyReadBytes, item.size - done));
      plan_.file->read_bytes(tensor, item.offset + done, piece);
      writer_.write(item.tensor, item.offset + done, piece);
    }
  }

  RoundtripReport report() const {
    RoundtripReport report;
    report.layout = plan_.layout;
    std::vector<std::size_t> order(plan_.work.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // The report lists quantized tensors in file order; the sums run in slab order.
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return states_[a].output < states_[b].output; });
    for (const std::size_t i : order) {
      RoundtripTensorResult result = roundtrip_result_header(plan_, plan_.work[i]);
      for (std::size_t item = 0; item < slab_items_; ++item) {
        if (items_[item].tensor != i) continue;
        result.encoded_bytes += outcomes_[item].encoded_bytes;
        result.squared_error += outcomes_[item].squared_error;
        result.energy += outcomes_[item].energy;
      }
      report.tensors.push_back(std::move(result));
    }
    report.copied_tensors = static_cast<int>(plan_.file->tensors().size() - plan_.work.size());
    return report;
  }

  const RoundtripPlan& plan_;
  const RoundtripOptions& options_;
  TensorStreamWriter& writer_;
  const KvDump& dump_;
  std::vector<Item> items_;
  std::size_t slab_items_ = 0;  ///< items_[0, slab_items_) are slabs, the rest copies
  std::vector<TensorState> states_;
  std::vector<SlabOutcome> outcomes_;
  std::unique_ptr<std::atomic<int>[]> layers_left_;
  std::atomic<std::size_t> slabs_done_{0};
  std::mutex buffer_mutex_;
};

}  // namespace

double RoundtripTensorResult::bits_per_value() const {
  return value_count > 0 ? 8.0 * static_cast<double>(encoded_bytes) / static_cast<double>(value_count) : 0.0;
}

double RoundtripTensorResult::relative_mse() const {
  if (energy > 0) return squared_error / energy;
  return squared_error == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

RoundtripReport run_roundtrip(const std::string& input_path, const std::string& output_path,
                              const RoundtripOptions& options) {
  const RoundtripPlan plan = plan_roundtrip(input_path, output_path, options);
  // Every name, dtype and shape is known: the header goes out before any work.
  TensorStreamWriter writer(output_path, roundtrip_output_tensors(plan), roundtrip_metadata(plan, options),
                            options.durability);
  const RoundtripReport report = StreamedRoundtrip(plan, options, writer).run();
  writer.commit();
  return report;
}

}  // namespace tqlab
