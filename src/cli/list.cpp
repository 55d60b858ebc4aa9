// tqlab list [--json]: every quantizer method and option of the registry,
// with one-line descriptions and the bits-per-value formulas.
#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/engine.h"
#include "quant/registry.h"

namespace tqlab::cli {
namespace {

struct ListOptions {
  bool json = false;
};

// How many example specs the table shows per method (--json has them all).
constexpr std::size_t kExamplesShown = 4;

// "b=1..8" for an option with values, "nc" for a flag.
std::string option_usage(const OptionDoc& option) {
  return option.values.empty() ? option.name : option.name + "=" + option.values;
}

nlohmann::json to_json(const std::vector<MethodInfo>& methods) {
  nlohmann::json out;
  out["schema"] = "tqlab.list/1";
  out["methods"] = nlohmann::json::array();
  for (const MethodInfo& method : methods) {
    nlohmann::json options = nlohmann::json::array();
    for (const OptionDoc& option : method.options) {
      options.push_back({{"name", option.name},
                         {"values", option.values},
                         {"flag", option.values.empty()},
                         {"summary", option.summary}});
    }
    out["methods"].push_back({{"name", method.name},
                              {"summary", method.summary},
                              {"bits_formula", method.bits_formula},
                              {"options", options},
                              {"example_specs", method.example_specs}});
  }
  out["engines"] = nlohmann::json::array();
  for (const std::string& name : engine_names()) {
    const std::unique_ptr<Engine> engine = parse_engine(name, "engine");
    out["engines"].push_back(
        {{"name", name}, {"supports", engine->supports()}, {"cache_types", engine->cache_types()},
         {"presets", engine->presets()}});
  }
  return out;
}

void print_table(const std::vector<MethodInfo>& methods) {
  fmt::print("Quantizer specs: method[:opt,opt,...], each opt key=value or a bare flag, e.g. tq:b=3,nc.\n"
             "Bits per value are counted from the packed bytes; the formulas say what they come to\n"
             "(D head dim, T tokens per head; fp16 = the 16-bit reference, compression = 16 / bits).\n");
  std::size_t name_width = 6;
  std::size_t usage_width = 0;
  for (const MethodInfo& method : methods) {
    name_width = std::max(name_width, method.name.size());
    for (const OptionDoc& option : method.options) usage_width = std::max(usage_width, option_usage(option).size());
  }
  const std::string indent(name_width + 2, ' ');
  for (const MethodInfo& method : methods) {
    fmt::print("\n{:<{}}  {}\n", method.name, name_width, method.summary);
    fmt::print("{}bits/value: {}\n", indent, method.bits_formula);
    for (const OptionDoc& option : method.options) {
      fmt::print("{}  {:<{}}  {}\n", indent, option_usage(option), usage_width, option.summary);
    }
    const std::size_t shown = std::min(kExamplesShown, method.example_specs.size());
    if (shown > 0 && !method.options.empty()) {
      const std::vector<std::string> examples(method.example_specs.begin(),
                                              method.example_specs.begin() + static_cast<std::ptrdiff_t>(shown));
      fmt::print("{}e.g. {}\n", indent, fmt::join(examples, "  "));
    }
  }
  fmt::print("\nEngines (--engine; docs/ENGINES.md):\n");
  for (const std::string& name : engine_names()) {
    fmt::print("  {}: {}\n", name, parse_engine(name, "engine")->supports());
  }
}

int run_list(const ListOptions& options) {
  const std::vector<MethodInfo>& methods = quantizer_methods();
  if (options.json) {
    fmt::print("{}\n", to_json(methods).dump(2));
  } else {
    print_table(methods);
  }
  return kExitOk;
}

}  // namespace

void setup_list(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ListOptions>();
  auto* command =
      app.add_subcommand("list", command_description("List every quantizer method and option, with its bits per value",
                                                     "What --k/--v specs and sweep configs accept.", "tqlab-list"));
  command->add_flag("--json", options->json,
                    "Print JSON (schema tqlab.list/1: methods with name, summary, bits_formula, options, "
                    "example_specs) instead of a table");
  command->callback([options, &exit_code] { exit_code = run_list(*options); });
}

}  // namespace tqlab::cli
