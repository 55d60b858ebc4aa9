// The subcommands of the tqlab binary, one file each (src/cli/<name>.cpp).
// Each setup_* registers its subcommand, options and callback on `app`; the
// callback stores the command's exit code (0 ok, 1 difference, 2 input error)
// in `exit_code`. User errors are thrown as InputError and handled in main.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// CLI11 is a heavy header (~7 s per file that includes it): it stays out of
// this shared header. Each subcommand file includes <CLI/CLI.hpp> itself, and
// the tqlab target is built as one unity translation unit (CMakeLists.txt),
// so CLI11 is compiled once.
namespace CLI {
class App;
class FormatterBase;
class Option;
class ParseError;
}  // namespace CLI

namespace tqlab::cli {

void setup_inspect(CLI::App& app, int& exit_code);
void setup_synth(CLI::App& app, int& exit_code);
void setup_list(CLI::App& app, int& exit_code);
void setup_roundtrip(CLI::App& app, int& exit_code);
void setup_codebook(CLI::App& app, int& exit_code);
void setup_verify_bounds(CLI::App& app, int& exit_code);
void setup_sweep(CLI::App& app, int& exit_code);
void setup_diff(CLI::App& app, int& exit_code);
void setup_merge(CLI::App& app, int& exit_code);
void setup_report(CLI::App& app, int& exit_code);
void setup_ppl(CLI::App& app, int& exit_code);
void setup_dump(CLI::App& app, int& exit_code);
void setup_tokenize(CLI::App& app, int& exit_code);
void setup_allocate(CLI::App& app, int& exit_code);

/// Every --help fits a terminal: no line is wider than this.
inline constexpr std::size_t kHelpWidth = 100;

/// The formatter every command's --help goes through: descriptions wrapped to
/// kHelpWidth, subcommands listed by the first line of their description.
std::shared_ptr<CLI::FormatterBase> make_help_formatter();

/// A subcommand's description: its one-line headline (what `tqlab --help` lists; no final
/// period), one line of detail (or none), then "See docs/REFERENCE.md#ANCHOR.", the
/// section that documents its flags and outputs.
std::string command_description(std::string_view headline, std::string_view detail, std::string_view anchor);

/// Where an end-to-end command's token ids come from: --tokens FILE, or --text FILE
/// tokenized by the model's tokenizer.json (or --tokenizer's), with --add-special or
/// --no-add-special (default: what the tokenizer's post-processor adds).
struct TokenSourceFlags {
  std::string tokens, text, tokenizer;
  bool add_special = false, no_add_special = false;
  /// true, false, or nullopt for the tokenizer's own default.
  std::optional<bool> add_special_choice() const;
};
void add_token_source_flags(CLI::App& command, TokenSourceFlags& flags);
/// InputError "COMMAND: ..." unless exactly one of --tokens and --text is given, and
/// the other flags only with --text.
void check_token_source_flags(const TokenSourceFlags& flags, const char* command);

/// Adds `--seed` to `command`, stored in `seed` (0 .. 2^64 - 1). A negative
/// value is a usage error (CLI11 would wrap -1 to 2^64 - 1). Every command with
/// a seed takes it through here.
CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& seed, const std::string& description);

/// "0,1,2" -> seeds (no sign, no spaces, no repeats); InputError "COMMAND: --seeds ..." otherwise.
std::vector<std::uint64_t> parse_seed_list(const std::string& text, const std::string& command);

/// Whether paths `a` and `b` name the same file: the same existing file (hard
/// links and symlinks included), or the same normalized path. Commands refuse to
/// write their output over their own input with it.
bool same_file(const std::string& a, const std::string& b);

/// "tqlab" and the subcommands the parser entered, e.g. "tqlab codebook export".
std::string command_path(const CLI::App& app);

/// The one-line message for a command-line usage error, naming the command the
/// parser had entered ("tqlab inspect: file is required (see tqlab inspect --help)"),
/// or the unknown command word. For errors thrown by app.parse(); not for CLI::Success.
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error);

}  // namespace tqlab::cli
