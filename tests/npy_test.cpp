// .npy reading and writing: numpy-written fixtures (tests/data/io, made by
// tools/make_io_fixtures.py), numpy-identical headers, bit-exact round trips, and a
// clear InputError naming the file for every kind of broken input.
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/mapped_file.h"
#include "io/npy.h"
#include "io/tensor_file.h"
#include "io_test_util.h"

namespace tqlab {
namespace {

using io_test::as_bytes;
using io_test::fixture;
using io_test::make_npy;
using io_test::read_bytes;
using io_test::ScratchDir;
using io_test::throws_input_error;
using io_test::write_bytes;

std::vector<float> all_floats(const TensorView& view) {
  std::vector<float> out(static_cast<std::size_t>(view.element_count()));
  read_all_floats(view, out.data());
  return out;
}

// Six little-endian f32 values, the data of a (2, 3) '<f4' tensor.
std::vector<std::byte> six_floats() {
  const float values[6] = {1, 2, 3, 4, 5, 6};
  std::vector<std::byte> bytes(sizeof values);
  std::memcpy(bytes.data(), values, sizeof values);
  return bytes;
}

constexpr std::string_view kGoodHeader = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

// Writes an .npy made of `header` and `data` to `file` and opens it.
void open_handmade(const std::string& path, std::string_view header, std::span<const std::byte> data) {
  write_bytes(path, make_npy(header, data));
  TensorFile::open(path);
}

// --- numpy-written fixtures ------------------------------------------------------------

TEST(NpyReadTest, EveryNumpyFixtureReadsAsNumpyWroteIt) {
  const std::vector<std::string> names = io_test::fixture_names(".npy");
  ASSERT_GE(names.size(), 18u);
  for (const std::string& name : names) io_test::expect_matches_fixture(fixture(name), name);
}

TEST(NpyReadTest, TensorIsNamedAfterTheFileStem) {
  const auto file = TensorFile::open(fixture("f4_le.npy"));
  EXPECT_EQ(file->format(), "npy");
  ASSERT_EQ(file->tensors().size(), 1u);
  EXPECT_EQ(file->tensors()[0].name, "f4_le");
}

TEST(NpyReadTest, FortranOrderReadsExactlyLikeTheCOrderArray) {
  const auto fortran = TensorFile::open(fixture("f4_fortran234.npy"));
  const auto c_order = TensorFile::open(fixture("f4_c234.npy"));
  const TensorView& f = fortran->tensors()[0];
  const TensorView& c = c_order->tensors()[0];
  EXPECT_EQ(f.shape, (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(f.strides, (std::vector<std::int64_t>{1, 2, 6}));  // first axis fastest
  EXPECT_EQ(c.strides, (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_FALSE(f.is_c_contiguous());
  EXPECT_EQ(all_floats(f), all_floats(c));
  EXPECT_EQ(read_all_bytes(f), read_all_bytes(c));
  // The stored bytes really are in Fortran order: element (1, 0, 0) is the second stored.
  float second;
  std::memcpy(&second, f.data + 4, 4);
  EXPECT_EQ(second, all_floats(c)[12]);
}

TEST(NpyReadTest, ZeroDimensionalArrayHoldsOneElement) {
  const auto file = TensorFile::open(fixture("f4_0d.npy"));
  const TensorView& view = file->tensors()[0];
  EXPECT_TRUE(view.shape.empty());
  EXPECT_EQ(view.element_count(), 1);
  EXPECT_EQ(view.byte_size, 4u);
  EXPECT_EQ(all_floats(view), std::vector<float>{3.25f});
}

TEST(NpyReadTest, ZeroLengthAxisReadsAsNoElements) {
  const auto file = TensorFile::open(fixture("f4_empty.npy"));
  const TensorView& view = file->tensors()[0];
  EXPECT_EQ(view.shape, (std::vector<std::int64_t>{3, 0, 2}));
  EXPECT_EQ(view.element_count(), 0);
  EXPECT_EQ(view.byte_size, 0u);
  EXPECT_EQ(view.data, nullptr);
  EXPECT_TRUE(read_all_bytes(view).empty());
}

TEST(NpyReadTest, Version2And3HeadersReadLikeVersion1) {
  const auto v1 = TensorFile::open(fixture("f4_le.npy"));
  for (const char* name : {"f4_v2.npy", "f4_v3.npy"}) {
    const auto file = TensorFile::open(fixture(name));
    EXPECT_EQ(read_bytes(fixture(name))[6], std::byte{static_cast<unsigned char>(name[4] - '0')}) << name;
    EXPECT_EQ(all_floats(file->tensors()[0]), all_floats(v1->tensors()[0])) << name;
  }
}

TEST(NpyReadTest, BigEndianReadsLikeLittleEndian) {
  for (const char* code : {"f2", "f4", "f8"}) {
    const auto le = TensorFile::open(fixture(fmt::format("{}_le.npy", code)));
    const auto be = TensorFile::open(fixture(fmt::format("{}_be.npy", code)));
    EXPECT_TRUE(be->tensors()[0].big_endian) << code;
    EXPECT_EQ(read_all_bytes(be->tensors()[0]), read_all_bytes(le->tensors()[0])) << code;
  }
}

// numpy has no bfloat16: '<u2' is an unsigned 16-bit tensor unless the caller says it holds
// bfloat16 bits; '|V2' (ml_dtypes' bfloat16) has no meaning of its own and reads as raw16.
TEST(NpyReadTest, U2IsU16AndV2IsRawUnlessAskedForBf16) {
  const auto u16 = TensorFile::open(fixture("bf16_u2.npy"));
  EXPECT_EQ(u16->tensors()[0].dtype, DType::u16);
  EXPECT_EQ(load_unsigned(u16->tensors()[0], 0), 0xBFC0u);  // the bits of bfloat16 -1.5
  EXPECT_EQ(all_floats(u16->tensors()[0])[0], 49088.0f);
  const auto raw = TensorFile::open(fixture("bf16_v2.npy"));
  EXPECT_EQ(raw->tensors()[0].dtype, DType::raw16);
  EXPECT_TRUE(throws_input_error([&] { all_floats(raw->tensors()[0]); }, {"bf16_v2", "raw 2-byte", "--bf16"}));
  for (const char* name : {"bf16_u2.npy", "bf16_u2_be.npy", "bf16_v2.npy"}) {
    const auto bf16 = TensorFile::open(fixture(name), OpenOptions{.raw16_as_bf16 = true});
    EXPECT_EQ(bf16->tensors()[0].dtype, DType::bf16) << name;
    EXPECT_EQ(all_floats(bf16->tensors()[0])[0], -1.5f) << name;
  }
}

// Byte order marks as numpy writes them and as it also accepts them: '|' for one-byte
// types (any mark will do there), '<', '>' or '=' for wider ones.
TEST(NpyReadTest, IntegerAndBoolDescrs) {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const std::vector<std::byte> data = six_floats();  // 24 bytes
  const std::vector<std::pair<std::string_view, std::pair<DType, std::int64_t>>> cases = {
      {"'|b1'", {DType::boolean, 24}}, {"'<b1'", {DType::boolean, 24}}, {"'|u1'", {DType::u8, 24}},
      {"'|i1'", {DType::i8, 24}},      {"'>u2'", {DType::u16, 12}},     {"'<i2'", {DType::i16, 12}},
      {"'=u4'", {DType::u32, 6}},      {"'<i4'", {DType::i32, 6}},      {"'>u8'", {DType::u64, 3}},
      {"'<i8'", {DType::i64, 3}},
  };
  for (const auto& [descr, want] : cases) {
    write_bytes(path, make_npy(fmt::format("{{'descr': {}, 'fortran_order': False, 'shape': ({},)}}", descr,
                                           want.second),
                               data));
    const auto file = TensorFile::open(path);
    EXPECT_EQ(file->tensors()[0].dtype, want.first) << descr;
    EXPECT_EQ(file->tensors()[0].big_endian, descr[1] == '>') << descr;
  }
}

TEST(NpyReadTest, HeaderParsingAcceptsWhatPythonAccepts) {
  ScratchDir dir;
  const std::vector<std::byte> data = six_floats();
  const std::vector<std::string_view> headers = {
      kGoodHeader,
      R"({"descr": "<f4", "fortran_order": False, "shape": (2, 3)})",       // double quotes, no trailing comma
      "{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4'}",           // any key order, trailing comma
      "{\n\t'descr' : '=f4' ,\r\n 'fortran_order':False,'shape':( 2 , 3 ) , }",  // whitespace, native order
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L)}",         // Python 2 longs
      "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}",             // rank 1
      "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1, 3, 1)}",
  };
  for (std::string_view header : headers) {
    const std::string path = dir.file("x.npy");
    write_bytes(path, make_npy(header, data));
    const auto file = TensorFile::open(path);
    EXPECT_EQ(file->tensors()[0].element_count(), 6) << header;
    EXPECT_EQ(file->tensors()[0].byte_size, 24u) << header;
  }
  // '|V2' holds raw 2-byte values.
  const std::string path = dir.file("raw.npy");
  write_bytes(path, make_npy("{'descr': '|V2', 'fortran_order': False, 'shape': (12,)}", data));
  EXPECT_EQ(TensorFile::open(path)->tensors()[0].dtype, DType::raw16);
}

// --- writing -------------------------------------------------------------------------------

// Our encoding of every little-endian C-order fixture is byte for byte numpy 1.24's.
TEST(NpyWriteTest, EncodingIsByteIdenticalToNumpy) {
  int compared = 0;
  for (const std::string& name : io_test::fixture_names(".npy")) {
    const std::vector<std::byte> numpy_bytes = read_bytes(fixture(name));
    const io_test::ExpectedTensor want = io_test::expected_tensors(name).at(0);
    if (want.descr[0] == '>' || want.fortran_order || numpy_bytes[6] != std::byte{1}) continue;
    const DType dtype = want.bf16_bits && want.descr == "<u2" ? DType::bf16 : io_test::dtype_of_descr(want.descr);
    const TensorToWrite tensor{want.name, dtype, want.shape, want.bytes};
    EXPECT_EQ(encode_npy(tensor), numpy_bytes) << name;
    ++compared;
  }
  // f2 f4 f8, 0-d, empty, rank 1, rank 3, rank 16, bf16 as '<u2', raw16 as '|V2', b1 u1 i1 and
  // '<' u2 i2 u4 i4 u8 i8
  EXPECT_GE(compared, 19);
}

TEST(NpyWriteTest, DataStartsAtAMultipleOf64) {
  int checked = 0;
  for (std::size_t rank = 0; rank <= 9; ++rank) {
    for (std::int64_t first : {0, 1, 7, 123456789}) {
      if (rank == 0 && first != 1) continue;
      // A huge first axis (numpy pads for its digits) needs a zero-length axis beside it.
      std::vector<std::int64_t> shape(rank, first > 1000 ? 0 : 2);
      if (rank > 0) shape[0] = first;
      if (rank == 1 && first > 1000) continue;
      const std::int64_t count = std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
      const std::vector<std::byte> data(static_cast<std::size_t>(count) * 4);
      const std::vector<std::byte> header = encode_npy_header({"t", DType::f32, shape, data});
      EXPECT_EQ(header.size() % 64, 0u) << "rank " << rank << " first " << first;
      EXPECT_EQ(header.back(), std::byte{'\n'});
      EXPECT_EQ(header[6], std::byte{1});
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

TEST(NpyWriteTest, HeaderBeyond64KiBUsesVersion2) {
  ScratchDir dir;
  const std::vector<std::int64_t> shape(25000, 1);  // "1, " x 25000 > 65535 header bytes
  const std::vector<std::byte> data(2, std::byte{0x3c});
  const TensorToWrite tensor{"wide", DType::f16, shape, data};
  const std::vector<std::byte> header = encode_npy_header(tensor);
  EXPECT_EQ(header[6], std::byte{2});
  EXPECT_GT(header.size(), 65535u);
  EXPECT_EQ(header.size() % 64, 0u);
  write_npy(dir.file("wide.npy"), tensor);
  const auto file = TensorFile::open(dir.file("wide.npy"));
  EXPECT_EQ(file->tensors()[0].shape, shape);
  EXPECT_EQ(read_all_bytes(file->tensors()[0]), data);
}

// Random bit patterns (NaN payloads, subnormals, infinities) of every dtype survive
// write -> read bit for bit, in every shape class.
TEST(NpyWriteTest, EveryDtypeRoundTripsBitExactly) {
  ScratchDir dir;
  std::mt19937_64 random(7);
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {5}, {3, 0, 2}, {2, 3, 4}, {1, 1, 7}};
  for (const DTypeInfo& info : all_dtypes()) {
    const DType dtype = info.dtype;
    for (const auto& shape : shapes) {
      const std::int64_t count = std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
      std::vector<std::byte> data(static_cast<std::size_t>(count) * dtype_size(dtype));
      for (std::byte& b : data) b = static_cast<std::byte>(random());
      const std::string path = dir.file("t.npy");
      write_npy(path, {"t", dtype, shape, data});
      const auto file = TensorFile::open(path, OpenOptions{.raw16_as_bf16 = dtype == DType::bf16});
      const TensorView& view = file->tensors()[0];
      // Read with raw16_as_bf16 when bf16 was written; numpy's u1 stands in for fp8.
      EXPECT_EQ(view.dtype, dtype == DType::bf16 ? DType::bf16 : io_test::dtype_after_npy(dtype)) << dtype_name(dtype);
      EXPECT_EQ(view.shape, shape);
      EXPECT_EQ(read_all_bytes(view), data) << dtype_name(dtype) << " rank " << shape.size();
    }
  }
}

TEST(NpyWriteTest, RefusesBytesThatDoNotMatchTheShape) {
  const std::vector<std::byte> data(20);
  EXPECT_TRUE(throws_input_error([&] { encode_npy({"keys", DType::f32, {2, 3}, data}); }, {"keys", "20 bytes", "24"}));
  EXPECT_TRUE(throws_input_error([&] { encode_npy({"keys", DType::f32, {-2, 3}, data}); }, {"keys", "negative"}));
}

// --- broken input: every error is an InputError naming the file ------------------------

TEST(NpyErrorTest, TruncatedData) {
  ScratchDir dir;
  std::vector<std::byte> bytes = read_bytes(fixture("f4_le.npy"));
  bytes.pop_back();
  const std::string path = dir.file("cut.npy");
  write_bytes(path, bytes);
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(path); }, {path, "'cut'", "24 data bytes", "23", "truncated"}));
}

TEST(NpyErrorTest, BytesAfterTheData) {
  ScratchDir dir;
  std::vector<std::byte> bytes = read_bytes(fixture("f4_le.npy"));
  bytes.push_back(std::byte{0});
  const std::string path = dir.file("long.npy");
  write_bytes(path, bytes);
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(path); }, {path, "24 data bytes", "25 follow"}));
}

