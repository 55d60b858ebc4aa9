// tqlab: only wires the subcommands (src/cli/*.cpp) and maps errors to exit codes.
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/blas_kernels.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/kernel_set.h"
#include "core/log.h"
#include "core/stop_signals.h"
#include "tqlab_version.h"

int main(int argc, char** argv) {
  tqlab::cli::pin_blas_kernels(argv);
  CLI::App app{
      "tqlab: a laboratory for KV-cache quantization (TurboQuant and its rivals) on real tensors.\n"
      "Exit codes: 0 success, 1 checked and found a difference/violation, 2 usage or input error (or out\n"
      "of memory), 3 internal error (a bug in tqlab: please report it with the command line).\n"
      "TQLAB_KERNELS=portable|avx2|avx512 forces the SIMD kernels (default: the widest this CPU runs)."};
  app.name("tqlab");  // usage lines say "tqlab", not the path the binary was started by
  app.formatter(tqlab::cli::make_help_formatter());  // subcommands take it over as they are added
  // The kernels are named as run: TQLAB_KERNELS may force a narrower form (core/kernel_set.h).
  app.set_version_flag("--version", [] {
    return std::string("tqlab ") + TQLAB_VERSION + " (" + TQLAB_GIT_COMMIT + ") kernels: " +
           std::string(tqlab::kernel_set_instructions(tqlab::active_kernel_set()));
  });
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log debug detail to stderr");
  app.parse_complete_callback([&] {
    if (verbose) tqlab::log::set_level(tqlab::log::Level::debug);
    // Decided here, once, so that a bad TQLAB_KERNELS fails every command up front.
    tqlab::log::debug("kernels: {}", tqlab::kernel_set_instructions(tqlab::active_kernel_set()));
    // Every command stops alike on SIGINT/SIGTERM: its unfinished output removed, one line, 130/143
    // (core/stop_signals.h); a sweep's job takes over with its own StopSignals while it runs.
    tqlab::exit_on_stop_signals(tqlab::cli::command_path(app));
  });

  int exit_code = tqlab::kExitOk;
  tqlab::cli::setup_inspect(app, exit_code);
  tqlab::cli::setup_synth(app, exit_code);
  tqlab::cli::setup_list(app, exit_code);
  tqlab::cli::setup_roundtrip(app, exit_code);
  tqlab::cli::setup_codebook(app, exit_code);
  tqlab::cli::setup_verify_bounds(app, exit_code);
  tqlab::cli::setup_sweep(app, exit_code);
  tqlab::cli::setup_diff(app, exit_code);
  tqlab::cli::setup_merge(app, exit_code);
  tqlab::cli::setup_report(app, exit_code);
  tqlab::cli::setup_tokenize(app, exit_code);
  tqlab::cli::setup_ppl(app, exit_code);
  tqlab::cli::setup_dump(app, exit_code);
  tqlab::cli::setup_allocate(app, exit_code);

  try {
    tqlab::cli::apply_shared_rules(app);
    app.parse(argc, argv);
  } catch (const CLI::Success& success) {  // --help, --version
    return app.exit(success);
  } catch (const CLI::ParseError& error) {
    // One line like every other error (CLI11's own report adds a second, "Run with --help").
    tqlab::log::error("{}", tqlab::cli::usage_error_message(app, error));
    return tqlab::kExitInputError;
  } catch (const tqlab::InputError& error) {
    tqlab::log::error("{}", error.what());
    return tqlab::kExitInputError;
  } catch (const std::bad_alloc&) {
    // Not a defect of the input, but the user's to act on (less data at once, more
    // memory): exit 2 like an input error, worded so that nobody hunts for a bad file.
    tqlab::log::error("out of memory while running {}: the data and options asked for more memory than this "
                      "process may use (not a defect of the input); try fewer layers or tokens, or more memory",
                      tqlab::cli::command_path(app));
    return tqlab::kExitInputError;
  } catch (const std::exception& error) {
    // Anything else is a bug in tqlab, not the user's doing: its own code, so that
    // scripts (a cluster's job array) can tell "fix the input" from "report this".
    tqlab::log::error("internal error: {} (a bug in tqlab: please report it with the command line)", error.what());
    return tqlab::kExitInternalError;
  }
  return exit_code;
}
