#!/usr/bin/env bash
# Configures and builds tqlab into BUILD_DIR (default: build). Extra arguments go to cmake's
# configure step; BUILD_TARGET (default: every target) names the one target to build.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build_dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
target=()
[ -n "${BUILD_TARGET:-}" ] && target=(--target "$BUILD_TARGET")
cmake --build "$build_dir" -j "$(nproc)" "${target[@]}"
