// run_roundtrip (src/roundtrip/roundtrip.h): the output holds, for every layout,
// exactly what the quantizer decodes per (layer, sequence, head) with the
// documented context, in the input's names, shapes and dtypes; everything
// else is copied bit-exactly; errors come before any output exists.
#include "roundtrip/roundtrip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "io/tensor_file.h"
#include "io_test_util.h"
#include "kv/kv_dump.h"
#include "quant/registry.h"
#include "roundtrip/roundtrip_plan.h"
#include "roundtrip/roundtrip_slab.h"
#include "test_support.h"

namespace tqlab {
namespace {

using io_test::read_bytes;
using io_test::ScratchDir;
using io_test::throws_input_error;

// A tensor of the input file, as floats in C order.
struct InputTensor {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

// Gaussian values of `scale`, rounded to `dtype` so that they are what the file holds.
InputTensor random_tensor(const std::string& name, DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed,
                          float scale = 1.0f) {
  Rng rng(seed);
  InputTensor tensor{name, dtype, std::move(shape), {}};
  tensor.values.resize(static_cast<std::size_t>(element_count(tensor.shape)));
  for (float& value : tensor.values) value = scale * static_cast<float>(rng.gaussian());
  const std::vector<std::byte> bytes = encode_floats(tensor.values, dtype);
  for (std::size_t i = 0; i < tensor.values.size(); ++i) {
    tensor.values[i] = load_element(bytes.data() + i * dtype_size(dtype), dtype);
  }
  return tensor;
}

void write_input(const std::string& path, const std::vector<InputTensor>& tensors,
                 const std::map<std::string, std::string>& metadata = {}) {
  std::vector<std::vector<std::byte>> bytes;
  std::vector<TensorToWrite> outputs;
  for (const InputTensor& tensor : tensors) bytes.push_back(encode_floats(tensor.values, tensor.dtype));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    outputs.push_back({tensors[i].name, tensors[i].dtype, tensors[i].shape, bytes[i]});
  }
  write_tensor_file(path, outputs, metadata);
}

std::vector<std::byte> read_bytes_of(const TensorFile& file, const std::string& name) {
  return read_all_bytes(file.get(name));
}

std::vector<float> read_tensor(const TensorFile& file, const std::string& name) {
  const TensorView& view = file.get(name);
  std::vector<float> values(static_cast<std::size_t>(view.element_count()));
  read_all_floats(view, values.data());
  return values;
}

// Element (seq, head, token, dim) of a tensor stored with `layout`, C order.
std::size_t element_index(const std::vector<std::int64_t>& shape, const KvLayout& layout, int seq, int head,
                          std::int64_t token, int dim) {
  std::vector<std::int64_t> index(shape.size(), 0);
  if (layout.seq_axis >= 0) index[static_cast<std::size_t>(layout.seq_axis)] = seq;
  index[static_cast<std::size_t>(layout.head_axis)] = head;
  index[static_cast<std::size_t>(layout.token_axis)] = token;
  index[static_cast<std::size_t>(layout.dim_axis)] = dim;
  std::int64_t flat = 0;
  for (std::size_t axis = 0; axis < shape.size(); ++axis) flat = flat * shape[axis] + index[axis];
  return static_cast<std::size_t>(flat);
}

// What the output must hold for `tensor`: each (seq, head) slab quantized by
// `spec` with QuantContext{seed, role, layer, head}, rounded to the dtype.
std::vector<float> expected_output(const InputTensor& tensor, const std::string& layout_text, const std::string& spec,
                                   Role role, int layer, std::uint64_t seed) {
  const KvLayout layout = parse_kv_layout(layout_text);
  const auto extent = [&](int axis) {
    return axis < 0 ? 1 : static_cast<int>(tensor.shape[static_cast<std::size_t>(axis)]);
  };
  const int seqs = extent(layout.seq_axis), heads = extent(layout.head_axis), dim = extent(layout.dim_axis);
  const std::int64_t tokens = extent(layout.token_axis);
  const auto quantizer = make_quantizer(spec);
  std::vector<float> out(tensor.values.size());
  std::vector<float> slab(static_cast<std::size_t>(tokens * dim)), decoded(slab.size());
  for (int seq = 0; seq < seqs; ++seq) {
    for (int head = 0; head < heads; ++head) {
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (int d = 0; d < dim; ++d) {
          slab[static_cast<std::size_t>(t * dim + d)] =
              tensor.values[element_index(tensor.shape, layout, seq, head, t, d)];
        }
      }
      const QuantContext context{seed, role, layer, head};
      quantizer->decode(quantizer->encode(tokens, dim, slab.data(), context), context, decoded.data());
      const std::vector<std::byte> stored = encode_floats(decoded, tensor.dtype);
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (int d = 0; d < dim; ++d) {
          const auto i = static_cast<std::size_t>(t * dim + d);
          out[element_index(tensor.shape, layout, seq, head, t, d)] =
              load_element(stored.data() + i * dtype_size(tensor.dtype), tensor.dtype);
        }
      }
    }
  }
  return out;
}

