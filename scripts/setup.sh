#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian 12 machine: a C/C++
# toolchain and libclang (bindgen, for librocksdb-sys and mdbx-sys).
# protoc is not needed. Safe to run repeatedly; it does nothing when all is there.
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v c++ >/dev/null 2>&1 || need+=(g++)
if ! ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' \
   && ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1; then
  need+=(libclang-dev clang)
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
