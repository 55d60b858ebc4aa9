// TensorFile::read_bytes (src/io/tensor_file.h) and MappedFile::read
// (src/core/mapped_file.h): the bytes a stream reads by pread are the bytes the
// map holds, for data in the file, inflated .npz members held in memory and
// files held in memory; ranges outside a tensor and a file cut short after
// opening are refused, never read past.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "io/tensor_file.h"
#include "io_test_util.h"

namespace tqlab {
namespace {

using io_test::fixture;
using io_test::read_bytes;
using io_test::ScratchDir;
using io_test::throws_input_error;

// Every tensor of `file`, read whole and in three uneven pieces, equals its mapped bytes.
void expect_reads_match_the_map(const TensorFile& file) {
  for (const TensorView& view : file.tensors()) {
    SCOPED_TRACE(view.name);
    const std::vector<std::byte> mapped(view.data, view.data + view.byte_size);
    std::vector<std::byte> read(view.byte_size);
    file.read_bytes(view, 0, read);
    EXPECT_EQ(read, mapped);
    const std::uint64_t cuts[] = {0, view.byte_size / 3, view.byte_size / 3 + 1, view.byte_size};
    std::vector<std::byte> pieces;
    for (std::size_t i = 0; i + 1 < std::size(cuts); ++i) {
      std::vector<std::byte> piece(std::min(cuts[i + 1], view.byte_size) - std::min(cuts[i], view.byte_size));
      file.read_bytes(view, std::min(cuts[i], view.byte_size), piece);
      pieces.insert(pieces.end(), piece.begin(), piece.end());
    }
    EXPECT_EQ(pieces, mapped);
  }
}

TEST(TensorFileReadTest, ReadsWhatTheMapHoldsForEveryKindOfFile) {
  // Stored .npz members and safetensors data lie in the file (pread); deflated members are
  // held in memory; big-endian .npy data is read as stored (no byte swap).
  for (const char* name :
       {"savez.npz", "savez_compressed.npz", "all_dtypes.safetensors", "f8_be.npy", "f4_fortran234.npy"}) {
    SCOPED_TRACE(name);
    const auto file = TensorFile::open(fixture(name));
    ASSERT_FALSE(file->tensors().empty());
    expect_reads_match_the_map(*file);
  }
  // A file held in memory reads from those bytes.
  const auto in_memory =
      std::make_shared<const MappedFile>("in-memory.safetensors", read_bytes(fixture("all_dtypes.safetensors")));
  expect_reads_match_the_map(*TensorFile::open(in_memory));
}

TEST(TensorFileReadTest, RangesOutsideTheTensorAreAnInternalError) {
  const auto file = TensorFile::open(fixture("savez.npz"));
  const TensorView& view = file->tensors().front();
  std::vector<std::byte> one(1), none;
  file->read_bytes(view, view.byte_size, none);  // empty, at the end: fine
  EXPECT_THROW(file->read_bytes(view, view.byte_size, one), InternalError);
  EXPECT_THROW(file->read_bytes(view, view.byte_size + 1, none), InternalError);
  std::vector<std::byte> too_long(view.byte_size + 1);
  EXPECT_THROW(file->read_bytes(view, 0, too_long), InternalError);
}

TEST(TensorFileReadTest, AFileCutShortAfterOpeningIsAnInputError) {
  // Reading the map there would be a SIGBUS; pread sees the end and says so.
  ScratchDir scratch;
  const std::string path = scratch.file("cut.safetensors");
  std::filesystem::copy_file(fixture("all_dtypes.safetensors"), path);
  const auto file = TensorFile::open(path);
  const TensorView* last = nullptr;  // the non-empty tensor that lies last in the file
  for (const TensorView& view : file->tensors()) {
    if (view.byte_size > 0 && (last == nullptr || view.file_offset > last->file_offset)) last = &view;
  }
  ASSERT_NE(last, nullptr);
  std::filesystem::resize_file(path, last->file_offset);
  std::vector<std::byte> out(last->byte_size);
  EXPECT_TRUE(throws_input_error([&] { file->read_bytes(*last, 0, out); }, {"cut.safetensors", "truncated"}));
}

}  // namespace
}  // namespace tqlab