// The streamed report equals the reference's: layout, copied tensors, and per tensor the
// name, spec, packed bytes and error sums, to the bit.
void expect_same_report(const RoundtripReport& report, const RoundtripReport& reference) {
  EXPECT_EQ(report.layout, reference.layout);
  EXPECT_EQ(report.copied_tensors, reference.copied_tensors);
  ASSERT_EQ(report.tensors.size(), reference.tensors.size());
  for (std::size_t i = 0; i < report.tensors.size(); ++i) {
    const RoundtripTensorResult& got = report.tensors[i];
    const RoundtripTensorResult& want = reference.tensors[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.spec, want.spec) << want.name;
    EXPECT_EQ(got.encoded_bytes, want.encoded_bytes) << want.name;
    EXPECT_EQ(got.squared_error, want.squared_error) << want.name;
    EXPECT_EQ(got.energy, want.energy) << want.name;
  }
}

// Runs the reference and the streamed roundtrip (two threads) of `input` into `extension`
// files beside it: the same bytes and the same report.
void expect_streamed_equals_reference(const ScratchDir& scratch, const std::string& input, const std::string& extension,
                                      RoundtripOptions options) {
  const std::string expected = scratch.file("expected" + extension), streamed = scratch.file("streamed" + extension);
  options.threads = 1;
  const RoundtripReport reference = run_roundtrip_reference(input, expected, options);
  options.threads = 2;
  const RoundtripReport report = run_roundtrip(input, streamed, options);
  EXPECT_EQ(read_bytes(streamed), read_bytes(expected));
  expect_same_report(report, reference);
}

// ---------------------------------------------------------------- layouts and contexts

TEST(RoundtripTest, Fp32SpecReproducesEveryLayoutBitExactly) {
  // Extents all differ, so any mix-up of axes moves values.
  struct Case {
    std::string layout;
    std::vector<std::int64_t> key_shape, value_shape;
  };
  const Case cases[] = {
      {"head token dim", {3, 5, 4}, {3, 5, 6}},
      {"seq head token dim", {2, 3, 5, 4}, {2, 3, 5, 6}},
      {"token head dim", {5, 3, 4}, {5, 3, 6}},
      {"batch token head dim", {2, 5, 3, 4}, {2, 5, 3, 6}},
      {"dim token head", {4, 5, 3}, {6, 5, 3}},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.layout);
    ScratchDir scratch;
    const std::vector<InputTensor> input = {random_tensor("layers.0.k", DType::f32, test.key_shape, 1),
                                            random_tensor("layers.0.v", DType::f32, test.value_shape, 2)};
    write_input(scratch.file("in.safetensors"), input);
    RoundtripOptions options;
    options.key_spec = "fp32";
    options.value_spec = "fp32";
    options.layout = test.layout;
    const RoundtripReport report = run_roundtrip(scratch.file("in.safetensors"), scratch.file("out.npz"), options);
    ASSERT_EQ(report.tensors.size(), 2u);
    for (const RoundtripTensorResult& result : report.tensors) {
      EXPECT_EQ(result.bits_per_value(), 32.0);
      EXPECT_EQ(result.relative_mse(), 0.0);
    }
    const auto output = TensorFile::open(scratch.file("out.npz"));
    for (const InputTensor& tensor : input) {
      EXPECT_EQ(output->get(tensor.name).shape, tensor.shape);
      EXPECT_EQ(read_tensor(*output, tensor.name), tensor.values) << tensor.name;
    }
  }
}

