// The output guard every writing command calls before any work (see commands.h).
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "cli/commands.h"
#include "core/error.h"
#include "model/token_file.h"
#include "sweep/sweep_config.h"

namespace tqlab::cli {
namespace {

namespace fs = std::filesystem;

// Whether `a` and `b` are one file: the same device and inode (std::filesystem::equivalent follows
// symlinks, and hard links share the inode), or, when either does not exist yet, the same path
// once normalized.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  return fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
}

// The files an input stands for: itself, or, for a folder (a model, a tokenizer folder), every
// file in it. A folder that cannot be listed is the command's to report when it reads it.
std::vector<fs::path> input_files(const std::string& input) {
  std::error_code error;
  if (!fs::is_directory(input, error)) return {input};
  std::vector<fs::path> files;
  for (fs::directory_iterator entry(input, error), end; !error && entry != end; entry.increment(error)) {
    files.push_back(entry->path());
  }
  return files;
}

}  // namespace

void guard_output(const std::string& command, const std::string& option, const std::string& output,
                  const std::vector<CommandInput>& inputs) {
  std::error_code error;
  if (fs::is_directory(output, error)) {
    fail("{}: {} '{}' is a folder; give the output's file name", command, option, output);
  }
  const fs::path folder = fs::path(output).parent_path();
  const fs::path shown = folder.empty() ? fs::path(".") : folder;
  if (!fs::is_directory(shown, error)) {
    fail("{}: {} '{}': the folder '{}' does not exist", command, option, output, shown.string());
  }
  // The atomic writer creates its temporary file in this folder, then renames it into place.
  if (::access(shown.c_str(), W_OK | X_OK) != 0) {
    fail("{}: {} '{}': the folder '{}' is not writable", command, option, output, shown.string());
  }
  for (const CommandInput& input : inputs) {
    if (input.path.empty()) continue;
    for (const fs::path& file : input_files(input.path)) {
      if (!same_file(output, file)) continue;
      if (file == fs::path(input.path)) {
        fail("{}: {} '{}' is {} '{}', which the command reads; choose another output", command, option, output,
             input.what, input.path);
      }
      fail("{}: {} '{}' is a file of {} '{}' ('{}'), which the command reads; choose another output", command, option,
           output, input.what, input.path, file.string());
    }
  }
}

bool same_file_path(const std::string& a, const std::string& b) { return same_file(a, b); }

std::vector<CommandInput> model_inputs(const std::string& model, const std::string& text, const std::string& tokens,
                                       const std::string& tokenizer) {
  return {{model, "the model"},
          {text, "the text"},
          {tokens.empty() ? std::string() : split_token_spec(tokens).path, "the token file"},
          {tokenizer, "the tokenizer"}};
}

std::vector<CommandInput> config_inputs(const SweepConfig& config) {
  std::vector<CommandInput> inputs{{config.data.resolved_path, "the data"}};
  if (config.model) {
    const SweepModelConfig& model = *config.model;
    for (CommandInput& input :
         model_inputs(model.resolved_path, model.resolved_text, model.resolved_tokens, model.resolved_tokenizer)) {
      inputs.push_back(std::move(input));
    }
  }
  return inputs;
}

}  // namespace tqlab::cli
