// .npz reading and writing: numpy's savez / savez_compressed / streamed / zip64 archives,
// bit-exact round trips through stored, deflated and zip64 members, CRC-32 against a
// plain bitwise reference, and an InputError naming archive and member for every defect.
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "io/npy.h"
#include "io/npz.h"
#include "io/tensor_file.h"
#include "io_test_util.h"

namespace tqlab {
namespace {

using io_test::fixture;
using io_test::get_le;
using io_test::put_le;
using io_test::read_bytes;
using io_test::ScratchDir;
using io_test::throws_input_error;
using io_test::write_bytes;
using io_test::zip_layout;

// Field offsets the tests patch (PKWARE APPNOTE 4.3.7, 4.3.12, 4.3.16).
constexpr std::size_t kLocalMethod = 8, kLocalCompressedSize = 18;
constexpr std::size_t kCentralFlags = 8, kCentralMethod = 10, kCentralCrc = 16, kCentralCompressedSize = 20,
                      kCentralUncompressedSize = 24, kCentralLocalOffset = 42;
constexpr std::size_t kEndDiskEntries = 8, kEndEntries = 10, kEndDirectoryOffset = 16;

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), one bit at a time: the reference
// the archive's checksums are held against.
std::uint32_t reference_crc32(std::span<const std::byte> bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : bytes) {
    crc ^= std::to_integer<std::uint32_t>(b);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(NpzCrcTest, ReferenceCrcMatchesTheStandardCheckValue) {
  EXPECT_EQ(reference_crc32(io_test::as_bytes("123456789")), 0xCBF43926u);  // the CRC-32 check value
}

// Tensors of every dtype and shape class, with random bit patterns, owning their bytes.
struct TensorSet {
  std::vector<std::vector<std::byte>> data;
  std::vector<TensorToWrite> tensors;
};

TensorSet mixed_tensors(std::uint64_t seed) {
  TensorSet set;
  std::mt19937_64 random(seed);
  struct Spec {
    const char* name;
    DType dtype;
    std::vector<std::int64_t> shape;
  };
  const std::vector<Spec> specs = {
      {"keys", DType::f16, {2, 3, 8}}, {"values", DType::f32, {2, 3, 8}}, {"layers/0/q", DType::bf16, {4, 5}},
      {"scalar", DType::f64, {}},      {"empty", DType::f32, {3, 0}},      {"raw", DType::raw16, {300}},
      {"smooth", DType::f32, {4096}},  {"ids", DType::i64, {2, 7}},     {"mask", DType::boolean, {2, 7}},
      {"codes", DType::f8_e4m3, {9}},  {"counts", DType::u32, {3}},
  };
  set.data.reserve(specs.size());
  for (const Spec& spec : specs) {
    const std::int64_t count =
        std::accumulate(spec.shape.begin(), spec.shape.end(), std::int64_t{1}, std::multiplies<>());
    std::vector<std::byte> bytes(static_cast<std::size_t>(count) * dtype_size(spec.dtype));
    if (std::string_view(spec.name) == "smooth") {
      // Compressible data, so deflate really has work to do.
      const std::vector<float> ramp = [&] {
        std::vector<float> v(static_cast<std::size_t>(count));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 64);
        return v;
      }();
      std::memcpy(bytes.data(), ramp.data(), bytes.size());
    } else {
      for (std::byte& b : bytes) b = static_cast<std::byte>(random());
    }
    set.data.push_back(std::move(bytes));
    set.tensors.push_back({spec.name, spec.dtype, spec.shape, set.data.back()});
  }
  return set;
}

void expect_round_trip(const std::string& path, const TensorSet& set) {
  const auto file = TensorFile::open(path);
  EXPECT_EQ(file->format(), "npz");
  ASSERT_EQ(file->tensors().size(), set.tensors.size());
  for (std::size_t i = 0; i < set.tensors.size(); ++i) {
    const TensorToWrite& want = set.tensors[i];
    const TensorView& got = file->tensors()[i];  // archive order is write order
    EXPECT_EQ(got.name, want.name);
    // bf16 is stored as numpy's '<u2': it reads back as u16.
    EXPECT_EQ(got.dtype, io_test::dtype_after_npy(want.dtype)) << want.name;
    EXPECT_EQ(got.shape, want.shape) << want.name;
    const std::vector<std::byte> bytes = read_all_bytes(got);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), want.bytes.begin(), want.bytes.end())) << want.name;
  }
}