TEST(RoundtripTest, EachHeadIsQuantizedWithItsContextAndTheRestIsCopied) {
  ScratchDir scratch;
  const std::string layout = "seq head token dim";
  // Layers 3 and 5 (numbers in names, not positions, enter the seeds); two
  // sequences, two kv heads, four query heads; an unrelated tensor; f16 keys.
  const std::vector<InputTensor> input = {
      random_tensor("embedding", DType::f32, {7, 3}, 10),
      random_tensor("blk.3.k", DType::f16, {2, 2, 40, 32}, 11, 4.0f),
      random_tensor("blk.3.v", DType::f32, {2, 2, 40, 16}, 12),
      random_tensor("blk.3.q", DType::f16, {2, 4, 40, 32}, 13),
      random_tensor("blk.5.k", DType::f16, {2, 2, 40, 32}, 14, 4.0f),
      random_tensor("blk.5.v", DType::f32, {2, 2, 40, 16}, 15),
      random_tensor("blk.5.q", DType::f16, {2, 4, 40, 32}, 16),
  };
  const std::map<std::string, std::string> metadata = {{"layout", layout}, {"model", "test"}};
  write_input(scratch.file("in.safetensors"), input, metadata);

  RoundtripOptions options;
  options.key_spec = "tq:b=3";
  options.value_spec = "kivi:b=2,group=8";
  options.query_spec = "tq:b=4,rot=haar";
  options.keys = "blk.{layer}.k";
  options.values = "blk.{layer}.v";
  options.queries = "blk.{layer}.q";
  options.seed = 99;
  const RoundtripReport report =
      run_roundtrip(scratch.file("in.safetensors"), scratch.file("out.safetensors"), options);
  EXPECT_EQ(report.layout, layout);  // from the metadata
  EXPECT_EQ(report.copied_tensors, 1);
  ASSERT_EQ(report.tensors.size(), 6u);

  const auto output = TensorFile::open(scratch.file("out.safetensors"));
  EXPECT_EQ(read_tensor(*output, "embedding"), input[0].values);
  for (std::size_t i = 1; i < input.size(); ++i) {
    const InputTensor& tensor = input[i];
    SCOPED_TRACE(tensor.name);
    const int layer = tensor.name[4] - '0';
    const char kind = tensor.name.back();
    const Role role = kind == 'k' ? Role::key : kind == 'v' ? Role::value : Role::query;
    const std::string& spec = kind == 'k' ? options.key_spec : kind == 'v' ? options.value_spec : options.query_spec;
    const TensorView& view = output->get(tensor.name);
    EXPECT_EQ(view.dtype, tensor.dtype);
    EXPECT_EQ(view.shape, tensor.shape);
    const std::vector<float> written = read_tensor(*output, tensor.name);
    EXPECT_EQ(written, expected_output(tensor, layout, spec, role, layer, options.seed));

    // The report, in file order, counts what was written.
    const RoundtripTensorResult& result = report.tensors[i - 1];
    EXPECT_EQ(result.name, tensor.name);
    EXPECT_EQ(result.role, role);
    EXPECT_EQ(result.layer, layer);
    EXPECT_EQ(result.spec, spec);
    double error = 0, energy = 0;
    for (std::size_t j = 0; j < written.size(); ++j) {
      error +=
          (static_cast<double>(tensor.values[j]) - written[j]) * (static_cast<double>(tensor.values[j]) - written[j]);
      energy += static_cast<double>(tensor.values[j]) * tensor.values[j];
    }
    EXPECT_NEAR(result.relative_mse(), error / energy, 1e-12 * error / energy);
    EXPECT_GT(result.relative_mse(), 0.0);
    // tq:b=3 at D = 32: 3 + 16/32; tq:b=4 at D = 32: 4.5; kivi:b=2,group=8 values: 2 + 32/8.
    const double bits = kind == 'k' ? 3.5 : kind == 'q' ? 4.5 : 6.0;
    EXPECT_DOUBLE_EQ(result.bits_per_value(), bits);
  }
  EXPECT_EQ(output->metadata().at("model"), "test");
  EXPECT_EQ(output->metadata().at("layout"), layout);
  EXPECT_EQ(output->metadata().at("tqlab.roundtrip.k"), "tq:b=3");
  EXPECT_EQ(output->metadata().at("tqlab.roundtrip.v"), "kivi:b=2,group=8");
  EXPECT_EQ(output->metadata().at("tqlab.roundtrip.q"), "tq:b=4,rot=haar");
  EXPECT_EQ(output->metadata().at("tqlab.roundtrip.seed"), "99");
  EXPECT_EQ(output->metadata().count("tqlab.version"), 1u);

  // One layer alone comes out as in the full run; the other is copied; with
  // no query spec the queries are copied too.
  options.layers = std::vector<int>{5};
  options.query_spec = "";
  const RoundtripReport one = run_roundtrip(scratch.file("in.safetensors"), scratch.file("one.safetensors"), options);
  EXPECT_EQ(one.tensors.size(), 2u);
  EXPECT_EQ(one.copied_tensors, 5);
  const auto single = TensorFile::open(scratch.file("one.safetensors"));
  for (const char* name : {"blk.5.k", "blk.5.v"}) {
    EXPECT_EQ(read_tensor(*single, name), read_tensor(*output, name)) << name;
  }
  for (std::size_t i : {1u, 2u, 3u, 6u})
    EXPECT_EQ(read_tensor(*single, input[i].name), input[i].values) << input[i].name;
  EXPECT_EQ(single->metadata().count("tqlab.roundtrip.q"), 0u);
}

