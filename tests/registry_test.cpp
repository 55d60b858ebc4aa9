// Properties every registered quantizer must have, tested by looping over
// quantizer_methods() and each method's example_specs and documented options,
// so a newly registered method or option is tested for free:
// - specs: canonical forms are fixed points of parse -> spec(), whatever the
//   option order; every documented option survives canonicalization; unknown
//   options, out-of-range or unlisted values, a flag given a value and a
//   missing b are InputErrors that name the spec and the allowed values;
// - round trips: finite, deterministic, decodable from the bytes alone by a
//   fresh quantizer, zero to zero, bits per value > 0, NaN/Inf and truncated
//   bytes rejected, and the error falls strictly as b rises.
// Method-specific goldens live in baselines_test.cpp and tq_quantizer_test.cpp.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "quant/registry.h"
#include "quant/rotation.h"
#include "quant/spec.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::input_error_message;
using testing::RoundTrip;
using testing::relative_mse;

constexpr std::int64_t kTokens = 64;
constexpr int kDim = 128;
constexpr int kOutlierChannel = 37;
constexpr float kOutlierOffset = 12.0f;

// kTokens x kDim N(0, 1) values with one channel shifted by kOutlierOffset,
// like the large fixed-sign channels of real keys.
std::vector<float> outlier_tensor(std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(kTokens * kDim));
  for (float& value : x) value = static_cast<float>(rng.gaussian());
  for (std::int64_t t = 0; t < kTokens; ++t) x[static_cast<std::size_t>(t * kDim + kOutlierChannel)] += kOutlierOffset;
  return x;
}

QuantContext context_for(Role role) { return QuantContext{1234, role, 3, 1}; }

RoundTrip round_trip(const Quantizer& quantizer, const std::vector<float>& x, Role role) {
  return testing::round_trip(quantizer, kTokens, kDim, x, context_for(role));
}



// ---------------------------------------------------------------- spec text helpers

std::string join_spec(const ParsedSpec& spec) {
  std::string text = spec.method;
  for (std::size_t i = 0; i < spec.options.size(); ++i) {
    text += i == 0 ? ":" : ",";
    text += spec.options[i].key;
    if (!spec.options[i].is_flag) text += "=" + spec.options[i].value;
  }
  return text;
}

// `spec` with option `key` set to `value` (a bare flag when value is empty),
// replacing it where present.
std::string with_option(const std::string& spec, const std::string& key, const std::string& value) {
  ParsedSpec parsed = split_spec(spec);
  SpecOption option{key, value, value.empty()};
  const auto found = std::find_if(parsed.options.begin(), parsed.options.end(),
                                  [&](const SpecOption& existing) { return existing.key == key; });
  if (found != parsed.options.end()) *found = option;
  else parsed.options.push_back(option);
  return join_spec(parsed);
}

std::string without_option(const std::string& spec, const std::string& key) {
  ParsedSpec parsed = split_spec(spec);
  std::erase_if(parsed.options, [&](const SpecOption& option) { return option.key == key; });
  return join_spec(parsed);
}

std::string with_options_reversed(const std::string& spec) {
  ParsedSpec parsed = split_spec(spec);
  std::reverse(parsed.options.begin(), parsed.options.end());
  return join_spec(parsed);
}

// "1..8" -> {1, 8}; nullopt for anything else.
std::optional<std::pair<int, int>> integer_range(const std::string& values) {
  const std::size_t dots = values.find("..");
  if (dots == std::string::npos) return std::nullopt;
  int lo = 0, hi = 0;
  const char* begin = values.data();
  const auto first = std::from_chars(begin, begin + dots, lo);
  const auto second = std::from_chars(begin + dots + 2, begin + values.size(), hi);
  if (first.ec != std::errc() || first.ptr != begin + dots || second.ec != std::errc() ||
      second.ptr != begin + values.size()) {
    return std::nullopt;
  }
  return std::pair{lo, hi};
}