// A stored two-member archive ("a", "b": f32 (2, 3)) written by us, for patching.
std::vector<std::byte> small_archive(const ScratchDir& dir, bool compressed) {
  static const float values[6] = {1, 2, 3, 4, 5, 6};
  const auto bytes = std::as_bytes(std::span(values));
  const std::vector<TensorToWrite> tensors = {{"a", DType::f32, {2, 3}, bytes}, {"b", DType::f32, {2, 3}, bytes}};
  const std::string path = dir.file("small.npz");
  write_npz(path, tensors, compressed);
  return read_bytes(path);
}

// Writes `archive` and expects opening it to fail with every fragment in the message.
::testing::AssertionResult open_fails(const ScratchDir& dir, const std::vector<std::byte>& archive,
                                      std::initializer_list<std::string_view> fragments) {
  const std::string path = dir.file("broken.npz");
  write_bytes(path, archive);
  return throws_input_error([&] { TensorFile::open(path); }, fragments);
}

// Raw deflate of `bytes`: zlib's stream minus its 2-byte header and 4-byte Adler-32 trailer.
std::vector<std::byte> raw_deflate(std::span<const std::byte> bytes) {
  uLongf size = compressBound(bytes.size());
  std::vector<std::byte> zlib_stream(size);
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(zlib_stream.data()), &size,
                      reinterpret_cast<const Bytef*>(bytes.data()), bytes.size(), 6),
            Z_OK);
  return std::vector<std::byte>(zlib_stream.begin() + 2, zlib_stream.begin() + static_cast<std::ptrdiff_t>(size) - 4);
}

// One deflated member "a.npy" holding f32 (2, 3) whose compressed bytes are replaced by
// `payload`; every offset and the compressed size are moved to match.
std::vector<std::byte> archive_with_payload(const ScratchDir& dir, std::span<const std::byte> payload) {
  static const float values[6] = {1, 2, 3, 4, 5, 6};
  const std::vector<TensorToWrite> tensors = {{"a", DType::f32, {2, 3}, std::as_bytes(std::span(values))}};
  write_npz(dir.file("one.npz"), tensors, true);
  const std::vector<std::byte> archive = read_bytes(dir.file("one.npz"));
  const io_test::ZipLayout layout = zip_layout(archive);
  const std::size_t data = layout.local_headers[0] + 30 + 5;
  const std::size_t old_size = get_le(archive, layout.central_headers[0] + kCentralCompressedSize, 4);
  std::vector<std::byte> out(archive.begin(), archive.begin() + static_cast<std::ptrdiff_t>(data));
  out.insert(out.end(), payload.begin(), payload.end());
  out.insert(out.end(), archive.begin() + static_cast<std::ptrdiff_t>(data + old_size), archive.end());
  const std::size_t central = layout.central_headers[0] + payload.size() - old_size;
  put_le(out, central + kCentralCompressedSize, 4, payload.size());
  put_le(out, out.size() - 22 + kEndDirectoryOffset, 4, central);
  return out;
}

void replace_all(std::vector<std::byte>& bytes, std::string_view from, std::string_view to) {
  ASSERT_EQ(from.size(), to.size());
  int replaced = 0;
  for (std::size_t i = 0; i + from.size() <= bytes.size(); ++i) {
    if (std::memcmp(bytes.data() + i, from.data(), from.size()) == 0) {
      std::memcpy(bytes.data() + i, to.data(), to.size());
      ++replaced;
    }
  }
  ASSERT_GE(replaced, 2);  // local and central name
}

// --- numpy-written archives ---------------------------------------------------------------

TEST(NpzReadTest, EveryNumpyArchiveReadsAsNumpyWroteIt) {
  const std::vector<std::string> names = io_test::fixture_names(".npz");
  ASSERT_EQ(names.size(), 5u);  // savez, savez_compressed, streamed, zip64, ints (token ids, mask, ...)
  for (const std::string& name : names) io_test::expect_matches_fixture(fixture(name), name);
}

TEST(NpzReadTest, TensorsKeepTheOrderSavezWroteThem) {
  const auto file = TensorFile::open(fixture("savez.npz"));
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->tensors()[0].name, "keys");
  EXPECT_EQ(file->tensors()[1].name, "values");
}