// fp8 keys and values are quantized like any float tensor and stored back in fp8 (rounded
// to nearest even, saturated); token ids, masks and positions of every integer width go
// through byte for byte, in .safetensors and in .npz (which has no fp8: f16/f32 K/V there).
TEST(RoundtripTest, Fp8KeysAndValuesAndIntegerTensors) {
  ScratchDir scratch;
  std::vector<std::byte> ids(24 * 8), mask(24), positions(24 * 2);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::byte>(0xF7 ^ (i * 37));
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = static_cast<std::byte>(i % 3 == 0);
  for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<std::byte>(i);
  RoundtripOptions options;
  options.key_spec = "tq:b=4";
  options.value_spec = "tq:b=3";
  options.seed = 5;
  for (const char* extension : {".safetensors", ".npz"}) {
    SCOPED_TRACE(extension);
    const bool fp8 = std::string_view(extension) == ".safetensors";
    const InputTensor keys = random_tensor("layers.0.k", fp8 ? DType::f8_e4m3 : DType::f16, {2, 24, 32}, 21, 3.0f);
    const InputTensor values = random_tensor("layers.0.v", fp8 ? DType::f8_e5m2 : DType::f32, {2, 24, 32}, 22);
    const std::vector<std::byte> key_bytes = encode_floats(keys.values, keys.dtype);
    const std::vector<std::byte> value_bytes = encode_floats(values.values, values.dtype);
    const std::vector<TensorToWrite> tensors = {{"input_ids", DType::i64, {1, 24}, ids},
                                                {"layers.0.k", keys.dtype, keys.shape, key_bytes},
                                                {"layers.0.v", values.dtype, values.shape, value_bytes},
                                                {"attention_mask", DType::boolean, {1, 24}, mask},
                                                {"position_ids", DType::u16, {1, 24}, positions}};
    const std::string in = scratch.file(std::string("in") + extension);
    const std::string out = scratch.file(std::string("out") + extension);
    write_tensor_file(in, tensors);
    const RoundtripReport report = run_roundtrip(in, out, options);
    EXPECT_EQ(report.copied_tensors, 3);
    const auto output = TensorFile::open(out);
    ASSERT_EQ(output->tensors().size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(output->tensors()[i].name, tensors[i].name);  // file order kept
      EXPECT_EQ(output->tensors()[i].dtype, tensors[i].dtype) << tensors[i].name;
    }
    EXPECT_EQ(read_bytes_of(*output, "input_ids"), ids);
    EXPECT_EQ(read_bytes_of(*output, "attention_mask"), mask);
    EXPECT_EQ(read_bytes_of(*output, "position_ids"), positions);
    EXPECT_EQ(read_tensor(*output, "layers.0.k"), expected_output(keys, "head token dim", "tq:b=4", Role::key, 0, 5));
    EXPECT_EQ(read_tensor(*output, "layers.0.v"),
              expected_output(values, "head token dim", "tq:b=3", Role::value, 0, 5));
    EXPECT_GT(report.tensors[0].relative_mse(), 0.0);
  }
}

// Token ids named by a template are refused before anything is written.
TEST(RoundtripTest, IntegerTensorAsKeysIsRefused) {
  ScratchDir scratch;
  const std::vector<std::byte> ids(2 * 16 * 8 * 4);
  const InputTensor values = random_tensor("layers.0.v", DType::f32, {2, 16, 8}, 3);
  const std::vector<std::byte> value_bytes = encode_floats(values.values, values.dtype);
  const std::vector<TensorToWrite> tensors = {{"layers.0.k", DType::i32, {2, 16, 8}, ids},
                                              {"layers.0.v", DType::f32, {2, 16, 8}, value_bytes}};
  write_tensor_file(scratch.file("in.safetensors"), tensors);
  RoundtripOptions options;
  options.key_spec = "tq:b=4";
  options.value_spec = "tq:b=4";
  const auto run = [&] { run_roundtrip(scratch.file("in.safetensors"), scratch.file("out.safetensors"), options); };
  EXPECT_TRUE(throws_input_error(run, {"tensor 'layers.0.k'", "is i32", "must be floats"}));
  EXPECT_FALSE(std::filesystem::exists(scratch.file("out.safetensors")));
}

TEST(RoundtripTest, SameSeedSameBytesOtherSeedOtherBytes) {
  ScratchDir scratch;
  write_input(scratch.file("in.safetensors"), {random_tensor("layers.0.k", DType::f16, {2, 16, 64}, 3),
                                               random_tensor("layers.0.v", DType::f16, {2, 16, 64}, 4)});
  RoundtripOptions options;
  options.key_spec = "tq:b=3";
  options.value_spec = "tq:b=2,qjl=prod";
  options.seed = 5;
  run_roundtrip(scratch.file("in.safetensors"), scratch.file("a.safetensors"), options);
  run_roundtrip(scratch.file("in.safetensors"), scratch.file("b.safetensors"), options);
  options.seed = 6;
  run_roundtrip(scratch.file("in.safetensors"), scratch.file("c.safetensors"), options);
  EXPECT_TRUE(read_bytes(scratch.file("a.safetensors")) == read_bytes(scratch.file("b.safetensors")));
  // The tensors themselves differ (the recorded seed alone would make the files differ).
  const auto a = TensorFile::open(scratch.file("a.safetensors"));
  const auto c = TensorFile::open(scratch.file("c.safetensors"));
  for (const char* name : {"layers.0.k", "layers.0.v"}) {
    EXPECT_NE(read_all_bytes(a->get(name)), read_all_bytes(c->get(name))) << name;
  }
}

TEST(RoundtripTest, Fp16SpecOnFp16InputIsBitExact) {
  ScratchDir scratch;
  write_input(scratch.file("in.safetensors"), {random_tensor("layers.0.k", DType::f16, {2, 16, 8}, 3, 100.0f),
                                               random_tensor("layers.0.v", DType::bf16, {2, 16, 8}, 4)});
  RoundtripOptions options;
  options.key_spec = "fp16";
  options.value_spec = "bf16";
  const RoundtripReport report =
      run_roundtrip(scratch.file("in.safetensors"), scratch.file("out.safetensors"), options);
  for (const RoundtripTensorResult& result : report.tensors) EXPECT_EQ(result.relative_mse(), 0.0) << result.name;
  const auto input = TensorFile::open(scratch.file("in.safetensors"));
  const auto output = TensorFile::open(scratch.file("out.safetensors"));
  for (const char* name : {"layers.0.k", "layers.0.v"}) {
    EXPECT_EQ(read_all_bytes(output->get(name)), read_all_bytes(input->get(name))) << name;
  }
}

