#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# install-deps.sh: install what selftests/fuzz needs on Debian 12.
#
# clang-14 is the compiler; libclang-rt-14-dev holds the compiler-rt
# runtimes, libFuzzer among them (libclang_rt.fuzzer-x86_64.a) with the
# ASan and UBSan ones; llvm-14 has llvm-symbolizer, which turns sanitizer
# reports into file:line; python3 runs gen-corpus.py.
#
# Idempotent: when every package is installed it only asks dpkg and exits
# (no apt, no network); otherwise one `apt-get update` and an install of
# what is missing, without recommends.
#
# Usage: selftests/fuzz/install-deps.sh [--check]
#   --check   only report what is missing; exit 1 if anything is.
set -euo pipefail

pkgs=(clang-14 libclang-rt-14-dev llvm-14 make python3)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ $st == ii* ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

if [[ ${1:-} == --check ]]; then
	echo "fuzz install-deps: missing: ${missing[*]}" >&2
	exit 1
fi
((EUID == 0)) || { echo "fuzz install-deps: need root to install: ${missing[*]}" >&2; exit 1; }

echo "fuzz install-deps: installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -q update
apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends "${missing[@]}"
