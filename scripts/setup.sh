#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian 12 machine: a C/C++
# toolchain, and libclang with its headers (bindgen, run by librocksdb-sys and
# mdbx-sys), and a TrueType font for the study's PNG plot (fonts-dejavu-core).
# protoc is vendored (protoc-bin-vendored), so it needs no install.
# Safe to run repeatedly: it does nothing when everything is there.
set -euo pipefail

need=()
if command -v dpkg >/dev/null 2>&1; then
  for pkg in build-essential libclang-dev clang fonts-dejavu-core; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
else
  command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 || {
    echo "setup: install a C/C++ compiler and libclang (not a Debian system)" >&2; exit 1; }
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null 2>&1 || {
  echo "setup: cargo not found; install Rust with rustup (https://rustup.rs)" >&2
  exit 1
}