// ---------------------------------------------------------------- errors leave nothing behind

TEST(RoundtripTest, ErrorsNameTheirCauseAndWriteNothing) {
  ScratchDir scratch;
  const std::string in = scratch.file("in.safetensors");
  const std::string out = scratch.file("out.safetensors");
  write_input(in, {random_tensor("layers.0.k", DType::f16, {2, 16, 8}, 3),
                   random_tensor("layers.0.v", DType::f16, {2, 16, 8}, 4)});
  const auto attempt = [&](RoundtripOptions options, const std::string& output) {
    if (options.key_spec.empty()) options.key_spec = "tq:b=3";
    if (options.value_spec.empty()) options.value_spec = "tq:b=3";
    return [options, output, &in] { run_roundtrip(in, output, options); };
  };
  RoundtripOptions bad_spec;
  bad_spec.key_spec = "tq:b=9";
  EXPECT_TRUE(throws_input_error(attempt(bad_spec, out), {"tq:b=9", "1..8"}));
  RoundtripOptions bad_dim;
  bad_dim.value_spec = "q4_0";
  EXPECT_TRUE(throws_input_error(attempt(bad_dim, out), {in, "layers.0.v", "q4_0", "head dim 8"}));
  RoundtripOptions missing;
  missing.keys = "blocks.{layer}.key";
  EXPECT_TRUE(throws_input_error(attempt(missing, out), {in, "blocks.{layer}.key"}));
  RoundtripOptions missing_values;
  missing_values.values = "layers.{layer}.value";
  EXPECT_TRUE(throws_input_error(attempt(missing_values, out), {in, "layers.0.value", "layers.{layer}.value"}));
  RoundtripOptions missing_queries;
  missing_queries.query_spec = "fp16";
  EXPECT_TRUE(throws_input_error(attempt(missing_queries, out), {in, "layers.0.q", "layers.{layer}.q"}));
  RoundtripOptions bad_layer;
  bad_layer.layers = std::vector<int>{1};
  EXPECT_TRUE(throws_input_error(attempt(bad_layer, out), {in, "layer 1"}));
  RoundtripOptions same_tensor;
  same_tensor.values = same_tensor.keys;
  EXPECT_TRUE(throws_input_error(attempt(same_tensor, out), {"layers.0.k", "two templates"}));
  EXPECT_TRUE(throws_input_error(attempt({}, scratch.file("out.npy")), {"out.npy", "one tensor"}));
  EXPECT_TRUE(throws_input_error(attempt({}, scratch.file("out.bin")), {"out.bin", ".safetensors"}));
  EXPECT_TRUE(throws_input_error(attempt({}, scratch.file("no/dir/out.npz")), {"no/dir/out.npz", "does not exist"}));
  for (const auto& entry : std::filesystem::directory_iterator(scratch.file(""))) {
    EXPECT_EQ(entry.path().filename(), "in.safetensors") << "left behind: " << entry.path();
  }
}

TEST(RoundtripTest, HeadDimsAreCheckedBeforeAnyTensorIsRead) {
  // Layer 0 is fine for q8_0 but holds a NaN; layer 1's head dim 8 is not.
  // Checked first, the head dim is the error reported, not the NaN.
  ScratchDir scratch;
  InputTensor keys = random_tensor("layers.0.k", DType::f32, {1, 4, 32}, 3);
  keys.values[5] = NAN;
  write_input(scratch.file("in.safetensors"), {keys, random_tensor("layers.0.v", DType::f32, {1, 4, 32}, 4),
                                               random_tensor("layers.1.k", DType::f32, {1, 4, 8}, 5),
                                               random_tensor("layers.1.v", DType::f32, {1, 4, 8}, 6)});
  RoundtripOptions options;
  options.key_spec = "q8_0";
  options.value_spec = "fp16";
  EXPECT_TRUE(throws_input_error([&] { run_roundtrip(scratch.file("in.safetensors"), scratch.file("o.npz"), options); },
                                 {"layers.1.k", "[1, 4, 8]", "q8_0", "head dim 8"}));
}

TEST(RoundtripTest, NonFiniteInputAndOverflowingOutputNameTheTensor) {
  ScratchDir scratch;
  InputTensor keys = random_tensor("layers.0.k", DType::f32, {2, 16, 32}, 3);
  keys.values[(16 + 4) * 32 + 7] = NAN;  // head 1, token 4, channel 7
  write_input(scratch.file("nan.safetensors"), {keys, random_tensor("layers.0.v", DType::f32, {2, 16, 32}, 4)});
  RoundtripOptions options;
  options.key_spec = "tq:b=3";
  options.value_spec = "tq:b=3";
  EXPECT_TRUE(
      throws_input_error([&] { run_roundtrip(scratch.file("nan.safetensors"), scratch.file("o.npz"), options); },
                         {"nan.safetensors", "layers.0.k", "head 1", "token 4, channel 7"}));

  // q8_0 stores the scale 65504/127 as fp16 516, so 65504 decodes to
  // 127 * 516 = 65532, which f16 rounds to Inf: the output cannot hold it.
  InputTensor large = random_tensor("layers.0.k", DType::f16, {1, 1, 32}, 5);
  large.values[3] = 65504.0f;
  write_input(scratch.file("large.safetensors"), {large, random_tensor("layers.0.v", DType::f16, {1, 1, 32}, 6)});
  options.key_spec = "q8_0";
  options.value_spec = "q8_0";
  EXPECT_TRUE(throws_input_error(
      [&] { run_roundtrip(scratch.file("large.safetensors"), scratch.file("o.npz"), options); },
      {"large.safetensors", "layers.0.k", "q8_0", "token 0, channel 3", "f16 cannot hold"}));
  EXPECT_FALSE(std::filesystem::exists(scratch.file("o.npz")));
}

