// --model DIR, --tokens FILE | --text FILE [--tokenizer T] [--add-special | --no-add-special],
// --ctx, --chunks, --bos: the model options tqlab ppl and tqlab dump share (see commands.h).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

namespace tqlab::cli {

std::optional<bool> TokenSourceFlags::add_special_choice() const {
  if (add_special) return true;
  if (no_add_special) return false;
  return std::nullopt;
}

void add_token_source_flags(CLI::App& command, TokenSourceFlags& flags) {
  command.add_option("--tokens", flags.tokens, "Token ids: FILE.npy (1-D integers) or FILE.safetensors:NAME");
  command.add_option("--text", flags.text,
                     "A text file, tokenized by the model's tokenizer.json or GGUF-embedded tokenizer "
                     "(instead of --tokens)");
  command.add_option("--tokenizer", flags.tokenizer,
                     "With --text: another tokenizer.json, a folder holding one, or a GGUF file");
  auto* add = command.add_flag("--add-special", flags.add_special, "With --text: add the tokenizer's special tokens");
  auto* none = command.add_flag("--no-add-special", flags.no_add_special,
                                "With --text: add none (default: what the tokenizer's post-processor adds)");
  add->excludes(none);
}

void check_token_source_flags(const TokenSourceFlags& flags, const char* command) {
  if (flags.tokens.empty() == flags.text.empty()) fail("{}: give --tokens FILE or --text FILE (one of them)", command);
  if (!flags.tokenizer.empty() && flags.text.empty()) fail("{}: --tokenizer is for --text", command);
  if ((flags.add_special || flags.no_add_special) && flags.text.empty()) {
    fail("{}: --add-special and --no-add-special are for --text", command);
  }
}

void add_model_flags(CLI::App& command, ModelFlags& flags) {
  command.add_option("--model", flags.model,
                     "Hugging Face checkpoint folder (config.json, model.safetensors) or GGUF file")
      ->required();
  add_token_source_flags(command, flags.source);
  decimal(command.add_option("--ctx", flags.ctx, "Tokens per chunk"), kMinIntOption, kMaxIntOption)
      ->capture_default_str();
  decimal(command.add_option("--chunks", flags.chunks, "Chunks to run (0: every whole chunk of the tokens)"),
          kMinIntOption, kMaxIntOption)
      ->capture_default_str();
  command.add_flag("--bos", flags.bos, "Replace each chunk's first token by the config's bos_token_id");
}

std::vector<CommandInput> ModelFlags::inputs() const {
  return model_inputs(model, source.text, source.tokens, source.tokenizer);
}

}  // namespace tqlab::cli
