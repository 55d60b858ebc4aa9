// safetensors reader and writer: the real KV dump (values pinned from an
// independent numpy parse), bit-exact round trips of every dtype and rank,
// and one test per kind of broken file, each an InputError naming the file
// and (where there is one) the tensor.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <bit>
#include <set>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "io/safetensors.h"
#include "io/tensor_file.h"
#include "io_test_util.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::input_error_message;

namespace fs = std::filesystem;

const std::string kStoriesPath = std::string(TQLAB_SHARED_DATA_DIR) + "/stories260k_qkv.safetensors";

std::string little_endian_u64(std::uint64_t value) {
  std::string bytes(8, '\0');
  for (char& byte : bytes) {
    byte = static_cast<char>(value & 0xFF);
    value >>= 8;
  }
  return bytes;
}

/// A file: 8-byte length of `header`, `header`, then `buffer_bytes` bytes of 0xAB.
std::string safetensors_bytes(std::string_view header, std::size_t buffer_bytes) {
  return little_endian_u64(header.size()) + std::string(header) + std::string(buffer_bytes, '\xAB');
}

/// One header entry: "name": {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}.
std::string entry(std::string_view name, std::string_view dtype, std::string_view shape, std::uint64_t begin,
                  std::uint64_t end) {
  return fmt::format(R"("{}": {{"dtype": "{}", "shape": {}, "data_offsets": [{}, {}]}})", name, dtype, shape, begin,
                     end);
}

/// A JSON object of the given entries: {entry, entry, ...}.
std::string object_of(const std::vector<std::string>& entries) {
  std::string text = "{";
  for (const std::string& one : entries) {
    if (text.size() > 1) text += ", ";
    text += one;
  }
  return text + "}";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<TensorFile> open_directly(const std::string& path) {
  return open_safetensors(std::make_shared<const MappedFile>(path));
}


bool mentions(const std::string& message, std::string_view part) {
  return message.find(part) != std::string::npos;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("tqlab_safetensors_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path_in_dir(std::string_view name) const { return (dir_ / name).string(); }

  std::string write_file(std::string_view bytes, std::string_view name = "bad.safetensors") const {
    const std::string path = path_in_dir(name);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  /// Writes `bytes`, opens them as safetensors and returns the InputError's
  /// message, after checking that it names the file.
  std::string open_error(std::string_view bytes) const {
    const std::string path = write_file(bytes);
    const std::string message = input_error_message([&] { open_directly(path); });
    EXPECT_TRUE(mentions(message, "'" + path + "'")) << "message does not name the file: " << message;
    return message;
  }

  std::string header_error(std::string_view header, std::size_t buffer_bytes) const {
    return open_error(safetensors_bytes(header, buffer_bytes));
  }

  fs::path dir_;
};

// --- The real KV dump --------------------------------------------------------

class SafetensorsStoriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kStoriesPath)) GTEST_SKIP() << "shared KV dump not found at " << kStoriesPath;
    file_ = TensorFile::open(kStoriesPath);
  }
  std::vector<float> floats(const std::string& name) const {
    const TensorView& tensor = file_->get(name);
    std::vector<float> values(static_cast<std::size_t>(tensor.element_count()));
    read_all_floats(tensor, values.data());
    return values;
  }
  std::unique_ptr<TensorFile> file_;
};