// ---------------------------------------------------------------- layer lists

// ---------------------------------------------------------------- streaming

// The streamed writer (any thread count) writes the bytes the in-memory reference writes, and
// reports the same figures, for layouts whose slabs are runs of the output and for those that
// are not, with layers left out (copied), queries, several slabs per layer and copied tensors
// of other dtypes.
TEST(RoundtripTest, StreamedOutputEqualsTheReferenceForEveryThreadCount) {
  struct Case {
    std::string layout;
    std::vector<std::int64_t> key_shape, query_shape;
    std::string keys, values, queries;
  };
  const Case cases[] = {
      {"head token dim", {3, 40, 32}, {6, 40, 32}, "tq:b=4", "tq:b=3,qjl=prod", "q4_0"},
      {"seq head token dim", {2, 3, 33, 32}, {2, 3, 33, 32}, "kivi:b=2", "fp8_e4m3", "tq:b=3"},
      {"token head dim", {40, 3, 32}, {40, 6, 32}, "tq:b=4", "q4_0", "kivi:b=4"},
      {"dim token head", {32, 40, 3}, {32, 40, 6}, "tq:b=2", "tq:b=4", "fp8_e5m2"},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.layout);
    ScratchDir scratch;
    std::vector<InputTensor> input;
    for (int layer = 0; layer < 3; ++layer) {
      const std::string prefix = "layers." + std::to_string(layer);
      const auto seed = static_cast<std::uint64_t>(10 * layer);
      input.push_back(random_tensor(prefix + ".k", layer == 1 ? DType::f16 : DType::f32, test.key_shape, seed + 1));
      input.push_back(random_tensor(prefix + ".v", layer == 2 ? DType::bf16 : DType::f32, test.key_shape, seed + 2));
      input.push_back(random_tensor(prefix + ".q", DType::f32, test.query_shape, seed + 3));
      input.push_back(random_tensor(prefix + ".other", DType::f64, {7, 3}, seed + 4));
    }
    write_input(scratch.file("in.safetensors"), input, {{"layout", test.layout}});
    for (const char* extension : {".safetensors", ".npz"}) {
      SCOPED_TRACE(extension);
      RoundtripOptions options;
      options.key_spec = test.keys;
      options.value_spec = test.values;
      options.query_spec = test.queries;
      options.layers = std::vector<int>{0, 2};
      options.seed = 9;
      const std::string expected = scratch.file(std::string("expected") + extension);
      const RoundtripReport reference = run_roundtrip_reference(scratch.file("in.safetensors"), expected, options);
      ASSERT_EQ(reference.tensors.size(), 6u);
      for (const int threads : {1, 2, 4}) {
        SCOPED_TRACE(threads);
        options.threads = threads;
        std::size_t last_done = 0, calls = 0;
        std::mutex progress_mutex;
        options.on_progress = [&](std::size_t done, std::size_t total, int) {
          const std::lock_guard<std::mutex> lock(progress_mutex);
          ++calls;
          last_done = std::max(last_done, done);
          EXPECT_LE(done, total);
        };
        const std::string streamed = scratch.file(std::string("streamed") + extension);
        const RoundtripReport report = run_roundtrip(scratch.file("in.safetensors"), streamed, options);
        EXPECT_EQ(read_bytes(streamed), read_bytes(expected));
        EXPECT_EQ(last_done, calls);
        expect_same_report(report, reference);
      }
    }
  }
}

TEST(RoundtripTest, StreamedErrorIsTheFirstSlabsAndLeavesNoFile) {
  // Values that overflow f16 once decoded, in several heads: with any thread count the error
  // names the first such slab (in file order), as the one-thread reference does, and no
  // output or temporary file stays behind.
  ScratchDir scratch;
  InputTensor keys = random_tensor("layers.0.k", DType::f16, {4, 16, 32}, 3);
  for (int head : {1, 3}) keys.values[static_cast<std::size_t>(head * 16 * 32 + 5)] = 65504.0f;
  const InputTensor values = random_tensor("layers.0.v", DType::f16, {4, 16, 32}, 4);
  write_input(scratch.file("in.safetensors"), {keys, values});
  RoundtripOptions options;
  options.key_spec = "q8_0";  // 65504 decodes to 65532, which f16 cannot hold (see below)
  options.value_spec = "q8_0";
  const std::string reference_error = tqlab::testing::input_error_message(
      [&] { run_roundtrip_reference(scratch.file("in.safetensors"), scratch.file("ref.npz"), options); });
  ASSERT_NE(reference_error.find("head 1"), std::string::npos) << reference_error;
  for (const int threads : {1, 2, 4}) {
    options.threads = threads;
    EXPECT_EQ(tqlab::testing::input_error_message(
                  [&] { run_roundtrip(scratch.file("in.safetensors"), scratch.file("out.npz"), options); }),
              reference_error);
  }
  std::vector<std::string> left;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(scratch.file("in.safetensors")).parent_path())) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"in.safetensors"});
}

