#!/usr/bin/env bash
# Installs the Debian 12 packages tqlab builds and tests with (run as root).
# Skips apt when every package is already installed, so repeated runs are fast.
set -euo pipefail
packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libeigen3-dev libopenblas-dev
  libspdlog-dev libfmt-dev libgtest-dev libbenchmark-dev zlib1g-dev libssl-dev python3-numpy python3-scipy
  python3-matplotlib
  # src/tokenizer: PCRE2 runs tokenizer.json split patterns, utf8proc does NFC (found by pkg-config)
  libpcre2-dev libutf8proc-dev pkg-config
  # The tokenizer tests' reference: Hugging Face's tokenizers from npm, run by Debian's nodejs
  nodejs
  # tests/cli/roundtrip_durability.sh counts the fsync calls of tqlab roundtrip
  strace
  # The fuzz build (tests/fuzz, tools/fuzz.sh): clang 14 and its libFuzzer runtime
  # (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev: dpkg -S libclang_rt.fuzzer-x86_64.a).
  clang libclang-rt-14-dev
  # tests/cli/slurm_sweep.sh starts a throwaway single-node Slurm; tools/parallel_sweep.sh uses GNU parallel
  slurmctld slurmd slurm-client munge parallel)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm (Debian's, unless the installed nodejs brings its own), then the pinned test-only npm
# packages, each into its folder's node_modules, which git and the build ignore; a folder is
# skipped when its node_modules already matches its package-lock.json:
# - tools/tokenizer_reference: Hugging Face's Rust tokenizers binding, its JavaScript port and
#   real tokenizer.json files;
# - tools/llamacpp_reference: node-llama-cpp, llama.cpp's prebuilt CPU libraries (libllama,
#   libggml-base with ggml's reference block quantizers) and a JS API with next-token
#   probabilities. --omit=optional leaves out its GPU and other-platform packages (the CPU one
#   for linux-x64 is a direct dependency); --ignore-scripts: nothing is downloaded or built.
if ! command -v npm >/dev/null; then
  echo "installing: npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
install_npm_reference() {
  local reference_dir=$1 npm_command=$2
  shift 2
  local stamp="$reference_dir/node_modules/.tqlab-package-lock.sha256"
  local lock_sha256
  lock_sha256=$(sha256sum "$reference_dir/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sha256" ]; then
    echo "installing: npm packages of $reference_dir (package-lock.json)"
    (cd "$reference_dir" && npm $npm_command --no-audit --no-fund --loglevel=error "$@" >/dev/null)
    echo "$lock_sha256" > "$stamp"
  fi
}
tools_dir="$(cd "$(dirname "$0")" && pwd)"
install_npm_reference "$tools_dir/tokenizer_reference" ci
# node-llama-cpp names other platforms' packages at versions the registry lacks, which `npm ci`
# refuses as out of sync; `npm install --no-save` installs exactly the lock's versions all the same.
install_npm_reference "$tools_dir/llamacpp_reference" install --no-save --omit=optional --ignore-scripts