TEST_F(SafetensorsStoriesTest, ListsFifteenTensorsInOffsetOrderWithShapesAndMetadata) {
  EXPECT_EQ(file_->format(), "safetensors");
  ASSERT_EQ(file_->tensors().size(), 15u);
  const std::vector<std::int64_t> q_shape{4, 8, 256, 8}, kv_shape{4, 4, 256, 8};
  for (int layer = 0; layer < 5; ++layer) {
    // Offset order in this file is k, q, v per layer (as the dump tool wrote them).
    const char roles[] = {'k', 'q', 'v'};
    for (int role = 0; role < 3; ++role) {
      const TensorView& tensor = file_->tensors()[static_cast<std::size_t>(3 * layer + role)];
      EXPECT_EQ(tensor.name, "layers." + std::to_string(layer) + "." + roles[role]);
      EXPECT_EQ(tensor.dtype, DType::f16);
      EXPECT_FALSE(tensor.big_endian);
      EXPECT_EQ(tensor.shape, roles[role] == 'q' ? q_shape : kv_shape) << tensor.name;
      EXPECT_TRUE(tensor.is_c_contiguous()) << tensor.name;
      EXPECT_EQ(tensor.byte_size, static_cast<std::uint64_t>(tensor.element_count()) * 2) << tensor.name;
    }
  }
  // Header length 1576 (from the numpy parse): data starts at 8 + 1576.
  EXPECT_EQ(file_->tensors().front().file_offset, 1584u);
  EXPECT_EQ(file_->tensors().back().file_offset + file_->tensors().back().byte_size, fs::file_size(kStoriesPath));
  EXPECT_EQ(file_->metadata().size(), 11u);
  EXPECT_EQ(file_->metadata().at("layout"), "seq head token dim");
  EXPECT_EQ(file_->metadata().at("head_dim"), "8");
  EXPECT_EQ(file_->metadata().at("dtype"), "float16");
}

TEST_F(SafetensorsStoriesTest, ValuesMatchAnIndependentNumpyParse) {
  // Pinned from /usr/bin/python3: struct + json + numpy.frombuffer('<f2') on the raw file.
  const std::vector<float> q0 = floats("layers.0.q");  // [seq 0, head 0, token 0, :]
  const float q0_first[8] = {-0.75439453125f, 0.7001953125f, 2.244140625f, -2.00390625f,
                             2.5546875f,      -0.73828125f,  -2.267578125f, 3.59765625f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q0[static_cast<std::size_t>(i)], q0_first[i]) << i;

  const std::vector<float> k2 = floats("layers.2.k");  // [seq 3, head 3, token 255, :], the last row
  const float k2_last[8] = {-2.681640625f, -3.283203125f, 1.111328125f, 0.225830078125f,
                            3.97265625f,   -1.3828125f,   0.7587890625f, 1.6044921875f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(k2[k2.size() - 8 + static_cast<std::size_t>(i)], k2_last[i]) << i;

  // [seq 1, head 2, token 100, dim 3] through the strided reader.
  const TensorView& v4 = file_->get("layers.4.v");
  const std::int64_t index = 1 * v4.strides[0] + 2 * v4.strides[1] + 100 * v4.strides[2] + 3 * v4.strides[3];
  float v4_value = 0.0f;
  read_floats(v4, index, 1, 1, &v4_value);
  EXPECT_EQ(v4_value, 0.5029296875f);

  // Whole-tensor sums (float64 in numpy; summation order differs, hence the tolerance).
  const std::map<std::string, std::pair<double, double>> sum_and_max_abs = {
      {"layers.0.k", {-579.1774408817291, 10.5546875}},
      {"layers.4.v", {274.2513794898987, 4.9296875}},
      {"layers.3.q", {1358.2135154008865, 11.5625}}};
  for (const auto& [name, expected] : sum_and_max_abs) {
    double sum = 0.0, max_abs = 0.0;
    for (float value : floats(name)) {
      sum += value;
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(value)));
    }
    EXPECT_NEAR(sum, expected.first, 1e-9) << name;
    EXPECT_EQ(max_abs, expected.second) << name;
  }
}

TEST_F(SafetensorsStoriesTest, ViewsPointAtTheirFileOffsetAndSurviveRelease) {
  const std::string raw = file_bytes(kStoriesPath);
  for (const TensorView& tensor : file_->tensors()) {
    ASSERT_LE(tensor.file_offset + tensor.byte_size, raw.size()) << tensor.name;
    EXPECT_EQ(std::memcmp(tensor.data, raw.data() + tensor.file_offset, tensor.byte_size), 0) << tensor.name;
    file_->release(tensor);
    // Released pages are read again from the file on the next touch.
    EXPECT_EQ(std::memcmp(tensor.data, raw.data() + tensor.file_offset, tensor.byte_size), 0) << tensor.name;
  }
}