// ---------------------------------------------------------------- slabs in pieces

TEST(RoundtripSlabTest, PieceTokensAreMultiplesOfEightNearTheTarget) {
  EXPECT_EQ(slab_piece_tokens(128), 512);
  EXPECT_EQ(slab_piece_tokens(32), 2048);
  EXPECT_EQ(slab_piece_tokens(100), 648);  // 655 rounded down to a multiple of 8
  EXPECT_EQ(slab_piece_tokens(1 << 14), 8);
  EXPECT_EQ(slab_piece_tokens(1 << 20), 8);  // at least 8
}

// A slab of a token-independent quantizer reaches the sink in cache-sized pieces that tile
// it in token order; any other quantizer's, and SlabPieces::whole, in one piece.
TEST(RoundtripSlabTest, CacheSizedPiecesTileTheSlabInTokenOrder) {
  ScratchDir scratch;
  const std::int64_t tokens = 2 * slab_piece_tokens(32) + 13;
  write_input(scratch.file("in.safetensors"), {random_tensor("layers.0.k", DType::f32, {1, tokens, 32}, 1),
                                               random_tensor("layers.0.v", DType::f16, {1, tokens, 32}, 2)});
  RoundtripOptions options;
  options.key_spec = "tq:b=3";
  options.value_spec = "kivi:b=2";  // groups over tokens: one piece
  const RoundtripPlan plan = plan_roundtrip(scratch.file("in.safetensors"), scratch.file("out.npz"), options);
  ASSERT_EQ(plan.work.size(), 2u);
  struct Case {
    std::size_t work;
    SlabPieces pieces;
    std::vector<std::int64_t> firsts;
  };
  const std::int64_t piece = slab_piece_tokens(32);
  const Case cases[] = {{0, SlabPieces::cache_sized, {0, piece, 2 * piece}},
                        {0, SlabPieces::whole, {0}},
                        {1, SlabPieces::cache_sized, {0}}};
  for (const Case& test : cases) {
    SlabBuffers buffers;
    std::vector<std::int64_t> firsts;
    std::int64_t next = 0;
    const std::size_t element_size = dtype_size(plan.work[test.work].view->dtype);
    roundtrip_slab(plan, plan.work[test.work], 0, 0, 0, test.pieces, buffers,
                   [&](std::int64_t first, std::span<const std::byte> rows) {
                     EXPECT_EQ(first, next);
                     firsts.push_back(first);
                     next += static_cast<std::int64_t>(rows.size() / (32 * element_size));
                   });
    EXPECT_EQ(firsts, test.firsts);
    EXPECT_EQ(next, tokens);
  }
}

// Slabs longer than one piece: the streamed roundtrip's bytes, packed-byte counts and error
// sums equal the whole-slab reference's to the bit, for odd bit widths (pieces end inside a
// packed byte only at the slab's end), block formats, conversions to f16/bf16 and a
// quantizer that keeps one piece; and a copied tensor of several pieces arrives whole.
TEST(RoundtripTest, SlabsInPiecesEqualTheWholeSlabs) {
  ScratchDir scratch;
  const std::int64_t tokens = 2 * slab_piece_tokens(32) + 13;
  std::vector<InputTensor> input;
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  for (int layer = 0; layer < 3; ++layer) {
    const std::string prefix = "layers." + std::to_string(layer);
    const auto seed = static_cast<std::uint64_t>(10 * layer);
    input.push_back(random_tensor(prefix + ".k", dtypes[layer], {2, tokens, 32}, seed + 1));
    input.push_back(random_tensor(prefix + ".v", dtypes[(layer + 1) % 3], {2, tokens, 32}, seed + 2));
  }
  // A copied tensor of two work items (8 MiB each) and a part, each read in many pieces.
  input.push_back(random_tensor("embeddings", DType::f32, {(std::int64_t{8} << 20) / 4 + 77000}, 99));
  write_input(scratch.file("in.safetensors"), input);
  const std::pair<std::string, std::string> specs[] = {
      {"tq:b=3", "tq:b=4,block=8"}, {"tq:b=3,qjl=prod", "q4_0"}, {"fp16", "kivi:b=2"}, {"tq:b=1", "q8_0"}};
  for (const auto& [keys, values] : specs) {
    SCOPED_TRACE(keys + " / " + values);
    RoundtripOptions options;
    options.key_spec = keys;
    options.value_spec = values;
    options.seed = 4;
    expect_streamed_equals_reference(scratch, scratch.file("in.safetensors"), ".safetensors", options);
  }
}