// Stored members are not copied: each view's file_offset is where its bytes are in the file.
TEST(NpzReadTest, StoredMembersPointIntoTheFile) {
  const std::vector<std::byte> archive = read_bytes(fixture("savez.npz"));
  const auto file = TensorFile::open(fixture("savez.npz"));
  for (const TensorView& view : file->tensors()) {
    ASSERT_LE(view.file_offset + view.byte_size, archive.size());
    const std::vector<std::byte> in_file(
        archive.begin() + static_cast<std::ptrdiff_t>(view.file_offset),
        archive.begin() + static_cast<std::ptrdiff_t>(view.file_offset + view.byte_size));
    EXPECT_EQ(read_all_bytes(view), in_file) << view.name;
    file->release(view);  // gives the pages back; the data reads the same afterwards
    EXPECT_EQ(read_all_bytes(view), in_file) << view.name;
  }
}

// A streamed savez leaves the local headers' sizes zero (flag bit 3, data descriptors):
// the sizes must come from the central directory.
TEST(NpzReadTest, StreamedArchiveHasZeroLocalSizes) {
  const std::vector<std::byte> archive = read_bytes(fixture("streamed.npz"));
  EXPECT_EQ(get_le(archive, 6, 2) & 8u, 8u);
  EXPECT_EQ(get_le(archive, kLocalCompressedSize, 4), 0u);
  EXPECT_EQ(TensorFile::open(fixture("streamed.npz"))->tensors().size(), 2u);
}

// The end record is found behind a comment, even one holding a false end-record signature.
TEST(NpzReadTest, ArchiveCommentIsSkipped) {
  ScratchDir dir;
  std::vector<std::byte> archive = read_bytes(fixture("savez.npz"));
  const std::string comment = std::string("PK\x05\x06") + std::string(30, 'x');
  put_le(archive, archive.size() - 2, 2, comment.size());
  const std::vector<std::byte> tail = io_test::as_bytes(comment);
  archive.insert(archive.end(), tail.begin(), tail.end());
  const std::string path = dir.file("commented.npz");
  write_bytes(path, archive);
  io_test::expect_matches_fixture(path, "savez.npz");
}

// --- writing ------------------------------------------------------------------------------

TEST(NpzWriteTest, EveryDtypeRoundTripsBitExactly) {
  ScratchDir dir;
  const TensorSet set = mixed_tensors(11);
  for (bool compressed : {false, true}) {
    const std::string path = dir.file(compressed ? "deflated.npz" : "stored.npz");
    write_npz(path, set.tensors, compressed);
    SCOPED_TRACE(path);
    expect_round_trip(path, set);
  }
  // Deflate really ran: the compressible tensor shrank.
  EXPECT_LT(read_bytes(dir.file("deflated.npz")).size() + 8192, read_bytes(dir.file("stored.npz")).size());
}

TEST(NpzWriteTest, Zip64FormRoundTrips) {
  ScratchDir dir;
  const TensorSet set = mixed_tensors(12);
  for (bool compressed : {false, true}) {
    const std::string path = dir.file(compressed ? "deflated64.npz" : "stored64.npz");
    detail::write_npz_forcing_zip64(path, set.tensors, compressed);
    SCOPED_TRACE(path);
    const std::vector<std::byte> archive = read_bytes(path);
    // The end record defers to the zip64 one, which the locator just before it points at.
    EXPECT_EQ(get_le(archive, archive.size() - 22 + kEndDirectoryOffset, 4), 0xFFFFFFFFu);
    EXPECT_EQ(get_le(archive, archive.size() - 22 - 20, 4), 0x07064b50u);
    // A zip64 local header saturates both sizes and carries them in a 20-byte extra field.
    EXPECT_EQ(get_le(archive, kLocalCompressedSize, 4), 0xFFFFFFFFu);
    EXPECT_EQ(get_le(archive, kLocalCompressedSize + 4, 4), 0xFFFFFFFFu);
    EXPECT_EQ(get_le(archive, 28, 2), 20u);
    expect_round_trip(path, set);
  }
}