TEST(NpyErrorTest, HeaderLengthPastTheEndOfTheFile) {
  ScratchDir dir;
  std::vector<std::byte> bytes = read_bytes(fixture("f4_le.npy"));
  io_test::put_le(bytes, 8, 2, 60000);
  const std::string path = dir.file("long_header.npy");
  write_bytes(path, bytes);
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(path); }, {path, "header length 60000", "past the end"}));
}

TEST(NpyErrorTest, WrongMagicIsNotRecognized) {
  ScratchDir dir;
  std::vector<std::byte> bytes = read_bytes(fixture("f4_le.npy"));
  bytes[5] = std::byte{'Z'};  // "\x93NUMPZ"
  const std::string path = dir.file("magic.npy");
  write_bytes(path, bytes);
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(path); }, {path, "not a .npy, .npz or .safetensors file"}));
  // Called directly (an .npz member, say), the .npy parser names what it expected.
  EXPECT_TRUE(throws_input_error([&] { parse_npy(bytes, "m", "'a.npz' member 'm.npy'", {}); },
                                 {"'a.npz' member 'm.npy'", "\\x93NUMPY"}));
}

TEST(NpyErrorTest, UnknownFormatVersion) {
  ScratchDir dir;
  std::vector<std::byte> bytes = read_bytes(fixture("f4_le.npy"));
  bytes[6] = std::byte{4};
  const std::string path = dir.file("v4.npy");
  write_bytes(path, bytes);
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(path); }, {path, "version 4.0", "1.0, 2.0 or 3.0"}));
}