// Pieces of a head dim whose piece is not a round number of values (dim 100: 648 tokens,
// 64 800 values) and of a layout whose slabs are scattered in the output ("token head dim"):
// the same bytes and figures as the whole slabs. Pieces of other than a multiple of 8 tokens
// would end inside a packed byte of tq:b=3 and shift the error sums' lanes.
TEST(RoundtripTest, PiecesOfAnOddHeadDimAndAScatteredLayoutEqualTheWholeSlabs) {
  ScratchDir scratch;
  const std::int64_t tokens = 2 * slab_piece_tokens(100) + 13;
  for (const std::string layout : {"head token dim", "token head dim"}) {
    SCOPED_TRACE(layout);
    const std::vector<std::int64_t> shape = layout == "head token dim" ? std::vector<std::int64_t>{2, tokens, 100}
                                                                       : std::vector<std::int64_t>{tokens, 2, 100};
    write_input(scratch.file("in.safetensors"),
                {random_tensor("layers.0.k", DType::f32, shape, 1), random_tensor("layers.0.v", DType::bf16, shape, 2)},
                {{"layout", layout}});
    for (const char* spec : {"tq:b=3", "tq:b=1,qjl=prod", "fp16"}) {
      SCOPED_TRACE(spec);
      RoundtripOptions options;
      options.key_spec = spec;
      options.value_spec = spec;
      expect_streamed_equals_reference(scratch, scratch.file("in.safetensors"), ".npz", options);
    }
  }
}

// An error in a later piece names the slab's token, not the piece's: the same message as the
// whole-slab reference, for a quantizer's refusal (NaN) and for a value the dtype cannot hold.
TEST(RoundtripTest, ErrorInALaterPieceNamesTheSlabsToken) {
  ScratchDir scratch;
  const std::int64_t tokens = 2 * slab_piece_tokens(32) + 13;
  const std::int64_t token = slab_piece_tokens(32) + 70;  // in the second piece
  InputTensor nan_keys = random_tensor("layers.0.k", DType::f32, {2, tokens, 32}, 1);
  nan_keys.values[static_cast<std::size_t>((tokens + token) * 32 + 9)] = NAN;  // head 1, channel 9
  write_input(scratch.file("nan.safetensors"), {nan_keys, random_tensor("layers.0.v", DType::f32, {2, tokens, 32}, 2)});
  InputTensor large_keys = random_tensor("layers.0.k", DType::f16, {2, tokens, 32}, 3);
  large_keys.values[static_cast<std::size_t>(token * 32 + 3)] = 65504.0f;  // q8_0 decodes it beyond f16
  write_input(scratch.file("large.safetensors"),
              {large_keys, random_tensor("layers.0.v", DType::f16, {2, tokens, 32}, 4)});
  // Both: a value f16 cannot hold once decoded in the first piece, and an Inf, which the
  // quantizer refuses, in the second. The whole slab is encoded before any decoded value
  // is checked, so the reference names the Inf; so must the pieces.
  InputTensor both_keys = large_keys;
  both_keys.values[static_cast<std::size_t>((token + 200) * 32 + 5)] = INFINITY;
  both_keys.values[static_cast<std::size_t>(token * 32 + 3)] = 0.5f;
  both_keys.values[static_cast<std::size_t>(40 * 32 + 3)] = 65504.0f;
  write_input(scratch.file("both.safetensors"),
              {both_keys, random_tensor("layers.0.v", DType::f16, {2, tokens, 32}, 4)});
  const std::pair<std::string, std::string> cases[] = {
      {"nan.safetensors", "tq:b=3"}, {"large.safetensors", "q8_0"}, {"both.safetensors", "q8_0"}};
  for (const auto& [file_name, spec] : cases) {
    const std::string& file = file_name;  // clang 14 cannot capture a structured binding in a lambda
    SCOPED_TRACE(file);
    RoundtripOptions options;
    options.key_spec = spec;
    options.value_spec = spec;
    const std::string reference = tqlab::testing::input_error_message(
        [&] { run_roundtrip_reference(scratch.file(file), scratch.file("ref.npz"), options); });
    const std::int64_t named = file == "both.safetensors" ? token + 200 : token;
    EXPECT_NE(reference.find("token " + std::to_string(named)), std::string::npos) << reference;
    for (const int threads : {1, 2}) {
      options.threads = threads;
      EXPECT_EQ(tqlab::testing::input_error_message(
                    [&] { run_roundtrip(scratch.file(file), scratch.file("out.npz"), options); }),
                reference);
    }
    EXPECT_FALSE(std::filesystem::exists(scratch.file("out.npz")));
  }
}

TEST(LayerListTest, ParsesNumbersAndRanges) {
  EXPECT_EQ(parse_layer_list("all"), std::nullopt);
  EXPECT_EQ(parse_layer_list("3"), std::vector<int>{3});
  EXPECT_EQ(parse_layer_list("0,2,5-7"), (std::vector<int>{0, 2, 5, 6, 7}));
  EXPECT_EQ(parse_layer_list("4-4,1"), (std::vector<int>{4, 1}));
  for (const char* bad : {"", "1,,2", "1,", "7-5", "x", "-1", "1-", "2.5", "all,1", "99999999"}) {
    EXPECT_TRUE(throws_input_error([&] { parse_layer_list(bad); }, {"layer list '" + std::string(bad) + "'"})) << bad;
  }
}

}  // namespace
}  // namespace tqlab