// --- Round trips -------------------------------------------------------------

TEST_F(SafetensorsTest, RoundTripsEveryDtypeRankAndEmptyAxisBitExactly) {
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {3, 0}, {5}, {2, 3, 4}, {0}, {2, 1, 3, 2}};
  std::mt19937_64 random_bits(20240601);
  std::vector<std::vector<std::byte>> storage;
  storage.reserve(all_dtypes().size() * shapes.size());  // the spans below point into it
  std::vector<TensorToWrite> tensors;
  for (const DTypeInfo& info : all_dtypes()) {
    const DType dtype = info.dtype;
    if (dtype == DType::raw16) continue;  // written as BF16: Raw16IsWrittenAsBf16
    for (const auto& shape : shapes) {
      std::int64_t count = 1;
      for (std::int64_t extent : shape) count *= extent;
      // Random bit patterns: NaN payloads, subnormals and -0 must survive too.
      std::vector<std::byte> bytes(static_cast<std::size_t>(count) * dtype_size(dtype));
      for (std::byte& byte : bytes) byte = static_cast<std::byte>(random_bits() & 0xFF);
      storage.push_back(std::move(bytes));
      // Names that sort opposite to the written order: the reader must not sort by name.
      const std::string name = fmt::format("t{}.{}", 99 - tensors.size(), dtype_name(dtype));
      tensors.push_back({name, dtype, shape, storage.back()});
    }
  }
  const std::map<std::string, std::string> metadata = {
      {"model", "stories260K"}, {"empty", ""}, {"unicode", "r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93"}};
  const std::string path = path_in_dir("round.safetensors");
  write_safetensors(path, tensors, metadata);

  const auto file = TensorFile::open(path);
  ASSERT_EQ(file->tensors().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorView& read = file->tensors()[i];
    EXPECT_EQ(read.name, tensors[i].name);
    EXPECT_EQ(read.dtype, tensors[i].dtype) << read.name;
    EXPECT_EQ(read.shape, tensors[i].shape) << read.name;
    EXPECT_TRUE(read.is_c_contiguous()) << read.name;
    const std::vector<std::byte> bytes = read_all_bytes(read);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), tensors[i].bytes.begin(), tensors[i].bytes.end()))
        << read.name;
  }
  EXPECT_EQ(file->metadata(), metadata);

  // Header layout: metadata first, entries in the caller's order, buffer 8-aligned.
  const std::string raw = file_bytes(path);
  std::uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<unsigned char>(raw[i]);
  EXPECT_EQ((8 + header_bytes) % 8, 0u);
  const std::string header = raw.substr(8, header_bytes);
  EXPECT_EQ(header.rfind("{\"__metadata__\":", 0), 0u) << header.substr(0, 40);
  std::size_t previous = 0;
  for (const TensorToWrite& tensor : tensors) {
    const std::size_t at = header.find("\"" + tensor.name + "\"");
    ASSERT_NE(at, std::string::npos) << tensor.name;
    EXPECT_GT(at, previous) << tensor.name << " is out of order in the header";
    previous = at;
  }
}

TEST_F(SafetensorsTest, Raw16IsWrittenAsBf16) {
  const std::vector<std::byte> bytes = {std::byte{0x80}, std::byte{0x3F}, std::byte{0x00}, std::byte{0xC0}};
  const TensorToWrite tensor{"raw", DType::raw16, {2}, bytes};
  const std::string path = path_in_dir("raw.safetensors");
  write_safetensors(path, {&tensor, 1}, {});
  const auto file = TensorFile::open(path);
  const TensorView& read = file->get("raw");
  EXPECT_EQ(read.dtype, DType::bf16);
  float values[2];
  read_all_floats(read, values);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
  EXPECT_NE(file_bytes(path).find("\"BF16\""), std::string::npos);
}