TEST(NpyErrorTest, HeaderIsNotADict) {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const std::vector<std::byte> data = six_floats();
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, "['<f4', False, (2, 3)]", data); }, {path, "not a dict"}));
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, "{descr: '<f4'}", data); },
                                 {path, "not a valid Python literal", "header byte 1"}));
  EXPECT_TRUE(
      throws_input_error([&] { open_handmade(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", data); },
                         {path, "expected ',' or '}'"}));
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, std::string(kGoodHeader) + " junk", data); },
                                 {path, "the end of the header"}));
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, "{'descr: '<f4'}", data); }, {path, "not a valid"}));
  // Deep nesting is an error, not a stack overflow.
  const std::string deep = "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(5000, '(') + "}";
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, deep, data); }, {path, "nesting"}));
}

TEST(NpyErrorTest, MissingExtraOrRepeatedKeys) {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const std::vector<std::byte> data = six_floats();
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, "{'descr': '<f4', 'shape': (2, 3)}", data); },
                                 {path, "keys are ['descr', 'shape']", "expected exactly"}));
  EXPECT_TRUE(throws_input_error(
      [&] { open_handmade(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data); },
      {path, "'x'", "expected exactly"}));
  EXPECT_TRUE(throws_input_error(
      [&] { open_handmade(path, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", data); },
      {path, "'descr' appears twice"}));
  // Escaped quotes are understood (and other escapes refused by name).
  EXPECT_TRUE(throws_input_error(
      [&] { open_handmade(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'it\\'s': 1}", data); },
      {path, "['descr', 'fortran_order', 'it's', 'shape']"}));
  EXPECT_TRUE(throws_input_error(
      [&] { open_handmade(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'a\\n': 1}", data); },
      {path, "expected one of the escapes"}));
}

TEST(NpyErrorTest, BadFortranOrderValue) {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const std::vector<std::byte> data = six_floats();
  for (std::string_view value : {"'False'", "0", "None", "1.0", "(False,)"}) {
    const std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': {}, 'shape': (2, 3)}}", value);
    EXPECT_TRUE(throws_input_error([&] { open_handmade(path, header, data); },
                                   {path, fmt::format("'fortran_order' is {}, expected True or False", value)}))
        << value;
  }
  // Not Python at all: the literal parser says which word it does not know.
  const std::string lowercase = "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}";
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, lowercase, data); },
                                 {path, "'false' at header byte 34 is not True, False or None"}));
}

