#!/usr/bin/env bash
# Installs the Debian 12 packages tqlab builds and tests with (run as root).
# Skips apt when every package is already installed, so repeated runs are fast.
set -euo pipefail
packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libeigen3-dev libopenblas-dev
  libspdlog-dev libfmt-dev libgtest-dev libbenchmark-dev zlib1g-dev libssl-dev python3-numpy python3-scipy
  python3-matplotlib
  # tests/cli/roundtrip_durability.sh counts the fsync calls of tqlab roundtrip
  strace
  # The fuzz build (tests/fuzz, tools/fuzz.sh): clang 14 and its libFuzzer runtime
  # (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev: dpkg -S libclang_rt.fuzzer-x86_64.a).
  clang libclang-rt-14-dev)
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