// "hadamard|haar|none" -> its words; empty when `values` is not a choice list.
std::vector<std::string> choices(const std::string& values) {
  if (values.find('|') == std::string::npos) return {};
  std::vector<std::string> words;
  std::size_t start = 0;
  while (true) {
    const std::size_t bar = values.find('|', start);
    words.push_back(values.substr(start, bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return words;
}

// The values worth trying for an option: every choice, both ends of a range,
// the flag itself; nothing for free-form values (their examples cover them).
std::vector<std::string> representative_values(const OptionDoc& option) {
  if (option.values.empty()) return {""};
  if (const auto range = integer_range(option.values)) {
    return {std::to_string(range->first), std::to_string(range->second)};
  }
  return choices(option.values);
}

const OptionDoc* find_option(const MethodInfo& method, const std::string& name) {
  for (const OptionDoc& option : method.options) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

// ---------------------------------------------------------------- registry and specs

TEST(RegistryTest, EveryMethodIsDocumentedAndHasExamples) {
  std::set<std::string> names;
  for (const MethodInfo& method : quantizer_methods()) {
    EXPECT_TRUE(names.insert(method.name).second) << "registered twice: " << method.name;
    EXPECT_FALSE(method.summary.empty()) << method.name;
    EXPECT_EQ(method.summary.find('\n'), std::string::npos) << method.name << ": summary is one line";
    EXPECT_FALSE(method.bits_formula.empty()) << method.name;
    EXPECT_TRUE(method.make) << method.name;
    ASSERT_FALSE(method.example_specs.empty()) << method.name;
    for (const std::string& spec : method.example_specs) EXPECT_EQ(split_spec(spec).method, method.name) << spec;
    std::set<std::string> option_names;
    for (const OptionDoc& option : method.options) {
      EXPECT_TRUE(option_names.insert(option.name).second) << method.name << ": option twice: " << option.name;
      EXPECT_FALSE(option.summary.empty()) << method.name << " " << option.name;
    }
  }
  for (const char* expected : {"fp16", "bf16", "fp32", "fp8_e4m3", "fp8_e5m2", "q8_0", "q4_0", "q4_1", "kivi", "tq"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
}

TEST(RegistryTest, ExampleSpecsAreCanonical) {
  for (const MethodInfo& method : quantizer_methods()) {
    for (const std::string& spec : method.example_specs) {
      const std::string canonical = make_quantizer(spec)->spec();
      EXPECT_EQ(canonical, spec) << "example specs are written canonically";
      EXPECT_EQ(make_quantizer(canonical)->spec(), canonical);
    }
  }
}

// The packed bytes of a small tensor under `quantizer`, or the message of
// the InputError its head dim draws: what a spec means, as observed.
std::string observed_behaviour(const Quantizer& quantizer) {
  constexpr std::int64_t tokens = 8;
  constexpr int dim = 64;
  static const std::vector<float> x = [] {
    Rng rng(23);
    std::vector<float> values(static_cast<std::size_t>(tokens * dim));
    for (float& value : values) value = static_cast<float>(rng.gaussian());
    return values;
  }();
  try {
    const EncodedTensor encoded = quantizer.encode(tokens, dim, x.data(), context_for(Role::key));
    return std::string(encoded.bytes.begin(), encoded.bytes.end());
  } catch (const InputError& error) {
    return std::string("error: ") + error.what();
  }
}

// Every documented option, at each representative value, on each example:
// where the combination is accepted, its canonical form is a fixed point,
// does not depend on the order the options were written in, and means the
// same: it packs a tensor into the same bytes.
TEST(RegistryTest, EveryOptionCanonicalizesAndReparses) {
  for (const MethodInfo& method : quantizer_methods()) {
    std::set<std::string> options_seen;  // options present in some canonical spec
    int accepted = 0;
    for (const std::string& example : method.example_specs) {
      for (const auto& option : split_spec(make_quantizer(example)->spec()).options) options_seen.insert(option.key);
      for (const OptionDoc& option : method.options) {
        for (const std::string& value : representative_values(option)) {
          const std::string spec = with_option(example, option.name, value);
          std::string canonical;
          try {
            canonical = make_quantizer(spec)->spec();
          } catch (const InputError&) {
            continue;  // a combination the method refuses (e.g. nc with debias); tested below
          }
          ++accepted;
          EXPECT_EQ(make_quantizer(canonical)->spec(), canonical) << "from " << spec;
          const std::string behaviour = observed_behaviour(*make_quantizer(spec));
          EXPECT_TRUE(behaviour == observed_behaviour(*make_quantizer(canonical)))
              << spec << " and its canonical form " << canonical << " differ";
          EXPECT_EQ(make_quantizer(with_options_reversed(spec))->spec(), canonical) << "from " << spec;
          for (const auto& parsed : split_spec(canonical).options) options_seen.insert(parsed.key);
        }
      }
    }
    for (const OptionDoc& option : method.options) {
      EXPECT_TRUE(options_seen.count(option.name)) << method.name << ": option '" << option.name
                                                   << "' never appears in a canonical spec";
    }
    if (!method.options.empty()) {
      EXPECT_GT(accepted, 0) << method.name;
    }
  }
}

TEST(RegistryTest, UnknownOptionsNameTheKnownOnes) {
  for (const MethodInfo& method : quantizer_methods()) {
    const std::string example = method.example_specs.front();
    for (const std::string& spec : {with_option(example, "zzz", "1"), with_option(example, "zzz", "")}) {
      const std::string message = input_error_message([&] { make_quantizer(spec); });
      EXPECT_NE(message.find("'" + spec + "'"), std::string::npos) << message;
      if (method.options.empty()) {
        EXPECT_NE(message.find("takes no options"), std::string::npos) << message;
        continue;
      }
      EXPECT_NE(message.find("unknown option 'zzz'"), std::string::npos) << message;
      for (const OptionDoc& option : method.options) {
        EXPECT_NE(message.find(option.name), std::string::npos) << message << " lacks " << option.name;
      }
    }
  }
}

// Found by fuzzing (tests/fuzz/spec_fuzz.cpp): a spec from a config may run to any length,
// and every message echoed it (and the unknown key or value) whole. Now each is cut.
TEST(RegistryTest, ErrorsAboutAHugeSpecStayShort) {
  const std::string huge(5000, 'x');
  const std::string bad_utf8(3000, '\xFF');
  for (const std::string& spec : {"tq:b=3," + huge, "tq:b=3," + huge + "=1", "tq:b=" + huge, "tq:rot=" + huge,
                                  huge + ":b=3", "tq:b=3,outliers=" + huge, "tq:b=3," + bad_utf8 + ",b=4",
                                  "tq:b=3,,,," + huge, "kivi:" + huge, "tq:b=3,nc," + huge + ",nc"}) {
    const std::string message = input_error_message([&] { make_quantizer(spec); });
    EXPECT_LT(message.size(), 600u) << message.substr(0, 200);
    EXPECT_NE(message.find("bytes cut]"), std::string::npos) << message.substr(0, 200);
  }
}

TEST(RegistryTest, BadValuesNameTheAllowedValues) {
  int checked = 0;
  for (const MethodInfo& method : quantizer_methods()) {
    const std::string example = method.example_specs.front();
    for (const OptionDoc& option : method.options) {
      std::vector<std::string> bad_values;
      if (option.values.empty()) {
        // A flag given a value.
        const std::string spec = with_option(example, option.name, "1");
        const std::string message = input_error_message([&] { make_quantizer(spec); });
        EXPECT_NE(message.find("'" + option.name + "' is a flag"), std::string::npos) << message;
        ++checked;
        continue;
      }
      // A valued option written as a bare flag.
      const std::string bare = with_option(example, option.name, "");
      EXPECT_NE(input_error_message([&] { make_quantizer(bare); }).find("needs a value"), std::string::npos) << bare;
      // Free-form values (outliers=K@B2) get "bogus" too; their message shows the form, not a list.
      if (const auto range = integer_range(option.values)) {
        bad_values = {std::to_string(range->first - 1), std::to_string(range->second + 1), "x"};
      } else {
        bad_values = {"bogus"};
      }
      for (const std::string& value : bad_values) {
        const std::string spec = with_option(example, option.name, value);
        const std::string message = input_error_message([&] { make_quantizer(spec); });
        EXPECT_NE(message.find("'" + spec + "'"), std::string::npos) << message;
        EXPECT_NE(message.find(option.name + "=" + value + " is not allowed"), std::string::npos) << message;
        if (integer_range(option.values) || !choices(option.values).empty()) {
          EXPECT_NE(message.find(option.values), std::string::npos) << message << " lacks " << option.values;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(RegistryTest, MissingBitsNameTheRange) {
  int checked = 0;
  for (const MethodInfo& method : quantizer_methods()) {
    const OptionDoc* bits = find_option(method, "b");
    if (bits == nullptr) continue;
    for (const std::string& example : method.example_specs) {
      const std::string spec = without_option(example, "b");
      const std::string message = input_error_message([&] { make_quantizer(spec); });
      EXPECT_NE(message.find("'" + spec + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("missing required option b"), std::string::npos) << message;
      EXPECT_NE(message.find(bits->values), std::string::npos) << message;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// One table per method names its options: an option the parser reads but the
// table lacks is an internal error (the two lists could not drift apart), and
// a choice option's words come from the enum's name table.
TEST(SpecOptionReaderTest, OptionTableAndParserCannotDisagree) {
  const ParsedSpec parsed = split_spec("m:x=3,rot=hadamard2");
  SpecOptionReader reader(parsed);
  EXPECT_EQ(reader.integer("x", 0, 9), 3);
  EXPECT_EQ(reader.choice("rot", kRotationKindNames), RotationKind::hadamard2);
  EXPECT_THROW(reader.finish({{"rot", "", "a rotation"}}), InternalError);
  EXPECT_NO_THROW(reader.finish({{"x", "0..9", "a number"}, {"rot", "", "a rotation"}}));
  EXPECT_EQ(choice_list(kRotationKindNames.names()), "hadamard|hadamard2|haar|none");
}

TEST(RegistryTest, UnknownMethodListsTheKnownOnes) {
  const std::string message = input_error_message([] { make_quantizer("tqq:b=3"); });
  EXPECT_NE(message.find("unknown method 'tqq'"), std::string::npos) << message;
  for (const MethodInfo& method : quantizer_methods()) EXPECT_NE(message.find(method.name), std::string::npos);
}

// ---------------------------------------------------------------- round trips

std::vector<std::string> all_example_specs() {
  std::vector<std::string> specs;
  for (const MethodInfo& method : quantizer_methods()) {
    specs.insert(specs.end(), method.example_specs.begin(), method.example_specs.end());
  }
  return specs;
}

TEST(RegistryRoundTripTest, FiniteDeterministicAndDecodableFromTheBytesAlone) {
  const std::vector<float> x = outlier_tensor(11);
  for (const std::string& spec : all_example_specs()) {
    for (Role role : {Role::key, Role::value}) {
      SCOPED_TRACE(spec + " " + role_name(role));
      const auto quantizer = make_quantizer(spec);
      const RoundTrip first = round_trip(*quantizer, x, role);
      EXPECT_EQ(first.encoded.tokens, kTokens);
      EXPECT_EQ(first.encoded.dim, kDim);
      EXPECT_GT(first.encoded.bits_per_value(), 0.0);
      EXPECT_TRUE(std::all_of(first.decoded.begin(), first.decoded.end(), [](float v) { return std::isfinite(v); }));
      // Same input, same bytes, from another quantizer built from the same spec.
      EXPECT_EQ(round_trip(*make_quantizer(spec), x, role).encoded.bytes, first.encoded.bytes);
      // A fresh quantizer built from the recorded (canonical) spec decodes a
      // copy of the bytes: nothing travels outside them but spec and context.
      const auto fresh = make_quantizer(quantizer->spec());
      const EncodedTensor copy{first.encoded.tokens, first.encoded.dim, first.encoded.bytes};
      std::vector<float> decoded(x.size());
      fresh->decode(copy, context_for(role), decoded.data());
      EXPECT_EQ(decoded, first.decoded);
    }
  }
}

TEST(RegistryRoundTripTest, ZeroTensorDecodesToZero) {
  const std::vector<float> zeros(static_cast<std::size_t>(kTokens * kDim), 0.0f);
  for (const std::string& spec : all_example_specs()) {
    for (Role role : {Role::key, Role::value}) {
      const RoundTrip result = round_trip(*make_quantizer(spec), zeros, role);
      for (float value : result.decoded) ASSERT_EQ(value, 0.0f) << spec << " " << role_name(role);
    }
  }
}

TEST(RegistryRoundTripTest, NonFiniteInputIsRejectedNamingWhere) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x = outlier_tensor(13);
    x[3 * kDim + 17] = bad;
    for (const std::string& spec : all_example_specs()) {
      const std::string message = input_error_message(
          [&] { make_quantizer(spec)->encode(kTokens, kDim, x.data(), context_for(Role::value)); });
      EXPECT_NE(message.find("token 3, channel 17"), std::string::npos) << spec << ": " << message;
      EXPECT_NE(message.find("value tensor of layer 3, kv head 1"), std::string::npos) << spec << ": " << message;
    }
  }
}

TEST(RegistryRoundTripTest, TruncatedBytesAreAnInputErrorNamingTheSpec) {
  const std::vector<float> x = outlier_tensor(17);
  for (const std::string& spec : all_example_specs()) {
    const auto quantizer = make_quantizer(spec);
    RoundTrip result = round_trip(*quantizer, x, Role::key);
    result.encoded.bytes.pop_back();
    std::vector<float> out(x.size());
    const std::string message =
        input_error_message([&] { quantizer->decode(result.encoded, context_for(Role::key), out.data()); });
    EXPECT_NE(message.find(quantizer->spec()), std::string::npos) << spec << ": " << message;
  }
}

// For every example with a `b=` option, the error falls strictly as b runs
// over its documented range, all other options fixed.
TEST(RegistryRoundTripTest, ErrorFallsAsBitsRise) {
  const std::vector<float> x = outlier_tensor(19);
  int series = 0;
  for (const MethodInfo& method : quantizer_methods()) {
    const OptionDoc* bits = find_option(method, "b");
    if (bits == nullptr) continue;
    const auto range = integer_range(bits->values);
    ASSERT_TRUE(range) << method.name << " b=" << bits->values;
    for (const std::string& example : method.example_specs) {
      for (Role role : {Role::key, Role::value}) {
        double previous = std::numeric_limits<double>::infinity();
        std::string previous_spec = "nothing";
        for (int b = range->first; b <= range->second; ++b) {
          const std::string spec = with_option(example, "b", std::to_string(b));
          const double error = relative_mse(x, round_trip(*make_quantizer(spec), x, role).decoded);
          EXPECT_LT(error, previous) << spec << " (" << role_name(role) << ") is no better than " << previous_spec;
          previous = error;
          previous_spec = spec;
        }
        ++series;
      }
    }
  }
  EXPECT_GT(series, 0);
}

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

// A method that says its tokens are independent must give, for a row quantized
// alone, exactly the row the whole tensor's quantization gives (the sweep's
// planted needle quantizes one row on that promise). At least the plain float
// formats, the llama.cpp blocks and tq without per-head statistics make it.
TEST(RegistryRoundTripTest, TokensIndependentMeansARowAloneDecodesTheSame) {
  const std::vector<float> x = outlier_tensor(11);
  int independent = 0;
  for (const std::string& spec : all_example_specs()) {
    const auto quantizer = make_quantizer(spec);
    if (!quantizer->encodes_tokens_independently()) continue;
    ++independent;
    const QuantContext context = context_for(Role::key);
    const RoundTrip whole = testing::round_trip(*quantizer, kTokens, kDim, x, context);
    for (std::int64_t row : {std::int64_t{0}, std::int64_t{17}, kTokens - 1}) {
      const std::vector<float> alone(x.begin() + row * kDim, x.begin() + (row + 1) * kDim);
      const RoundTrip one = testing::round_trip(*quantizer, 1, kDim, alone, context);
      for (int c = 0; c < kDim; ++c) {
        ASSERT_EQ(one.decoded[static_cast<std::size_t>(c)], whole.decoded[static_cast<std::size_t>(row * kDim + c)])
            << spec << ", row " << row << ", channel " << c;
      }
    }
    // The packed bytes add up over tokens cut at a multiple of 8 (roundtrip counts bits per
    // value from pieces so cut): no per-tensor header.
    const std::vector<float> head(x.begin(), x.begin() + 24 * kDim), tail(x.begin() + 24 * kDim, x.end());
    EXPECT_EQ(testing::round_trip(*quantizer, 24, kDim, head, context).encoded.bytes.size() +
                  testing::round_trip(*quantizer, kTokens - 24, kDim, tail, context).encoded.bytes.size(),
              whole.encoded.bytes.size())
        << spec;
  }
  EXPECT_GE(independent, 10);
  for (const char* spec : {"fp16", "q4_0", "tq:b=3", "tq:b=3,block=32,qjl=prod"}) {
    EXPECT_TRUE(make_quantizer(spec)->encodes_tokens_independently()) << spec;
  }
  for (const char* spec : {"fp8_e4m3", "kivi:b=2", "tq:b=3,center=channel", "tq:b=2,outliers=8@3"}) {
    EXPECT_FALSE(make_quantizer(spec)->encodes_tokens_independently()) << spec;
  }
}

}  // namespace
}  // namespace tqlab
