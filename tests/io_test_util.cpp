// Helpers for the .npy/.npz tests (see io_test_util.h). No tests here.
#include "io_test_util.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace tqlab::io_test {
namespace {

const nlohmann::json& expected_json() {
  static const nlohmann::json json = [] {
    std::ifstream in(fixture_dir() / "expected.json");
    if (!in) throw std::runtime_error("cannot read " + (fixture_dir() / "expected.json").string());
    return nlohmann::json::parse(in);
  }();
  return json;
}

std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<std::byte>(std::stoul(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return bytes;
}

}  // namespace

std::filesystem::path fixture_dir() { return std::filesystem::path(__FILE__).parent_path() / "data" / "io"; }

std::string fixture(std::string_view name) { return (fixture_dir() / name).string(); }

std::vector<ExpectedTensor> expected_tensors(std::string_view file) {
  std::vector<ExpectedTensor> tensors;
  for (const auto& [name, entry] : expected_json().at(std::string(file)).at("tensors").items()) {
    ExpectedTensor tensor;
    tensor.name = name;
    tensor.descr = entry.value("descr", "");
    tensor.dtype_code = entry.value("dtype", "");
    tensor.shape = entry.at("shape").get<std::vector<std::int64_t>>();
    tensor.fortran_order = entry.value("fortran_order", false);
    tensor.values = entry.at("values").get<std::vector<double>>();
    for (const nlohmann::json& integer : entry.value("integers", nlohmann::json::array())) {
      tensor.integers.push_back(integer.dump());  // JSON keeps 64-bit integers exactly
    }
    tensor.bf16_bits = entry.value("bf16_bits", false);
    tensor.bytes = from_hex(entry.at("hex").get<std::string>());
    tensors.push_back(std::move(tensor));
  }
  return tensors;  // nlohmann::json objects iterate in key order
}

std::vector<std::string> fixture_names(std::string_view suffix) {
  std::vector<std::string> names;
  for (const auto& [name, entry] : expected_json().items()) {
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(name);
    }
  }
  return names;
}

DType dtype_of_descr(std::string_view descr) {
  static constexpr std::pair<std::string_view, DType> kCodes[] = {
      {"b1", DType::boolean}, {"u1", DType::u8},  {"i1", DType::i8},  {"u2", DType::u16}, {"i2", DType::i16},
      {"u4", DType::u32},     {"i4", DType::i32}, {"u8", DType::u64}, {"i8", DType::i64}, {"f2", DType::f16},
      {"f4", DType::f32},     {"f8", DType::f64}, {"V2", DType::raw16}};
  for (const auto& [code, dtype] : kCodes) {
    if (descr.substr(1) == code) return dtype;
  }
  throw std::runtime_error("dtype_of_descr: no test mapping for " + std::string(descr));
}

DType dtype_after_npy(DType written) {
  if (written == DType::bf16) return DType::u16;
  if (written == DType::f8_e4m3 || written == DType::f8_e5m2) return DType::u8;
  return written;
}

std::vector<std::string> integer_texts(const TensorView& tensor) {
  const bool is_signed = tensor.dtype == DType::i8 || tensor.dtype == DType::i16 || tensor.dtype == DType::i32 ||
                         tensor.dtype == DType::i64;
  // C order over any strides: walk the C-order index, convert to the stored offset.
  std::vector<std::string> out;
  const std::int64_t count = tensor.element_count();
  for (std::int64_t linear = 0; linear < count; ++linear) {
    std::int64_t rest = linear, offset = 0;
    for (std::size_t axis = tensor.shape.size(); axis-- > 0;) {
      offset += (rest % tensor.shape[axis]) * tensor.strides[axis];
      rest /= tensor.shape[axis];
    }
    out.push_back(is_signed ? std::to_string(load_signed(tensor, offset))
                            : std::to_string(load_unsigned(tensor, offset)));
  }
  return out;
}

