// A file of named tensors (.npy, .npz or .safetensors), opened and validated
// once, its data converted to float on demand.
//
// Tensors may be of any element type of core/dtype.h: float tensors (K, V, Q)
// are read as float; integer and bool tensors (token ids, masks, position ids)
// are read exactly with load_signed / load_unsigned (or as float, rounded);
// every tensor's bytes can be copied out unchanged with read_all_bytes.
//
// Every reader validates the whole header before any data is touched: a
// tensor's bytes must lie inside the file and equal product(shape) times the
// element size, so a 2 GB shape declared in a 1 kB file is an error, not an
// allocation. Data stays memory-mapped (deflated .npz members are the one
// exception: they are inflated into memory, after their sizes are checked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"

namespace tqlab {

class MappedFile;

/// One stored tensor: where its elements are and how to read them.
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  bool big_endian = false;           ///< elements stored big-endian (npy '>f4')
  std::vector<std::int64_t> shape;   ///< logical shape, C order of axes
  std::vector<std::int64_t> strides; ///< per axis, in elements (Fortran order: ascending)
  const std::byte* data = nullptr;   ///< element (0, ..., 0); null when empty
  std::uint64_t file_offset = 0;     ///< byte offset of the data in the file (release, read_bytes)
  std::uint64_t byte_size = 0;       ///< bytes of data

  std::int64_t element_count() const;
  /// "[4, 8, 256, 8]"
  std::string shape_string() const;
  /// True when strides are C-contiguous.
  bool is_c_contiguous() const;
};

/// Element strides of a C-contiguous (row-major) tensor of `shape`.
std::vector<std::int64_t> c_order_strides(const std::vector<std::int64_t>& shape);

/// Options that change how stored bytes are interpreted.
struct OpenOptions {
  /// Read npy '<u2'/'>u2' (otherwise u16) and '|V2' (otherwise raw16) as bfloat16:
  /// numpy has no bfloat16, so bf16 dumps store its bits that way.
  bool raw16_as_bf16 = false;
};

class TensorFile {
 public:
  /// Opens `path`, recognizing the format from its first bytes.
  /// Throws InputError naming the file (and tensor) on any defect.
  static std::unique_ptr<TensorFile> open(const std::string& path, const OpenOptions& options = {});
  /// The same for a file already mapped (or held in memory: core/mapped_file.h).
  static std::unique_ptr<TensorFile> open(std::shared_ptr<const MappedFile> mapping,
                                          const OpenOptions& options = {});

  const std::string& path() const { return path_; }
  /// "npy", "npz" or "safetensors".
  const std::string& format() const { return format_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  /// Free-form string metadata (safetensors "__metadata__").
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// The tensor called `name`, or nullptr (a hash lookup: files may hold 30 000 tensors).
  const TensorView* find(std::string_view name) const;
  /// The tensor called `name`; InputError naming the file and listing names otherwise.
  const TensorView& get(std::string_view name) const;
  /// The tensor names for a message: escaped and cut (core/text.h), as many as fit
  /// about 200 bytes, then "... (N more)"; "no tensors" for an empty file.
  std::string name_list() const;

  /// Gives back the resident pages of a tensor's data (no-op for inflated data).
  void release(const TensorView& tensor) const;
  /// The same for bytes [byte_offset, byte_offset + byte_count) of its data
  /// (only the whole pages inside that range: a neighbour's pages stay).
  void release(const TensorView& tensor, std::uint64_t byte_offset, std::uint64_t byte_count) const;

  /// Copies bytes [byte_offset, byte_offset + out.size()) of a tensor's data
  /// (as stored: its dtype and byte order) into `out`, with pread where the
  /// data lies in the file, so that a stream through the file maps nothing.
  /// InternalError when the range passes the tensor's end.
  void read_bytes(const TensorView& tensor, std::uint64_t byte_offset, std::span<std::byte> out) const;

  // Readers build files through these (not for general use).
  TensorFile(std::string path, std::string format);
  ~TensorFile();
  void set_mapping(std::shared_ptr<const MappedFile> mapping);
  /// Keeps `buffer` alive as long as the file; returns its data.
  const std::byte* adopt_buffer(std::vector<std::byte> buffer);
  void add_tensor(TensorView view);
  void set_metadata(std::map<std::string, std::string> metadata);

 private:
  std::string path_;
  std::string format_;
  /// True when the tensor's data lies in the mapped file (not in an adopted buffer).
  bool in_mapping(const TensorView& tensor) const;

  std::shared_ptr<const MappedFile> mapping_;
  std::vector<std::unique_ptr<std::vector<std::byte>>> owned_buffers_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, std::size_t> index_;  ///< name -> first position in tensors_
  std::map<std::string, std::string> metadata_;
};

/// Converts `count` elements at element offsets base, base + step, ... to float
/// (integers and bools are rounded to float's 24-bit significand; callers that
/// need them exactly use load_signed / load_unsigned).
/// Throws InputError for raw16 data (it needs OpenOptions::raw16_as_bf16).
void read_floats(const TensorView& tensor, std::int64_t base, std::int64_t step,
                 std::int64_t count, float* out);

/// Converts the whole tensor, in C (row-major) order, to float. out: element_count().
void read_all_floats(const TensorView& tensor, float* out);

/// The whole tensor's bytes in C order, little-endian, in its own dtype
/// (what a writer needs to store it again bit-exactly).
std::vector<std::byte> read_all_bytes(const TensorView& tensor);

/// Element `offset` (counted in elements from `data`) of an i8/i16/i32/i64 tensor, exactly.
std::int64_t load_signed(const TensorView& tensor, std::int64_t offset);
/// Element `offset` of a bool/u8/u16/u32/u64 tensor, exactly; a bool reads as 0 or 1.
std::uint64_t load_unsigned(const TensorView& tensor, std::int64_t offset);

/// A tensor to write: raw little-endian C-order bytes of `dtype`.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;  ///< product(shape) * dtype_size(dtype)
};

/// Writes tensors to `path` in the format its extension names: .safetensors
/// (with metadata), .npz (deflated when `compressed`), or .npy (exactly one
/// tensor). Every dtype is written: safetensors keeps it (raw16 as BF16);
/// npy/npz store bf16 as '<u2', fp8 as '|u1' and raw16 as '|V2' (numpy has no
/// bfloat16 or fp8). Atomic: the file appears whole or not at all.
void write_tensor_file(const std::string& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {}, bool compressed = false);

/// Encodes floats as little-endian bytes of float type `dtype` (rounding to nearest even).
std::vector<std::byte> encode_floats(std::span<const float> values, DType dtype);

}  // namespace tqlab