TEST_F(SafetensorsTest, NoTensorsAndNoMetadataMakeAnEmptyHeader) {
  const std::string path = path_in_dir("empty.safetensors");
  write_safetensors(path, {}, {});
  EXPECT_EQ(file_bytes(path), little_endian_u64(8) + "{}      ");
  const auto file = TensorFile::open(path);
  EXPECT_TRUE(file->tensors().empty());
  EXPECT_TRUE(file->metadata().empty());
}

TEST_F(SafetensorsTest, ReadsUnalignedUnpaddedFilesInDataOffsetOrder) {
  // JSON lists "b" after "a" and the parser sorts keys; the data has b first.
  // Header length 255 leaves the buffer (and b's f32) at an odd file offset.
  std::string header =
      object_of({entry("b", "F32", "[1]", 0, 4), entry("a", "F16", "[2]", 4, 8), entry("z", "F64", "[0]", 4, 4)});
  ASSERT_LT(header.size(), 255u);
  header.append(255 - header.size(), ' ');
  const float b_value = 1.5f;
  const std::uint16_t a_values[2] = {0x3C00, 0xC000};  // 1.0, -2.0
  std::string buffer(8, '\0');
  std::memcpy(buffer.data(), &b_value, 4);
  std::memcpy(buffer.data() + 4, a_values, 4);
  const std::string path = write_file(little_endian_u64(header.size()) + header + buffer, "odd.safetensors");

  const auto file = TensorFile::open(path);
  ASSERT_EQ(file->tensors().size(), 3u);
  EXPECT_EQ(file->tensors()[0].name, "b");
  EXPECT_EQ(file->tensors()[1].name, "z");  // zero bytes at offset 4 come before a's [4, 8)
  EXPECT_EQ(file->tensors()[2].name, "a");
  EXPECT_EQ(file->tensors()[0].file_offset, 8u + 255u);
  EXPECT_EQ(file->tensors()[2].file_offset, 8u + 255u + 4u);
  EXPECT_EQ(file->tensors()[1].data, nullptr);
  float values[2];
  read_all_floats(file->get("b"), values);
  EXPECT_EQ(values[0], 1.5f);
  read_all_floats(file->get("a"), values);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
}

// --- Broken files ------------------------------------------------------------

TEST_F(SafetensorsTest, TruncatedFileNamesTheTensor) {
  const std::vector<std::byte> sixteen(16);
  const TensorToWrite tensor{"layers.0.k", DType::f32, {4}, sixteen};
  const std::string path = path_in_dir("whole.safetensors");
  write_safetensors(path, {&tensor, 1}, {});
  const std::string whole = file_bytes(path);
  const std::string message = open_error(std::string_view(whole).substr(0, whole.size() - 6));
  EXPECT_TRUE(mentions(message, "'layers.0.k'")) << message;
  EXPECT_TRUE(mentions(message, "truncated")) << message;
}

TEST_F(SafetensorsTest, HeaderLengthPastEndOfFile) {
  const std::string message = open_error(little_endian_u64(1000) + "{}" + std::string(20, ' '));
  EXPECT_TRUE(mentions(message, "header length 1000 runs past the end")) << message;
}

TEST_F(SafetensorsTest, AbsurdHeaderLength) {
  const std::string message = open_error(little_endian_u64(std::uint64_t{1} << 60) + "{}" + std::string(20, ' '));
  EXPECT_TRUE(mentions(message, "exceeds the 100000000-byte limit")) << message;
}

TEST_F(SafetensorsTest, HeaderLengthTooSmallForAnObject) {
  const std::string message = open_error(little_endian_u64(1) + "{}" + std::string(20, ' '));
  EXPECT_TRUE(mentions(message, "too small")) << message;
}

TEST_F(SafetensorsTest, MalformedJsonHeader) {
  const std::string message = header_error("{\"x\": {\"dtype\": \"F16\",", 0);
  EXPECT_TRUE(mentions(message, "not valid JSON")) << message;
}

// Found by fuzzing (tests/fuzz/safetensors_fuzz.cpp): a number beyond double made nlohmann
// throw out_of_range, not parse_error, which escaped as an internal error (exit 3).
TEST_F(SafetensorsTest, NumberBeyondDoubleIsAnInputError) {
  for (const std::string number : {"1e4001", "-1e400"}) {
    const std::string message = header_error("{\"x\": " + number + "}", 0);
    EXPECT_TRUE(mentions(message, "not valid JSON")) << message;
    EXPECT_TRUE(mentions(message, "number overflow")) << message;
  }
}

