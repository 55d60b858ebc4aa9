// Helpers shared by the .npy/.npz tests: fixture paths, scratch directories, raw bytes,
// hand-made .npy streams, a minimal zip walker for patching archives, error checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/tensor_file.h"

namespace tqlab::io_test {

/// tests/data/io: the numpy-written fixtures and expected.json (tools/make_io_fixtures.py).
std::filesystem::path fixture_dir();
std::string fixture(std::string_view name);

/// What expected.json says about one tensor of one fixture.
struct ExpectedTensor {
  std::string name;
  std::string descr;                 ///< numpy's, e.g. "<f4", ">f8", "|V2"; empty for safetensors
  std::string dtype_code;            ///< safetensors', e.g. "I64"; empty for npy/npz
  std::vector<std::int64_t> shape;
  bool fortran_order = false;
  std::vector<double> values;        ///< C order (bf16_bits: the bits read as bfloat16)
  std::vector<std::string> integers; ///< integer types: C order, exactly, in decimal
  bool bf16_bits = false;            ///< 2-byte values that hold bfloat16 bits
  std::vector<std::byte> bytes;      ///< C order, little-endian
};

/// The DType a numpy descr ("<i8", "|b1", ">f2", "|V2") is read as without options:
/// the tests' own table, independent of the reader's.
DType dtype_of_descr(std::string_view descr);

/// The DType a tensor of `written` reads back as from .npy/.npz without options:
/// numpy has no bfloat16 or fp8, so bf16 comes back as u16 and fp8 as u8.
DType dtype_after_npy(DType written);

/// Each element of an integer or bool tensor in C order, exactly, in decimal.
std::vector<std::string> integer_texts(const TensorView& tensor);
/// The tensors of fixture `file`, sorted by name.
std::vector<ExpectedTensor> expected_tensors(std::string_view file);
/// Every fixture file named in expected.json whose name ends in `suffix`.
std::vector<std::string> fixture_names(std::string_view suffix);

/// Opens `path` and checks every tensor against the fixture in expected.json: names,
/// shape, dtype, byte order, C-order bytes, exact integers, float values (bfloat16
/// bits read with raw16_as_bf16).
void expect_matches_fixture(const std::string& path, std::string_view fixture_name);

/// A fresh directory for the running test, removed with its contents afterwards.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(std::string_view name) const;

 private:
  std::filesystem::path path_;
};

std::vector<std::byte> read_bytes(const std::string& path);
void write_bytes(const std::string& path, std::span<const std::byte> bytes);
std::vector<std::byte> as_bytes(std::string_view text);

/// A version-`major` .npy stream with `header` as its dict text (padded to 64 bytes like numpy).
std::vector<std::byte> make_npy(std::string_view header, std::span<const std::byte> data, int major = 1);

/// Reads / writes a little-endian integer of `size` bytes at `offset`.
std::uint64_t get_le(std::span<const std::byte> bytes, std::size_t offset, int size);
void put_le(std::vector<std::byte>& bytes, std::size_t offset, int size, std::uint64_t value);

/// Where the records of a plain (non-zip64, no comment) zip archive are.
struct ZipLayout {
  std::size_t end_record = 0;
  std::size_t directory_offset = 0;
  std::vector<std::size_t> central_headers;  ///< offsets, in directory order
  std::vector<std::size_t> local_headers;    ///< offsets, same order
};
ZipLayout zip_layout(std::span<const std::byte> archive);

/// Passes when `action` throws InputError whose message contains every fragment.
template <typename Action>
::testing::AssertionResult throws_input_error(Action&& action, std::initializer_list<std::string_view> fragments) {
  try {
    action();
  } catch (const InputError& error) {
    const std::string message = error.what();
    for (std::string_view fragment : fragments) {
      if (message.find(fragment) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << fragment << "\"";
      }
    }
    return ::testing::AssertionSuccess() << message;
  } catch (const std::exception& other) {
    return ::testing::AssertionFailure() << "threw something other than InputError: " << other.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace tqlab::io_test