// Every member's CRC-32 in the central directory is that of its .npy stream; for stored
// members the reader does not check it, so this is where a wrong one would show.
TEST(NpzWriteTest, CrcOfEveryMemberMatchesTheReference) {
  ScratchDir dir;
  const TensorSet set = mixed_tensors(13);
  for (bool compressed : {false, true}) {
    const std::string path = dir.file("crc.npz");
    write_npz(path, set.tensors, compressed);
    const std::vector<std::byte> archive = read_bytes(path);
    const io_test::ZipLayout layout = zip_layout(archive);
    ASSERT_EQ(layout.central_headers.size(), set.tensors.size());
    for (std::size_t i = 0; i < set.tensors.size(); ++i) {
      const std::vector<std::byte> npy = encode_npy(set.tensors[i]);
      EXPECT_EQ(get_le(archive, layout.central_headers[i] + kCentralCrc, 4), reference_crc32(npy))
          << set.tensors[i].name << (compressed ? " deflated" : " stored");
      EXPECT_EQ(get_le(archive, layout.central_headers[i] + kCentralUncompressedSize, 4), npy.size());
    }
  }
}

TEST(NpzWriteTest, EmptyArchiveHasNoTensors) {
  ScratchDir dir;
  const std::string path = dir.file("none.npz");
  write_npz(path, {}, false);
  EXPECT_EQ(read_bytes(path).size(), 22u);  // just the end record
  EXPECT_TRUE(TensorFile::open(path)->tensors().empty());
}

TEST(NpzWriteTest, RefusesDuplicateOrEmptyNames) {
  ScratchDir dir;
  const std::vector<std::byte> data(4);
  const std::string path = dir.file("bad.npz");
  const std::vector<TensorToWrite> twice = {{"k", DType::f32, {1}, data}, {"k", DType::f32, {1}, data}};
  EXPECT_TRUE(throws_input_error([&] { write_npz(path, twice, false); }, {path, "'k' given twice"}));
  const std::vector<TensorToWrite> unnamed = {{"", DType::f32, {1}, data}};
  EXPECT_TRUE(throws_input_error([&] { write_npz(path, unnamed, false); }, {path, "empty name"}));
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing half-written
}

// Our twins of numpy's fixtures hold the same tensors. With TQLAB_IO_CHECK_DIR set they
// are kept there for `tools/make_io_fixtures.py --check DIR`, which loads them with numpy
// and requires every .npy to be byte-identical to np.save's.
TEST(NpzWriteTest, TwinsOfNumpyFixturesHoldTheSameTensors) {
  ScratchDir scratch;
  const char* keep = std::getenv("TQLAB_IO_CHECK_DIR");
  auto out = [&](const std::string& name) {
    return keep != nullptr ? fmt::format("{}/{}", keep, name) : scratch.file(name);
  };
  int written = 0;
  for (const std::string& name : io_test::fixture_names("")) {
    if (name.ends_with(".safetensors")) continue;
    const std::vector<io_test::ExpectedTensor> expected = io_test::expected_tensors(name);
    std::vector<TensorToWrite> tensors;
    bool writable = true;
    for (const io_test::ExpectedTensor& tensor : expected) {
      writable &= tensor.descr[0] != '>' && !tensor.fortran_order;
      const DType dtype =
          tensor.bf16_bits && tensor.descr == "<u2" ? DType::bf16 : io_test::dtype_of_descr(tensor.descr);
      tensors.push_back({tensor.name, dtype, tensor.shape, tensor.bytes});
    }
    if (!writable || name == "f4_v2.npy" || name == "f4_v3.npy" || name == "streamed.npz") continue;
    const std::string path = out(name);
    if (name == "zip64.npz") {
      detail::write_npz_forcing_zip64(path, tensors, false);
    } else {
      write_tensor_file(path, tensors, {}, name == "savez_compressed.npz");
    }
    io_test::expect_matches_fixture(path, name);
    ++written;
  }
  EXPECT_EQ(written, 22);  // 12 float fixtures, |V2, and b1 u1 i1 and the little-endian u2 i2 u4 i4 u8 i8
}

// --- broken archives: every error is an InputError naming the archive (and member) -----

TEST(NpzErrorTest, TruncatedArchiveHasNoEndRecord) {
  ScratchDir dir;
  std::vector<std::byte> archive = small_archive(dir, false);
  archive.resize(archive.size() - 10);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "no zip end-of-central-directory record"}));
  archive.resize(archive.size() / 2);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "no zip end-of-central-directory record"}));
}

