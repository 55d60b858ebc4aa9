// The subcommands of the tqlab binary, one file each (src/cli/<name>.cpp).
// Each setup_* registers its subcommand, options and callback on `app`; the
// callback stores the command's exit code (0 ok, 1 difference, 2 input error)
// in `exit_code`. User errors are thrown as InputError and handled in main.
#pragma once

#include <climits>
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
class Validator;
}  // namespace CLI

namespace tqlab {
struct SweepConfig;
}  // namespace tqlab

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

// ---------------------------------------------------------------- shared options
// Each option several commands take is defined once, here; apply_shared_rules holds every
// option of every command to the same rules.

/// The name of the check decimal() and add_seed_option() put on an integer option.
inline constexpr const char* kDecimalCheck = "decimal";
/// The range of an int option whose meaning the command checks itself.
inline constexpr std::int64_t kMinIntOption = INT_MIN, kMaxIntOption = INT_MAX;
/// --threads above this is a typo, not a machine.
inline constexpr std::int64_t kMaxThreadsOption = 65536;

/// Reads integer `option`'s text by core/decimal.h (decimal only, leading zeros too, no octal, no
/// clamping) and refuses a value outside [lo, hi]: a usage error naming the option. Every integer
/// option goes through it (or add_seed_option); apply_shared_rules checks that none is left out.
CLI::Option* decimal(CLI::Option* option, std::int64_t lo, std::int64_t hi);

/// Calls after every command is set up: an empty value ('') of any option or argument is a usage
/// error naming it (exit 2), and an integer option without decimal() is an internal error.
void apply_shared_rules(CLI::App& app);

/// --threads N: worker threads, 0 (every core this process may use) .. kMaxThreadsOption.
CLI::Option* add_threads_option(CLI::App& command, int& threads);

/// -q, --quiet: no progress line and no informational messages.
CLI::Option* add_quiet_flag(CLI::App& command, bool& quiet);

/// --seeds LIST and --seed N, both into `seeds` (read by parse_seed_list); `when_left_out` says
/// what the seeds are without them ("default: 0", "default: the config's seeds").
void add_seeds_options(CLI::App& command, std::string& seeds, const std::string& when_left_out);

/// The output file option (`names`, by default "-o,--output"); the command calls guard_output on it.
CLI::Option* add_output_option(CLI::App& command, std::string& output, const std::string& description,
                               const std::string& names = "-o,--output");

/// Adds `--seed` to `command`, stored in `seed` (a decimal integer 0 .. 2^64 - 1: no sign, no
/// octal, no clamping). Every command with a single seed takes it through here.
CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& seed, const std::string& description);

/// The check add_seed_option puts on --seed.
CLI::Validator seed_check();

/// "0,1,2" -> seeds (decimal, no sign, no spaces, no repeats); InputError "COMMAND: --seeds ..." otherwise.
std::vector<std::uint64_t> parse_seed_list(const std::string& text, const std::string& command);

// ---------------------------------------------------------------- the output guard

/// A file (or a folder: every file in it) that a command reads, and how a message names it.
struct CommandInput {
  std::string path;  ///< "" for an input not given
  std::string what;  ///< "the text", "a file of the model", ...
};

/// The one check of an output every writing command makes before any work. InputError
/// "COMMAND: OPTION 'OUTPUT' ..." when the output is an existing folder, its folder does not exist
/// or cannot be written, or it is the same file as one of `inputs` (same device and inode,
/// through symlinks and hard links, or the same normalized path). `option` is the name the user
/// gave the output by ("-o", "--out", "\"out\" of CONFIG").
void guard_output(const std::string& command, const std::string& option, const std::string& output,
                  const std::vector<CommandInput>& inputs);

/// Whether two paths are one file, as guard_output compares an output with its inputs (for a command
/// that writes two outputs: they must differ).
bool same_file_path(const std::string& a, const std::string& b);

/// The inputs of an end-to-end run: the model folder, the text or the token file (of a
/// "FILE.safetensors:NAME" spec), another tokenizer; "" for those not given.
std::vector<CommandInput> model_inputs(const std::string& model, const std::string& text, const std::string& tokens,
                                       const std::string& tokenizer);

/// The inputs a sweep config names: its data file and its model block's files (model_inputs).
std::vector<CommandInput> config_inputs(const SweepConfig& config);

// ---------------------------------------------------------------- the model options

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

/// The model options of tqlab ppl and tqlab dump: --model DIR (required), the token source,
/// --ctx N (tokens per chunk), --chunks N (0: every whole chunk), --bos.
struct ModelFlags {
  std::string model;
  TokenSourceFlags source;
  int ctx = 512;
  int chunks = 0;
  bool bos = false;
  /// What they read, for guard_output.
  std::vector<CommandInput> inputs() const;
};
void add_model_flags(CLI::App& command, ModelFlags& flags);

/// "tqlab" and the subcommands the parser entered, e.g. "tqlab codebook export".
std::string command_path(const CLI::App& app);

/// The one-line message for a command-line usage error, naming the command the
/// parser had entered ("tqlab inspect: file is required (see tqlab inspect --help)"),
/// or the unknown command word. For errors thrown by app.parse(); not for CLI::Success.
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error);

}  // namespace tqlab::cli
