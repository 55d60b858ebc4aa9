// tqlab tokenize: a Hugging Face tokenizer.json applied to a text file (ids out),
// or to a list of ids (--decode: text out). docs/REFERENCE.md#tqlab-tokenize.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/sha256.h"
#include "core/text.h"
#include "io/tensor_file.h"
#include "tokenizer/tokenizer.h"

namespace tqlab::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  std::string decode;
  std::string output;
  bool json = false;
  bool add_special = true;
  bool skip_special = false;
  bool quiet = false;
};

// Texts at least this long show a progress line (when stderr is a terminal).
constexpr std::uint64_t kProgressBytes = 4u << 20;

bool is_tensor_file_name(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".npy" || extension == ".npz" || extension == ".safetensors";
}

std::string read_whole_file(const std::string& path) {
  const MappedFile file(path);
  const auto bytes = file.bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_ids(const std::string& path, const std::vector<std::int32_t>& ids, const Tokenizer& tokenizer,
               const std::string& text_sha256) {
  const TensorToWrite tensor{"input_ids", DType::i32, {static_cast<std::int64_t>(ids.size())},
                             std::as_bytes(std::span<const std::int32_t>(ids))};
  // Recorded where the format has metadata (safetensors); npy has none.
  const std::map<std::string, std::string> metadata{{"tokenizer_sha256", tokenizer.sha256()},
                                                    {"text_sha256", text_sha256}};
  write_tensor_file(path, std::span<const TensorToWrite>(&tensor, 1), metadata);
}

// Writes `ids` to stdout separated by `separator`, a block at a time: a few bytes a token beside
// the ids themselves, where one string of them all (or a JSON array: 16 bytes an element, and
// its text) would double or triple the command's peak memory on a long text.
void print_ids(const std::vector<std::int32_t>& ids, std::string_view separator) {
  constexpr std::size_t kBlock = 1 << 16;
  fmt::memory_buffer buffer;
  for (std::size_t first = 0; first < ids.size(); first += kBlock) {
    buffer.clear();
    const std::size_t last = std::min(ids.size(), first + kBlock);
    for (std::size_t i = first; i < last; ++i) {
      if (i > 0) buffer.append(separator);
      fmt::format_to(std::back_inserter(buffer), "{}", ids[i]);
    }
    std::fwrite(buffer.data(), 1, buffer.size(), stdout);
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run_encode(const TokenizeOptions& options, const Tokenizer& tokenizer, double load_seconds) {
  const MappedFile text_file(options.text);  // encoded from the map: no copy of a long text
  const std::string_view text(reinterpret_cast<const char*>(text_file.bytes().data()), text_file.bytes().size());
  if (text.empty()) fail("text '{}' is empty: there is nothing to tokenize", options.text);
  const std::string text_sha256 = file_sha256(options.text);
  ProgressLine progress("tokenize", !options.quiet && text.size() >= kProgressBytes);
  std::vector<std::int32_t> ids;
  const auto encode_start = std::chrono::steady_clock::now();
  const std::clock_t encode_cpu_start = std::clock();  // the process's CPU time: encoding runs on this thread only
  try {
    ids = tokenizer.encode(text, options.add_special, [&](std::size_t done, std::size_t total) {
      progress.update(done >> 20, total >> 20, "MB");
    });
  } catch (const InputError& error) {
    fail("text '{}': {}", options.text, error.what());
  }
  const double encode_seconds = seconds_since(encode_start);
  const double encode_cpu_seconds = static_cast<double>(std::clock() - encode_cpu_start) / CLOCKS_PER_SEC;
  progress.finish();
  if (!options.output.empty()) write_ids(options.output, ids, tokenizer, text_sha256);
  if (options.json) {
    nlohmann::json document{{"schema", "tqlab.tokenize/1"},
                            {"tokenizer", {{"path", json_text(tokenizer.path())},
                                           {"sha256", tokenizer.sha256()},
                                           {"vocab_size", tokenizer.vocab_size()}}},
                            {"text", {{"path", json_text(options.text)}, {"sha256", text_sha256},
                                      {"bytes", text.size()}}},
                            {"add_special_tokens", options.add_special},
                            {"token_count", ids.size()},
                            {"seconds", {{"load", load_seconds}, {"encode", encode_seconds}}},
                            {"cpu_seconds", {{"encode", encode_cpu_seconds}}}};
    if (!options.output.empty()) {
      document["output"] = json_text(options.output);
      fmt::print("{}\n", document.dump(2));
    } else {
      // The document without its last "}", then "ids" streamed: the same JSON, ids on one line.
      std::string head = document.dump(2);
      head.resize(head.rfind('}'));
      while (!head.empty() && head.back() == '\n') head.pop_back();
      fmt::print("{},\n  \"ids\": [", head);
      print_ids(ids, ", ");
      fmt::print("]\n}}\n");
    }
  } else if (options.output.empty()) {
    print_ids(ids, " ");
    fmt::print("\n");
  } else {
    fmt::print("{} tokens from {} bytes -> {}\n", ids.size(), text.size(), printable(options.output));
  }
  return kExitOk;
}

// The ids of a tensor file's one integer tensor, flattened in C order.
std::vector<std::int32_t> read_id_tensor(const std::string& path) {
  const auto file = TensorFile::open(path);
  if (file->tensors().size() != 1) {
    fail("'{}': expected one tensor of token ids, found {} ({})", path, file->tensors().size(), file->name_list());
  }
  const TensorView& tensor = file->tensors()[0];
  const bool is_signed = tensor.dtype == DType::i8 || tensor.dtype == DType::i16 || tensor.dtype == DType::i32 ||
                         tensor.dtype == DType::i64;
  const bool is_unsigned = tensor.dtype == DType::u8 || tensor.dtype == DType::u16 || tensor.dtype == DType::u32 ||
                           tensor.dtype == DType::u64;
  if (!is_signed && !is_unsigned) {
    fail("'{}': tensor '{}' is {}, expected integer token ids", path, printable(tensor.name),
         dtype_name(tensor.dtype));
  }
  // Element offsets of the C-order walk over any strides.
  std::vector<std::int32_t> ids;
  ids.reserve(static_cast<std::size_t>(tensor.element_count()));
  std::vector<std::int64_t> index(tensor.shape.size(), 0);
  for (std::int64_t n = 0; n < tensor.element_count(); ++n) {
    std::int64_t offset = 0;
    for (std::size_t axis = 0; axis < index.size(); ++axis) offset += index[axis] * tensor.strides[axis];
    const std::int64_t value = is_signed ? load_signed(tensor, offset)
                                         : static_cast<std::int64_t>(std::min<std::uint64_t>(
                                               load_unsigned(tensor, offset), std::uint64_t{1} << 40));
    if (value < 0 || value > INT32_MAX) fail("'{}': id {} at position {} is not a token id", path, value, n);
    ids.push_back(static_cast<std::int32_t>(value));
    for (std::size_t axis = index.size(); axis-- > 0;) {
      if (++index[axis] < tensor.shape[axis]) break;
      index[axis] = 0;
    }
  }
  return ids;
}

// Decimal ids separated by white space (what tqlab tokenize prints without -o).
std::vector<std::int32_t> read_id_list(const std::string& path) {
  const std::string text = read_whole_file(path);
  std::vector<std::int32_t> ids;
  std::size_t at = 0;
  while (at < text.size()) {
    if (std::strchr(" \t\r\n", text[at]) != nullptr) {
      ++at;
      continue;
    }
    std::size_t end = at;
    std::int64_t value = 0;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9' && value <= INT32_MAX) {
      value = value * 10 + (text[end++] - '0');
    }
    const bool separated = end == text.size() || std::strchr(" \t\r\n", text[end]) != nullptr;
    if (end == at || !separated || value > INT32_MAX) {
      fail("'{}': byte offset {}: expected token ids (decimal integers from 0 to {}) separated by white space, "
           "found '{}'",
           path, at, INT32_MAX, printable(text.substr(at, 20)));
    }
    ids.push_back(static_cast<std::int32_t>(value));
    at = end;
  }
  return ids;
}

int run_decode(const TokenizeOptions& options, const Tokenizer& tokenizer) {
  const std::vector<std::int32_t> ids =
      is_tensor_file_name(options.decode) ? read_id_tensor(options.decode) : read_id_list(options.decode);
  std::string text;
  try {
    text = tokenizer.decode(ids, options.skip_special);
  } catch (const InputError& error) {
    fail("'{}': {}", options.decode, error.what());
  }
  if (options.output.empty() || options.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    write_text_file(options.output, text);
  }
  return kExitOk;
}

int run_tokenize(const TokenizeOptions& options) {
  if (options.text.empty() == options.decode.empty()) {
    fail("tqlab tokenize: give exactly one of --text FILE (encode) and --decode IDS (decode)");
  }
  if (!options.output.empty() && options.output != "-") {
    guard_output("tqlab tokenize", "-o", options.output,
                 {{options.text, "the text"}, {options.decode, "the ids file"}, {options.tokenizer, "the tokenizer"}});
  }
  if (!options.decode.empty() && options.json) fail("tqlab tokenize: --json is for encoding (--text), not --decode");
  if (!options.text.empty() && !options.output.empty() && !is_tensor_file_name(options.output)) {
    fail("tqlab tokenize: -o '{}' must end in .npy, .npz or .safetensors (the ids are written as int32)",
         options.output);
  }
  const auto load_start = std::chrono::steady_clock::now();
  const Tokenizer tokenizer = Tokenizer::load(options.tokenizer);
  const double load_seconds = seconds_since(load_start);
  return options.text.empty() ? run_decode(options, tokenizer) : run_encode(options, tokenizer, load_seconds);
}

}  // namespace

void setup_tokenize(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<TokenizeOptions>();
  auto* command = app.add_subcommand(
      "tokenize", command_description(
                      "The token ids of a text by a Hugging Face tokenizer.json, and back",
                      "BPE of Llama 2/3, Mistral and Qwen2/3; --decode turns ids back into text.", "tqlab-tokenize"));
  command
      ->add_option("--tokenizer", options->tokenizer,
                   "tokenizer.json, a model folder holding one, or a GGUF file (its embedded tokenizer)")
      ->required();
  command->add_option("--text", options->text, "Text file to encode (bytes; see the reference for non-UTF-8)");
  command->add_option("--decode", options->decode,
                      "Ids to decode: .npy/.npz/.safetensors with one integer tensor, else decimal ids "
                      "separated by white space");
  add_output_option(*command, options->output,
                    "Encode: write the ids as int32 (.npy, .npz or .safetensors). Decode: write the text "
                    "(default stdout)");
  command->add_flag("--json", options->json,
                    "Print a tqlab.tokenize/1 document (with the ids unless -o) instead of the ids");
  // Two flags rather than CLI11's "--x,!--no-x", whose help line reads "--no-x{false}".
  auto* no_add_special = command->add_flag_callback(
      "--no-add-special", [options] { options->add_special = false; }, "Leave the special tokens out");
  command
      ->add_flag_callback("--add-special", [options] { options->add_special = true; },
                          "Put the post-processor's special tokens around the text (the default, as Hugging Face's "
                          "encode: Llama 2 <s> first; Qwen3 none)")
      ->excludes(no_add_special);
  command->add_flag("--skip-special", options->skip_special, "Decode: leave special tokens out");
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_tokenize(*options); });
}

}  // namespace tqlab::cli