// The format requires UTF-8 (the reference implementation refuses anything else): the
// message says where the stray byte is and shows what precedes it escaped, never raw.
TEST_F(SafetensorsTest, HeaderThatIsNotUtf8) {
  const std::string header = object_of({entry("caf\xE9", "F16", "[0]", 0, 0)});
  const std::string message = header_error(header, 0);
  EXPECT_TRUE(mentions(message, "not UTF-8, as the format requires: byte 0xE9 at header byte 5, after \"{\"caf\""))
      << message;
  // Lone surrogates and overlong forms are not UTF-8 either; neither is a value in the metadata.
  for (std::string_view bad : {"\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80"}) {
    const std::string metadata = fmt::format(R"({{"__metadata__": {{"note": "a{}b"}}}})", bad);
    const std::string error = header_error(metadata, 0);
    EXPECT_TRUE(mentions(error, "not UTF-8")) << error;
    EXPECT_TRUE(mentions(error, "{\"note\": \"a\"")) << error;
    EXPECT_EQ(error.find('\x80'), std::string::npos) << "raw byte in the message";
  }
}

// A JSON syntax error right after a huge name: nlohmann echoes the token it read; the
// message stays one short line.
TEST_F(SafetensorsTest, JsonErrorAfterAHugeNameStaysShort) {
  const std::string message = header_error("{\"" + std::string(100000, 'n') + "\n", 0);
  EXPECT_TRUE(mentions(message, "not valid JSON")) << message.substr(0, 300);
  EXPECT_LT(message.size(), 600u);
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_TRUE(mentions(message, "bytes cut]")) << message;
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  const std::map<std::string, std::string> headers = {{"[1, 2]", "array"}, {"\"text\"", "string"}, {"42  ", "number"}};
  for (const auto& [header, type] : headers) {
    const std::string message = header_error(header, 0);
    EXPECT_TRUE(
        mentions(message, "the safetensors header is a JSON " + type + ", expected an object of tensor entries"))
        << message;
  }
}

TEST_F(SafetensorsTest, EntryMissingAKey) {
  const std::map<std::string, std::string> without = {
      {"dtype", R"({"k": {"shape": [2], "data_offsets": [0, 4]}})"},
      {"shape", R"({"k": {"dtype": "F16", "data_offsets": [0, 4]}})"},
      {"data_offsets", R"({"k": {"dtype": "F16", "shape": [2]}})"}};
  for (const auto& [key, header] : without) {
    const std::string message = header_error(header, 4);
    EXPECT_TRUE(mentions(message, "tensor 'k' has no \"" + key + "\"")) << message;
  }
}

TEST_F(SafetensorsTest, EntryWithAnUnexpectedKey) {
  const std::string message =
      header_error(R"({"k": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4], "offsets": [0, 4]}})", 4);
  EXPECT_TRUE(mentions(message, "tensor 'k' has an unexpected key \"offsets\"")) << message;
}

TEST_F(SafetensorsTest, EntryFieldsOfTheWrongType) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"k": 5})", "expected an object"},
      {R"({"k": {"dtype": 16, "shape": [2], "data_offsets": [0, 4]}})", "dtype is 16"},
      {R"({"k": {"dtype": "F16", "shape": "2", "data_offsets": [0, 4]}})", "shape is \"2\""},
      {R"({"k": {"dtype": "F16", "shape": [-2], "data_offsets": [0, 4]}})", "holds -2"},
      {R"({"k": {"dtype": "F16", "shape": [2.0], "data_offsets": [0, 4]}})", "holds 2.0"},
      {R"({"k": {"dtype": "F16", "shape": [9223372036854775808], "data_offsets": [0, 4]}})",
       "holds 9223372036854775808"},
      {R"({"k": {"dtype": "F16", "shape": [2], "data_offsets": [4]}})", "data_offsets is [4]"},
      {R"({"k": {"dtype": "F16", "shape": [2], "data_offsets": [0, "4"]}})", "data_offsets is [0,\"4\"]"},
      {R"({"k": {"dtype": "F16", "shape": [2], "data_offsets": [-4, 0]}})", "data_offsets is [-4,0]"},
      {R"({"k": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4, 8]}})", "data_offsets is [0,4,8]"}};
  for (const auto& [header, expected] : cases) {
    const std::string message = header_error(header, 4);
    EXPECT_TRUE(mentions(message, "tensor 'k'")) << message;
    EXPECT_TRUE(mentions(message, expected)) << message;
  }
}