TEST(NpyErrorTest, ShapeMustBeATupleOfNonNegativeIntegers) {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const std::vector<std::byte> data = six_floats();
  for (std::string_view shape : {"(-1, 3)", "(2, -3)", "[2, 3]", "(6)", "(2, 3.0)", "(True, 6)", "('2', 3)"}) {
    const std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}}}", shape);
    EXPECT_TRUE(throws_input_error([&] { open_handmade(path, header, data); }, {path, "'shape'"})) << shape;
  }
  const std::string huge = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}";
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, huge, data); }, {path, "does not fit in 64 bits"}));
}

TEST(NpyErrorTest, UnsupportedDtypes) {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const std::vector<std::byte> data = six_floats();
  const std::string header = "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3)}";
  EXPECT_TRUE(throws_input_error([&] { open_handmade(path, header, data); },
                                 {fmt::format("unsupported dtype '<c8' for tensor 'x' in '{}' (supported: ", path)}));
  // '|' says "no byte order", which a number wider than a byte has; V4, M8 (datetime), U4 (text).
  for (std::string_view descr : {"'<c8'", "'|O'", "'|u4'", "'|i2'", "'|f4'", "'<f16'", "'<V4'", "'<M8'", "'<U4'",
                                 "'float32'", "[('a', '<f4')]", "None"}) {
    const std::string h = fmt::format("{{'descr': {}, 'fortran_order': False, 'shape': (2, 3)}}", descr);
    EXPECT_TRUE(throws_input_error([&] { open_handmade(path, h, data); }, {path, "unsupported dtype", descr}))
        << descr;
  }
}

