#include "io/tensor_stream_writer.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

#include "core/error.h"
#include "core/text.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/safetensors.h"
#include "io/zip_records.h"

namespace tqlab {
namespace {

// With Durability::on_disk, every time this much more has been written the file's dirty
// pages are handed to the disk (no waiting), so that the fsync at commit() finds most of
// the file already on its way.
constexpr std::uint64_t kWritebackBytes = std::uint64_t{8} << 20;

std::uint64_t data_bytes(const TensorToWrite& tensor) {
  std::uint64_t bytes = dtype_size(tensor.dtype);
  for (const std::int64_t extent : tensor.shape) bytes *= static_cast<std::uint64_t>(extent);
  return bytes;
}

}  // namespace

TensorStreamWriter::TensorStreamWriter(const std::string& path, std::span<const TensorToWrite> tensors,
                                       const std::map<std::string, std::string>& metadata, Durability durability)
    : path_(path) {
  std::vector<std::byte> header;
  std::uint64_t data_start = 0;
  if (path.ends_with(".safetensors")) {
    format_ = Format::safetensors;
    header = encode_safetensors_header(path, tensors, metadata);
    data_start = header.size();
  } else if (path.ends_with(".npz")) {
    format_ = Format::npz;
    npz_ = std::make_unique<NpzLayout>(path, tensors);
  } else if (path.ends_with(".npy")) {
    format_ = Format::npy;
    if (tensors.size() != 1) {
      fail("'{}': a .npy file holds one tensor, not {}; use .npz or .safetensors", path, tensors.size());
    }
    header = encode_npy_header_for_shape(tensors[0]);
    data_start = header.size();
  } else {
    fail("'{}': unknown output format, expected a name ending in .safetensors, .npz or .npy", path);
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    Tensor tensor;
    tensor.name = tensors[i].name;
    tensor.bytes = data_bytes(tensors[i]);
    if (npz_) {
      tensor.file_offset = npz_->data_offset(i);
    } else {
      tensor.file_offset = data_start;
      data_start += tensor.bytes;  // safetensors: back to back in the given order
    }
    tensors_.push_back(std::move(tensor));
  }

  file_ = std::make_unique<AtomicFileWriter>(path, durability);
  if (npz_) {
    // CRCs are not known yet: the local headers go out with 0 and are rewritten at commit().
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      file_->write_at(npz_->local_header_offset(i), npz_->member_prefix(i, 0));
  } else {
    file_->write_at(0, header);
  }
}

TensorStreamWriter::~TensorStreamWriter() = default;

void TensorStreamWriter::write(std::size_t index, std::uint64_t offset, std::span<const std::byte> bytes) {
  Tensor& tensor = tensors_.at(index);
  if (offset > tensor.bytes || bytes.size() > tensor.bytes - offset) {
    throw InternalError(fmt::format("'{}': bytes [{}, {}) of tensor '{}' lie outside its {} bytes", path_, offset,
                                    offset + bytes.size(), printable(tensor.name), tensor.bytes));
  }
  if (bytes.empty()) return;
  Piece piece{offset, bytes.size(), 0};
  if (format_ == Format::npz) piece.crc = zip::crc32_of(0, bytes);
  file_->write_at(tensor.file_offset + offset, bytes);
  bool writeback = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    tensor.pieces.push_back(piece);
    written_since_writeback_ += bytes.size();
    if (written_since_writeback_ >= kWritebackBytes && file_->durability() == Durability::on_disk) {
      written_since_writeback_ = 0;
      writeback = true;
    }
  }
  if (writeback) file_->start_writeback(0, 0);
}

std::uint32_t TensorStreamWriter::member_crc(std::size_t index) const {
  const Tensor& tensor = tensors_[index];
  std::uint32_t crc = zip::crc32_of(0, npz_->npy_header(index));
  // The pieces are sorted and tile the data (checked by commit()): CRC of a concatenation.
  for (const Piece& piece : tensor.pieces) {
    crc = static_cast<std::uint32_t>(::crc32_combine(crc, piece.crc, static_cast<z_off_t>(piece.size)));
  }
  return crc;
}

void TensorStreamWriter::commit() {
  for (Tensor& tensor : tensors_) {
    std::sort(tensor.pieces.begin(), tensor.pieces.end(),
              [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
    std::uint64_t covered = 0;
    std::size_t tiling = 0;  // pieces that continue exactly where the ones before end
    while (tiling < tensor.pieces.size() && tensor.pieces[tiling].offset == covered) {
      covered += tensor.pieces[tiling++].size;
    }
    if (covered != tensor.bytes || tiling != tensor.pieces.size()) {
      throw InternalError(fmt::format("'{}': tensor '{}': bytes from {} on are missing or written twice ({} bytes)",
                                      path_, printable(tensor.name), covered, tensor.bytes));
    }
  }
  if (npz_) {
    std::vector<std::uint32_t> crcs;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      crcs.push_back(member_crc(i));
      file_->write_at(npz_->local_header_offset(i), npz_->member_prefix(i, crcs.back()));
    }
    file_->write_at(npz_->directory_offset(), npz_->directory(crcs));
  }
  file_->commit();
}

}  // namespace tqlab