TEST_F(SafetensorsTest, OverlappingOffsetsNameBothTensors) {
  const std::string message =
      header_error(object_of({entry("first", "F32", "[2]", 0, 8), entry("second", "F32", "[2]", 4, 12)}), 12);
  EXPECT_TRUE(mentions(message, "'first'")) << message;
  EXPECT_TRUE(mentions(message, "'second'")) << message;
  EXPECT_TRUE(mentions(message, "overlap")) << message;
}

TEST_F(SafetensorsTest, EmptyTensorInsideAnotherOverlaps) {
  const std::string message =
      header_error(object_of({entry("outer", "F32", "[2]", 0, 8), entry("inner", "F32", "[0]", 4, 4)}), 8);
  EXPECT_TRUE(mentions(message, "'inner'")) << message;
  EXPECT_TRUE(mentions(message, "overlap")) << message;
}

TEST_F(SafetensorsTest, OffsetsOutOfRange) {
  const std::string message = header_error(object_of({entry("k", "F32", "[2]", 100, 108)}), 8);
  EXPECT_TRUE(mentions(message, "tensor 'k': data_offsets [100, 108] run past the end of the 8-byte data buffer"))
      << message;
}

TEST_F(SafetensorsTest, OffsetsBeginAfterEnd) {
  const std::string message = header_error(object_of({entry("k", "F32", "[2]", 8, 0)}), 8);
  EXPECT_TRUE(mentions(message, "tensor 'k': data_offsets [8, 0] begin after they end")) << message;
}

TEST_F(SafetensorsTest, ShapeAndByteCountDisagree) {
  const std::string message = header_error(object_of({entry("k", "F32", "[3]", 0, 8)}), 8);
  EXPECT_TRUE(mentions(message, "tensor 'k': shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] span 8"))
      << message;
}

TEST_F(SafetensorsTest, UnsupportedDtypes) {
  // Newer or rarer codes (complex, fp4/fp6, E8M0 scales), lower case, and a name of ours.
  for (std::string_view dtype : {"C64", "F4", "F6_E2M3", "F8_E8M0", "f16", "I128", "raw16"}) {
    const std::string path = write_file(safetensors_bytes(object_of({entry("k", dtype, "[4]", 0, 4)}), 4));
    const std::string message = input_error_message([&] { open_directly(path); });
    EXPECT_EQ(message, "'" + path + "': tensor 'k' has unsupported dtype '" + std::string(dtype) +
                           "' (supported: BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F8_E4M3, F8_E5M2, F16, BF16, "
                           "F32, F64)");
  }
}

