// A tensor file written as its data is computed, from any number of threads,
// without holding it in memory: every name, dtype and shape is known before
// any tensor byte, so the header goes out first and each tensor's bytes are
// written at their final offsets (pwrite) in whatever order they are ready.
//
// The bytes on disk are exactly what write_tensor_file (io/tensor_file.h)
// writes for the same tensors and metadata, whatever the order of the writes:
//   .safetensors  [length][JSON header][tensor 0]...[tensor n-1]
//   .npz          stored members; each member's CRC-32 is computed from the
//                 pieces as they are written, combined in offset order at
//                 commit() (zlib crc32_combine) and patched into its local
//                 header; the central directory follows the last member
//   .npy          [header][the one tensor]
// Atomic like every writer (core/atomic_file.h): the file appears at commit()
// whole, or not at all (an exception or destruction before commit() removes
// the temporary file); `durability` says whether it is also fsynced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "io/tensor_file.h"

namespace tqlab {

class NpzLayout;

class TensorStreamWriter {
 public:
  /// Opens the temporary file for `path` (.safetensors, .npz or .npy by
  /// extension; .npy takes exactly one tensor) and writes the header(s).
  /// `tensors` gives names, dtypes and shapes; their `bytes` are not looked at.
  /// `metadata` goes into a safetensors header (other formats have none).
  /// Throws InputError for what write_tensor_file refuses (unknown extension,
  /// duplicate or unwritable names, ...), before anything is written.
  TensorStreamWriter(const std::string& path, std::span<const TensorToWrite> tensors,
                     const std::map<std::string, std::string>& metadata, Durability durability = Durability::on_disk);
  ~TensorStreamWriter();
  TensorStreamWriter(const TensorStreamWriter&) = delete;
  TensorStreamWriter& operator=(const TensorStreamWriter&) = delete;

  /// Bytes of tensor `tensor`'s data: product(shape) * dtype_size(dtype).
  std::uint64_t tensor_bytes(std::size_t tensor) const { return tensors_.at(tensor).bytes; }

  /// Writes bytes [offset, offset + bytes.size()) of tensor `tensor`'s data
  /// (C order, little-endian). Safe from several threads at once. Every byte
  /// of every tensor must be written exactly once before commit().
  void write(std::size_t tensor, std::uint64_t offset, std::span<const std::byte> bytes);

  /// Checks that every tensor byte was written exactly once (InternalError
  /// otherwise: a caller's bug), completes the file (npz: CRCs and central
  /// directory), syncs it (Durability::on_disk) and renames it into place.
  void commit();

 private:
  enum class Format { safetensors, npz, npy };
  struct Piece {
    std::uint64_t offset = 0;  ///< in the tensor's data
    std::uint64_t size = 0;
    std::uint32_t crc = 0;     ///< CRC-32 of the piece (npz only)
  };
  struct Tensor {
    std::string name;
    std::uint64_t file_offset = 0;  ///< where its data starts in the file
    std::uint64_t bytes = 0;
    std::vector<Piece> pieces;      ///< guarded by mutex_
  };

  std::uint32_t member_crc(std::size_t tensor) const;

  std::string path_;
  Format format_ = Format::safetensors;
  std::vector<Tensor> tensors_;
  std::unique_ptr<NpzLayout> npz_;
  std::unique_ptr<AtomicFileWriter> file_;
  std::mutex mutex_;
  std::uint64_t written_since_writeback_ = 0;  ///< guarded by mutex_
};

}  // namespace tqlab