TEST(NpyErrorTest, HugeDeclaredShapeInASmallFileIsNotAllocated) {
  ScratchDir dir;
  const std::string path = dir.file("claims2g.npy");
  // 2^29 float32 = 2 GiB declared; the file is under 1 kB.
  write_bytes(path, make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (536870912,)}",
                             std::vector<std::byte>(800)));
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(path); }, {path, "2147483648 data bytes", "800 follow"}));
  // Products that overflow 64 bits, even beside a zero-length axis.
  for (std::string_view shape : {"(4294967296, 4294967296)", "(0, 4611686018427387904, 4)", "(2305843009213693952,)"}) {
    const std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}}}", shape);
    EXPECT_TRUE(throws_input_error([&] { open_handmade(path, header, {}); }, {path, "64-bit"})) << shape;
  }
}

TEST(NpyErrorTest, EmptyFilesAndEmptyTensors) {
  ScratchDir dir;
  const std::string empty = dir.file("empty.npy");
  write_bytes(empty, {});
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(empty); }, {empty, "is empty"}));
  const std::string preamble_only = dir.file("preamble.npy");
  write_bytes(preamble_only, as_bytes("\x93NUMPY\x01"));
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(preamble_only); }, {preamble_only, "truncated"}));
  // A zero-length axis is fine; a non-empty shape without data is truncated.
  const std::string no_rows = dir.file("no_rows.npy");
  write_bytes(no_rows, make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (0, 128)}", {}));
  EXPECT_EQ(TensorFile::open(no_rows)->tensors()[0].element_count(), 0);
  const std::string no_data = dir.file("no_data.npy");
  write_bytes(no_data, make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 128)}", {}));
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(no_data); }, {no_data, "truncated"}));
}

TEST(NpyErrorTest, MissingDirectoryOrUnreadableFile) {
  ScratchDir dir;
  const std::string missing = dir.file("missing.npy");
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(missing); }, {missing, "No such file"}));
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(dir.file("")); }, {"is a directory"}));
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not stop reads";
  const std::string locked = dir.file("locked.npy");
  write_bytes(locked, read_bytes(fixture("f4_le.npy")));
  ::chmod(locked.c_str(), 0);
  EXPECT_TRUE(throws_input_error([&] { TensorFile::open(locked); }, {locked, "Permission denied"}));
}

}  // namespace
}  // namespace tqlab