// tests/data/io/all_dtypes.safetensors (tools/make_io_fixtures.py) holds one tensor per
// safetensors dtype at its extremes; expected.json has their bytes, exact integers, and
// float values computed by numpy (fp8 by the OCP formula, not by our decoder).
TEST_F(SafetensorsTest, ReadsEveryDtypeOfTheFixture) {
  const std::string path = io_test::fixture("all_dtypes.safetensors");
  const auto file = TensorFile::open(path);
  const std::vector<io_test::ExpectedTensor> expected = io_test::expected_tensors("all_dtypes.safetensors");
  ASSERT_EQ(file->tensors().size(), expected.size());
  std::set<std::string> codes;
  for (const io_test::ExpectedTensor& want : expected) {
    SCOPED_TRACE(want.name);
    const TensorView& view = file->get(want.name);
    codes.insert(want.dtype_code);
    EXPECT_EQ(dtype_info(view.dtype).safetensors, want.dtype_code);
    EXPECT_EQ(view.shape, want.shape);
    EXPECT_EQ(read_all_bytes(view), want.bytes);
    if (dtype_is_integer(view.dtype)) {
      EXPECT_EQ(io_test::integer_texts(view), want.integers);
    }
    std::vector<float> floats(static_cast<std::size_t>(view.element_count()));
    read_all_floats(view, floats.data());
    ASSERT_EQ(floats.size(), want.values.size());
    for (std::size_t i = 0; i < floats.size(); ++i) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(floats[i]),
                std::bit_cast<std::uint32_t>(static_cast<float>(want.values[i])))
          << "element " << i;
    }
  }
  EXPECT_EQ(codes.size(), 15u);  // every code, each at least once
  EXPECT_EQ(file->metadata().at("source"), "tools/make_io_fixtures.py");
}

// What the fixture holds, written back by write_tensor_file: safetensors keeps every dtype
// and byte; npz keeps every byte, numpy's types standing in for bfloat16 and fp8.
TEST_F(SafetensorsTest, EveryDtypeOfTheFixtureIsWrittenBack) {
  const auto file = TensorFile::open(io_test::fixture("all_dtypes.safetensors"));
  std::vector<std::vector<std::byte>> bytes;
  std::vector<TensorToWrite> tensors;
  bytes.reserve(file->tensors().size());
  for (const TensorView& view : file->tensors()) {
    bytes.push_back(read_all_bytes(view));
    tensors.push_back({view.name, view.dtype, view.shape, bytes.back()});
  }
  for (const char* name : {"back.safetensors", "back.npz"}) {
    const std::string path = path_in_dir(name);
    write_tensor_file(path, tensors, file->metadata());
    const auto back = TensorFile::open(path);
    ASSERT_EQ(back->tensors().size(), tensors.size()) << name;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const TensorView& view = back->tensors()[i];
      EXPECT_EQ(view.name, tensors[i].name) << name;
      const DType expected = std::string_view(name).ends_with(".npz") ? io_test::dtype_after_npy(tensors[i].dtype)
                                                                       : tensors[i].dtype;
      EXPECT_EQ(view.dtype, expected) << name << " " << view.name;
      EXPECT_EQ(view.shape, tensors[i].shape) << name << " " << view.name;
      EXPECT_EQ(read_all_bytes(view), bytes[i]) << name << " " << view.name;
    }
  }
}

TEST_F(SafetensorsTest, TwoGigabyteShapeInAKilobyteFile) {
  // 2^30 fp16 values = 2 GiB declared; the file holds 1 kB. Nothing may be allocated.
  const std::string past_end = header_error(object_of({entry("huge", "F16", "[1073741824]", 0, 2147483648)}), 1000);
  EXPECT_TRUE(mentions(past_end, "tensor 'huge'")) << past_end;
  EXPECT_TRUE(mentions(past_end, "run past the end")) << past_end;
  const std::string mismatch = header_error(object_of({entry("huge", "F16", "[1073741824]", 0, 1000)}), 1000);
  EXPECT_TRUE(mentions(mismatch, "tensor 'huge': shape [1073741824] of F16 needs 2147483648 bytes")) << mismatch;
}

TEST_F(SafetensorsTest, ShapeWhoseByteCountOverflows) {
  for (std::string_view shape : {"[4294967296, 4294967296]", "[1099511627776, 1099511627776, 0]",
                                 "[4611686018427387904]"}) {
    const std::string message = header_error(object_of({entry("k", "F16", shape, 0, 0)}), 0);
    EXPECT_TRUE(mentions(message, "tensor 'k'")) << message;
    EXPECT_TRUE(mentions(message, "overflows")) << message;
  }
}

