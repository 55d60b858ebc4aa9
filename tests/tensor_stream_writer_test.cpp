// TensorStreamWriter (src/io/tensor_stream_writer.h): whatever the order and
// the cut of the pieces, and from several threads, the file holds exactly the
// bytes the in-memory writers (write_tensor_file) write; a missing piece is
// caught at commit() and leaves no file behind.
#include <algorithm>
#include <filesystem>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/tensor_file.h"
#include "io/tensor_stream_writer.h"
#include "io_test_util.h"

namespace tqlab {
namespace {

using io_test::read_bytes;
using io_test::ScratchDir;

struct Owned {
  std::vector<std::vector<std::byte>> bytes;
  std::vector<TensorToWrite> tensors;
};

Owned sample_tensors() {
  Owned owned;
  std::mt19937_64 random(11);
  const auto add = [&](std::string name, DType dtype, std::vector<std::int64_t> shape) {
    std::size_t size = dtype_size(dtype);
    for (const std::int64_t extent : shape) size *= static_cast<std::size_t>(extent);
    std::vector<std::byte> bytes(size);
    for (std::byte& byte : bytes) byte = static_cast<std::byte>(random() & 0x7F);  // no NaN patterns needed: raw bytes
    owned.bytes.push_back(std::move(bytes));
    owned.tensors.push_back({std::move(name), dtype, std::move(shape), {}});
  };
  add("layers.0.k", DType::f32, {2, 300, 64});
  add("input_ids", DType::i64, {1, 37});
  add("empty", DType::f16, {0, 5});
  add("mask", DType::boolean, {3, 7});
  add("layers.0.v", DType::bf16, {4, 129, 16});
  add("scalar", DType::f64, {});
  for (std::size_t i = 0; i < owned.tensors.size(); ++i) owned.tensors[i].bytes = owned.bytes[i];
  return owned;
}

// Writes every tensor in pieces of random sizes, in a shuffled order, from `threads` threads.
void stream(const std::string& path, const Owned& owned, const std::map<std::string, std::string>& metadata,
            int threads, std::uint64_t seed) {
  struct Piece {
    std::size_t tensor;
    std::uint64_t offset, size;
  };
  std::vector<Piece> pieces;
  std::mt19937_64 random(seed);
  for (std::size_t i = 0; i < owned.tensors.size(); ++i) {
    const std::uint64_t total = owned.bytes[i].size();
    for (std::uint64_t offset = 0; offset < total;) {
      const std::uint64_t size = std::min<std::uint64_t>(total - offset, 1 + random() % 5000);
      pieces.push_back({i, offset, size});
      offset += size;
    }
  }
  std::shuffle(pieces.begin(), pieces.end(), random);
  TensorStreamWriter writer(path, owned.tensors, metadata);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t p = static_cast<std::size_t>(t); p < pieces.size(); p += static_cast<std::size_t>(threads)) {
        const Piece& piece = pieces[p];
        writer.write(piece.tensor, piece.offset,
                     std::span(owned.bytes[piece.tensor].data() + piece.offset, piece.size));
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  writer.commit();
}

TEST(TensorStreamWriterTest, EqualsTheInMemoryWriterForEveryFormat) {
  const ScratchDir scratch;
  const Owned owned = sample_tensors();
  const std::map<std::string, std::string> metadata{{"layout", "head token dim"}, {"note", "x"}};
  for (const std::string extension : {".safetensors", ".npz"}) {
    const std::string expected = scratch.file("expected" + extension);
    write_tensor_file(expected, owned.tensors, metadata);
    for (const int threads : {1, 3}) {
      const std::string streamed = scratch.file("streamed" + extension);
      stream(streamed, owned, metadata, threads, 5 + static_cast<std::uint64_t>(threads));
      EXPECT_EQ(read_bytes(streamed), read_bytes(expected)) << extension << ", " << threads << " threads";
      // And our reader takes it (npz: the CRCs of the stored members are not checked on open,
      // but the archive structure is).
      EXPECT_EQ(TensorFile::open(streamed)->tensors().size(), owned.tensors.size());
    }
  }
  Owned one;
  one.bytes = {owned.bytes[0]};
  one.tensors = {owned.tensors[0]};
  one.tensors[0].bytes = one.bytes[0];
  write_tensor_file(scratch.file("expected.npy"), one.tensors);
  stream(scratch.file("streamed.npy"), one, {}, 2, 3);
  EXPECT_EQ(read_bytes(scratch.file("streamed.npy")), read_bytes(scratch.file("expected.npy")));
}

TEST(TensorStreamWriterTest, NpzCrcsAreThoseOfTheWholeMembers) {
  // The expected archive's CRCs come from one pass over each member; the streamed ones are
  // combined from pieces: equal bytes above already say so, this breaks one piece to see
  // that a wrong byte changes the archive (the CRC field, not only the data).
  const ScratchDir scratch;
  Owned owned = sample_tensors();
  write_tensor_file(scratch.file("expected.npz"), owned.tensors, {});
  owned.bytes[0][100] ^= std::byte{1};
  stream(scratch.file("changed.npz"), owned, {}, 1, 1);
  const std::vector<std::byte> expected = read_bytes(scratch.file("expected.npz"));
  const std::vector<std::byte> changed = read_bytes(scratch.file("changed.npz"));
  ASSERT_EQ(expected.size(), changed.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) differing += expected[i] != changed[i];
  EXPECT_EQ(differing, 1u + 4u + 4u) << "the data byte, the CRC in the local header and in the directory";
}

TEST(TensorStreamWriterTest, MissingOrDoubledBytesAreCaughtAndLeaveNoFile) {
  const ScratchDir scratch;
  const Owned owned = sample_tensors();
  const std::string path = scratch.file("out.safetensors");
  {
    TensorStreamWriter writer(path, owned.tensors, {});
    for (std::size_t i = 0; i < owned.tensors.size(); ++i) {
      const std::span<const std::byte> bytes = owned.bytes[i];
      writer.write(i, 0, i == 0 ? bytes.first(bytes.size() - 1) : bytes);
    }
    EXPECT_THROW(writer.commit(), InternalError);
  }
  {
    TensorStreamWriter writer(path, owned.tensors, {});
    for (std::size_t i = 0; i < owned.tensors.size(); ++i) writer.write(i, 0, owned.bytes[i]);
    writer.write(1, 8, std::span(owned.bytes[1]).subspan(8, 8));
    EXPECT_THROW(writer.commit(), InternalError);
    EXPECT_THROW(writer.write(0, owned.bytes[0].size(), std::span(owned.bytes[0]).first(1)), InternalError);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    ADD_FAILURE() << "left behind: " << entry.path();
  }
}

TEST(TensorStreamWriterTest, RefusesWhatTheWritersRefuseBeforeWriting) {
  const ScratchDir scratch;
  Owned owned = sample_tensors();
  owned.tensors[1].name = owned.tensors[0].name;
  EXPECT_THROW(TensorStreamWriter(scratch.file("a.safetensors"), owned.tensors, {}), InputError);
  EXPECT_THROW(TensorStreamWriter(scratch.file("a.npz"), owned.tensors, {}), InputError);
  EXPECT_THROW(TensorStreamWriter(scratch.file("a.npy"), owned.tensors, {}), InputError);
  EXPECT_THROW(TensorStreamWriter(scratch.file("a.txt"), owned.tensors, {}), InputError);
  EXPECT_TRUE(std::filesystem::is_empty(std::filesystem::path(scratch.file("a.npz")).parent_path()));
}

}  // namespace
}  // namespace tqlab