TEST(NpzErrorTest, CorruptCentralDirectory) {
  ScratchDir dir;
  const std::vector<std::byte> good = small_archive(dir, false);
  const io_test::ZipLayout layout = zip_layout(good);

  std::vector<std::byte> archive = good;
  put_le(archive, layout.end_record + kEndDirectoryOffset, 4, good.size() + 100);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "corrupt central directory", "do not fit"}));

  archive = good;
  put_le(archive, layout.central_headers[0], 4, 0x12345678);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "entry 0", "not a central directory header"}));

  archive = good;
  put_le(archive, layout.end_record + kEndEntries, 2, 50);
  put_le(archive, layout.end_record + kEndDiskEntries, 2, 50);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "cannot hold the 50 entries"}));

  archive = good;
  put_le(archive, layout.end_record + kEndEntries, 2, 1);
  put_le(archive, layout.end_record + kEndDiskEntries, 2, 1);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "bytes left after its 1 entries"}));

  archive = good;
  put_le(archive, layout.central_headers[1] + kCentralLocalOffset, 4, 7);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "member 'b.npy'", "no local file header at offset 7"}));

  archive = good;  // the local header of member b names another member
  archive[layout.local_headers[1] + 30] = std::byte{'c'};
  EXPECT_TRUE(open_fails(dir, archive, {"member 'b.npy'", "names a different member"}));

  archive = good;
  put_le(archive, layout.central_headers[1] + kCentralCompressedSize, 4, 0xFFFFFFFF);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'b.npy'", "no zip64 extra field"}));

  archive = good;  // a stored member's two sizes must agree
  put_le(archive, layout.central_headers[0] + kCentralUncompressedSize, 4,
         get_le(good, layout.central_headers[0] + kCentralUncompressedSize, 4) + 1);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'a.npy'", "stored member has"}));

  archive = good;  // member data running into the central directory
  put_le(archive, layout.central_headers[1] + kCentralCompressedSize, 4, 5000);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'b.npy'", "run past the central directory"}));
}

TEST(NpzErrorTest, OverlappingMembers) {
  ScratchDir dir;
  std::vector<std::byte> archive = small_archive(dir, false);
  const io_test::ZipLayout layout = zip_layout(archive);
  const std::uint64_t size = get_le(archive, layout.central_headers[0] + kCentralCompressedSize, 4);
  put_le(archive, layout.central_headers[0] + kCentralCompressedSize, 4, size + 40);
  put_le(archive, layout.central_headers[0] + kCentralUncompressedSize, 4, size + 40);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "'a.npy' and 'b.npy' overlap"}));
}

TEST(NpzErrorTest, CrcMismatchOfADeflatedMember) {
  ScratchDir dir;
  std::vector<std::byte> archive = small_archive(dir, true);
  const io_test::ZipLayout layout = zip_layout(archive);
  const std::uint64_t crc = get_le(archive, layout.central_headers[1] + kCentralCrc, 4);
  put_le(archive, layout.central_headers[1] + kCentralCrc, 4, crc ^ 0x10);
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "member 'b.npy'", "CRC-32 mismatch"}));
}

TEST(NpzErrorTest, CorruptDeflateData) {
  ScratchDir dir;
  std::vector<std::byte> archive = small_archive(dir, true);
  const io_test::ZipLayout layout = zip_layout(archive);
  // Garble the middle of member a's compressed bytes.
  const std::size_t data = layout.local_headers[0] + 30 + 5;
  const std::size_t size = get_le(archive, layout.central_headers[0] + kCentralCompressedSize, 4);
  for (std::size_t i = size / 3; i < 2 * size / 3; ++i) archive[data + i] = std::byte{0xFF};
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "member 'a.npy'"}));
}

TEST(NpzErrorTest, DeflateBombDeclarationIsRefusedBeforeAllocating) {
  ScratchDir dir;
  const std::vector<std::byte> good = small_archive(dir, true);
  const io_test::ZipLayout layout = zip_layout(good);
  std::vector<std::byte> archive = good;
  put_le(archive, layout.central_headers[0] + kCentralUncompressedSize, 4, 0x80000000u);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'a.npy'", "declares 2147483648 bytes", "decompression bomb"}));

  // Within deflate's ratio but not what the member's own .npy header implies.
  archive = good;
  const std::uint64_t size = get_le(good, layout.central_headers[0] + kCentralUncompressedSize, 4);
  put_le(archive, layout.central_headers[0] + kCentralUncompressedSize, 4, size + 64);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'a.npy'", fmt::format("declares {} bytes", size + 64),
                                        fmt::format("header implies {}", size)}));
  archive = good;
  put_le(archive, layout.central_headers[0] + kCentralUncompressedSize, 4, size - 4);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'a.npy'", fmt::format("header implies {}", size)}));
}