TEST_F(SafetensorsTest, MetadataNotStringToString) {
  const std::string number = header_error(R"({"__metadata__": {"layers": 5}})", 0);
  EXPECT_TRUE(mentions(number, "\"__metadata__\" key \"layers\" holds 5, expected a string")) << number;
  const std::string array = header_error(R"({"__metadata__": ["a"]})", 0);
  EXPECT_TRUE(mentions(array, "\"__metadata__\" is a JSON array, expected an object")) << array;
}

TEST_F(SafetensorsTest, GapsAndTrailingBytesAreErrors) {
  const std::string gap =
      header_error(object_of({entry("a", "F32", "[1]", 0, 4), entry("b", "F32", "[1]", 8, 12)}), 12);
  EXPECT_TRUE(mentions(gap, "bytes [4, 8) of the data buffer, before tensor 'b', belong to no tensor")) << gap;
  const std::string trailing = header_error(object_of({entry("a", "F32", "[1]", 0, 4)}), 9);
  EXPECT_TRUE(
      mentions(trailing, "the last 5 bytes of the 9-byte data buffer belong to no tensor (tensor 'a' ends at 4"))
      << trailing;
  const std::string no_tensors = header_error("{}", 3);
  EXPECT_TRUE(mentions(no_tensors, "the last 3 bytes")) << no_tensors;
}

TEST_F(SafetensorsTest, DuplicateKeys) {
  const std::string tensor =
      header_error(object_of({entry("k", "F32", "[1]", 0, 4), entry("k", "F32", "[1]", 0, 4)}), 4);
  EXPECT_TRUE(mentions(tensor, "lists tensor 'k' twice")) << tensor;
  const std::string field =
      header_error(R"({"k": {"dtype": "F16", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4);
  EXPECT_TRUE(mentions(field, "key \"dtype\" twice")) << field;
}

TEST_F(SafetensorsTest, FiveByteFile) {
  const std::string message = open_error(std::string_view("\x05\0\0\0\0", 5));
  EXPECT_TRUE(mentions(message, "too short for a safetensors file: 5 bytes")) << message;
  const std::string path = write_file(std::string_view("\x05\0\0\0\0", 5), "five.safetensors");
  const std::string through_open = input_error_message([&] { TensorFile::open(path); });
  EXPECT_TRUE(mentions(through_open, "'" + path + "'")) << through_open;
}

TEST_F(SafetensorsTest, EmptyFileThroughTensorFileOpen) {
  const std::string path = write_file("", "empty.safetensors");
  const std::string message = input_error_message([&] { TensorFile::open(path); });
  EXPECT_TRUE(mentions(message, "'" + path + "' is empty")) << message;
  const std::string direct = input_error_message([&] { open_directly(path); });
  EXPECT_TRUE(mentions(direct, "too short")) << direct;
}

// --- Writer refusals ---------------------------------------------------------

TEST_F(SafetensorsTest, WriterRefusesBadTensorsAndLeavesNoFile) {
  const std::vector<std::byte> eight(8);
  const std::vector<std::pair<std::vector<TensorToWrite>, std::string>> cases = {
      {{{"k", DType::f32, {3}, eight}}, "tensor 'k' comes with 8 bytes"},
      {{{"k", DType::f32, {-2}, eight}}, "tensor 'k' has shape [-2]"},
      {{{"k", DType::f32, {2}, eight}, {"k", DType::f16, {4}, eight}}, "tensor 'k' is given twice"},
      {{{"__metadata__", DType::f32, {2}, eight}}, "cannot be named '__metadata__'"},
      {{{"caf\xE9", DType::f32, {2}, eight}}, "valid UTF-8"}};
  const std::string path = path_in_dir("out.safetensors");
  for (const auto& [bad_tensors, expected] : cases) {
    const auto& tensors = bad_tensors;  // clang 14 cannot capture a structured binding in a lambda
    const std::string message = input_error_message([&] { write_safetensors(path, tensors, {}); });
    EXPECT_TRUE(mentions(message, "'" + path + "'")) << message;
    EXPECT_TRUE(mentions(message, expected)) << message;
    EXPECT_TRUE(fs::is_empty(dir_)) << "a failed write left a file behind";
  }
}

}  // namespace
}  // namespace tqlab