void expect_matches_fixture(const std::string& path, std::string_view fixture_name) {
  SCOPED_TRACE(fmt::format("{} against fixture {}", path, fixture_name));
  const auto raw = TensorFile::open(path);
  const auto as_bf16 = TensorFile::open(path, OpenOptions{.raw16_as_bf16 = true});
  const std::vector<ExpectedTensor> expected = expected_tensors(fixture_name);
  ASSERT_EQ(raw->tensors().size(), expected.size());
  for (const ExpectedTensor& want : expected) {
    SCOPED_TRACE("tensor " + want.name);
    const TensorView* view = raw->find(want.name);
    ASSERT_NE(view, nullptr);
    const DType dtype = dtype_of_descr(want.descr);
    EXPECT_EQ(view->dtype, dtype);
    EXPECT_EQ(view->big_endian, want.descr[0] == '>' && dtype_size(dtype) > 1 && dtype != DType::raw16);
    EXPECT_EQ(view->shape, want.shape);
    if (want.shape.size() >= 2) {
      EXPECT_EQ(!view->is_c_contiguous(), want.fortran_order);
    }
    EXPECT_EQ(read_all_bytes(*view), want.bytes);
    if (!want.integers.empty()) {
      EXPECT_EQ(integer_texts(*view), want.integers);
    }

    // Asked to, the reader takes every 2-byte unsigned or raw tensor for bfloat16 bits.
    const TensorView& floats_view = as_bf16->get(want.name);
    EXPECT_EQ(floats_view.dtype, dtype == DType::u16 || dtype == DType::raw16 ? DType::bf16 : dtype);
    if (dtype == DType::raw16 && !want.bf16_bits) continue;
    std::vector<float> floats(static_cast<std::size_t>(floats_view.element_count()));
    read_all_floats(want.bf16_bits ? floats_view : *view, floats.data());
    ASSERT_EQ(floats.size(), want.values.size());
    for (std::size_t i = 0; i < floats.size(); ++i) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(floats[i]),
                std::bit_cast<std::uint32_t>(static_cast<float>(want.values[i])))
          << "element " << i << ": " << floats[i] << " vs " << want.values[i];
    }
  }
}

ScratchDir::ScratchDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  path_ = std::filesystem::temp_directory_path() /
          fmt::format("tqlab-{}-{}.{}", ::getpid(), info->test_suite_name(), info->name());
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ignored);
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::file(std::string_view name) const { return (path_ / name).string(); }

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<std::byte> as_bytes(std::string_view text) {
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

std::vector<std::byte> make_npy(std::string_view header, std::span<const std::byte> data, int major) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  std::string text(header);
  while ((preamble + text.size() + 1) % 64 != 0) text.push_back(' ');
  text.push_back('\n');
  std::vector<std::byte> bytes = as_bytes("\x93NUMPY");
  bytes.push_back(static_cast<std::byte>(major));
  bytes.push_back(std::byte{0});
  for (std::size_t i = 0; i < preamble - 8; ++i)
    bytes.push_back(static_cast<std::byte>((text.size() >> (8 * i)) & 0xFF));
  const std::vector<std::byte> header_bytes = as_bytes(text);
  bytes.insert(bytes.end(), header_bytes.begin(), header_bytes.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::uint64_t get_le(std::span<const std::byte> bytes, std::size_t offset, int size) {
  std::uint64_t value = 0;
  for (int i = size; i-- > 0;) value = value << 8 | std::to_integer<std::uint64_t>(bytes[offset + i]);
  return value;
}

void put_le(std::vector<std::byte>& bytes, std::size_t offset, int size, std::uint64_t value) {
  for (int i = 0; i < size; ++i) bytes[offset + i] = static_cast<std::byte>((value >> (8 * i)) & 0xFF);
}

ZipLayout zip_layout(std::span<const std::byte> archive) {
  ZipLayout layout;
  layout.end_record = archive.size() - 22;
  if (get_le(archive, layout.end_record, 4) != 0x06054b50) throw std::runtime_error("no plain end record");
  const std::size_t entries = get_le(archive, layout.end_record + 10, 2);
  layout.directory_offset = get_le(archive, layout.end_record + 16, 4);
  std::size_t cursor = layout.directory_offset;
  for (std::size_t i = 0; i < entries; ++i) {
    layout.central_headers.push_back(cursor);
    layout.local_headers.push_back(get_le(archive, cursor + 42, 4));
    cursor += 46 + get_le(archive, cursor + 28, 2) + get_le(archive, cursor + 30, 2) + get_le(archive, cursor + 32, 2);
  }
  return layout;
}

}  // namespace tqlab::io_test