TEST(NpzErrorTest, DeflateStreamLongerOrShorterThanDeclared) {
  ScratchDir dir;
  static const float values[6] = {1, 2, 3, 4, 5, 6};
  const std::vector<std::byte> npy = encode_npy({"a", DType::f32, {2, 3}, std::as_bytes(std::span(values))});
  // The replacement harness itself yields a good archive.
  const std::string path = dir.file("rebuilt.npz");
  write_bytes(path, archive_with_payload(dir, raw_deflate(npy)));
  EXPECT_EQ(TensorFile::open(path)->tensors()[0].element_count(), 6);

  std::vector<std::byte> longer = npy;
  longer.resize(npy.size() + 8);  // inflates to 8 bytes more than the member declares
  EXPECT_TRUE(open_fails(dir, archive_with_payload(dir, raw_deflate(longer)),
                         {"member 'a.npy'", fmt::format("inflates to more than the {} bytes", npy.size())}));

  const std::vector<std::byte> shorter(npy.begin(), npy.end() - 4);
  EXPECT_TRUE(open_fails(dir, archive_with_payload(dir, raw_deflate(shorter)),
                         {"member 'a.npy'", fmt::format("fewer than the {} it declares", npy.size())}));

  std::vector<std::byte> cut = raw_deflate(npy);
  cut.resize(cut.size() / 2);
  EXPECT_TRUE(open_fails(dir, archive_with_payload(dir, cut), {"member 'a.npy'", "ends before its deflate stream"}));

  std::vector<std::byte> padded = raw_deflate(npy);
  padded.resize(padded.size() + 3);
  EXPECT_TRUE(open_fails(dir, archive_with_payload(dir, padded),
                         {"member 'a.npy'", "3 bytes of compressed data follow the end"}));
}

TEST(NpzErrorTest, UnsupportedMethodOrEncryption) {
  ScratchDir dir;
  const std::vector<std::byte> good = small_archive(dir, false);
  const io_test::ZipLayout layout = zip_layout(good);
  std::vector<std::byte> archive = good;
  put_le(archive, layout.central_headers[0] + kCentralMethod, 2, 12);  // bzip2
  put_le(archive, layout.local_headers[0] + kLocalMethod, 2, 12);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'a.npy'", "compression method 12 is not supported"}));

  archive = good;
  put_le(archive, layout.central_headers[1] + kCentralFlags, 2, 1);
  EXPECT_TRUE(open_fails(dir, archive, {"member 'b.npy'", "encrypted"}));
}

TEST(NpzErrorTest, DuplicateNamesAndNonNpyMembers) {
  ScratchDir dir;
  const std::vector<std::byte> good = small_archive(dir, false);
  std::vector<std::byte> archive = good;
  replace_all(archive, "b.npy", "a.npy");
  EXPECT_TRUE(open_fails(dir, archive, {"member 'a.npy'", "appears twice"}));

  archive = good;
  replace_all(archive, "b.npy", "b.txt");
  EXPECT_TRUE(open_fails(dir, archive, {"member 'b.txt'", "not a .npy array"}));
}

TEST(NpzErrorTest, MemberThatIsNotAnNpyStream) {
  ScratchDir dir;
  std::vector<std::byte> archive = small_archive(dir, false);
  const io_test::ZipLayout layout = zip_layout(archive);
  archive[layout.local_headers[1] + 30 + 5 + 5] = std::byte{'Z'};  // "\x93NUMPZ"
  EXPECT_TRUE(open_fails(dir, archive, {"broken.npz", "member 'b.npy'", "not a .npy stream"}));
}

TEST(NpzErrorTest, TruncatedMemberData) {
  ScratchDir dir;
  std::vector<std::byte> archive = small_archive(dir, false);
  const io_test::ZipLayout layout = zip_layout(archive);
  // Member b claims 4 bytes less (a stored member: both sizes) than its .npy needs.
  for (std::size_t field : {kCentralCompressedSize, kCentralUncompressedSize}) {
    const std::uint64_t size = get_le(archive, layout.central_headers[1] + field, 4);
    put_le(archive, layout.central_headers[1] + field, 4, size - 4);
  }
  EXPECT_TRUE(open_fails(dir, archive, {"member 'b.npy'", "tensor 'b'", "truncated"}));
}

}  // namespace
}  // namespace tqlab
