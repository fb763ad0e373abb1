#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# install-deps.sh: install the Debian packages the VM test lane needs.
#
# Idempotent: when every package is already installed it only asks dpkg and
# returns (well under a second), so every other script calls it first.
# Otherwise it runs `apt-get update` once and installs what is missing,
# non-interactively and without recommends (recommends of qemu alone would
# pull in hundreds of MB of GUI libraries).
#
# Usage: tools/vm/install-deps.sh [--check]
#   --check   only report what is missing; exit 1 if anything is.
set -euo pipefail
VM_PROG=install-deps
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Why each package is here:
pkgs=(
	qemu-system-x86		# boots the test kernels (TCG; no KVM here)
	busybox-static		# the initramfs userland (static: no libs to copy)
	kmod			# depmod/modprobe/modinfo: 9p module order
	cpio			# packs the initramfs
	xz-utils		# 6.12 ships its modules as .ko.xz
	dwarves			# pahole: 6.12 module builds generate BTF
	sparse			# SPARSE=1 builds (C=2 CHECK=sparse)
	linux-perf		# selftests/kernel/trace_test: perf list
				# 'kvpool:*' in the guest (the host's root)
	bpftrace		# trace_test runs the docs' bpftrace one-liner
	cppcheck		# tools/lint.sh on the userspace C
	perl			# checkpatch.pl in tools/lint.sh
	git			# tools/lint.sh reads the commits it checks
	pkgconf			# userlib's install check builds with pkg-config
	g++			# userlib's header check compiles it as C++
	libdrm-dev		# kvpoolctl gpus finds DRM devices with libdrm
	libsmartcols-dev	# kvpoolctl's text tables (util-linux's)
	python3-pip		# tools/cuda-headers.sh fetches cuda.h's wheel
				# with pip where there is no CUDA toolkit;
				# Debian 12's python3 comes without pip
	python3-dev		# Python.h: userlib/python's extension module
	python3-venv		# userlib/python/.venv, where its wheel is
				# installed and tested (ensurepip's wheels)
	python3-setuptools python3-wheel
				# build that wheel offline: pip wheel
				# --no-build-isolation uses these
	python3-numpy		# the binding's tests, and its array forms
	python3-prometheus-client
				# the text-format and OpenMetrics parsers that
				# check kvpoolctl metrics (make -C tools check,
				# kvpoolctl_test, metrics_test)
	tmux			# drives kvpoolctl top in kvpoolctl_test
	prometheus		# promtool: check metrics, check and test
				# rules (tools/metrics/check.sh); a real
				# scrape in selftests/kernel/metrics_test.
				# On a host booted with systemd this enables
				# and starts prometheus.service (:9090)
	prometheus-node-exporter
				# metrics_test: the textfile collector reads
				# what kvpoolctl metrics --output writes
	systemd			# systemd-analyze security --offline of the
				# units; systemd-socket-activate in
				# metrics_test
	curl			# metrics_test's scrapes, on 127.0.0.1
	python3-pytest		# runs userlib/python/tests (make check, and
				# selftests/kernel/python_test in the VM)
	gcc make libc6-dev	# module and kselftest builds
	gcc-12			# the compiler both Debian kernels were built with
	libelf1 libssl3 zlib1g	# runtime libs of the unpacked (not installed)
				# 6.12 linux-kbuild tools (objtool, modpost)
	linux-headers-amd64	# 6.1 headers for the lead's other scripts
	linux-source-6.1	# kselftest_harness.h, checkpatch.pl
	flex bison		# the debug kernel's kconfig lexer and parser
	bc			# the debug kernel's timeconst.h
	libelf-dev		# the debug kernel's objtool (gelf.h)
	libssl-dev		# the debug kernel's sign-file and certs
	debootstrap		# the 7.x lanes' trixie/sid build roots
	debhelper dh-dkms dh-python python3-all-dev dpkg-dev
	build-essential		# tools/packaging/build-debs.sh: the Debian
				# packages (debian/control's Build-Depends;
				# dpkg-buildpackage also wants build-essential)
	lintian			# ... and their check
	pybuild-plugin-pyproject # ... python3-kvpool's PEP 517 build
	util-linux		# flock, dmesg (essential, listed for clarity)
	coreutils		# timeout (essential, listed for clarity)
	apt dpkg		# apt-get download, dpkg -x (essential)
)
# Find what is not installed (dpkg's view; no apt, no network).
missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ $st == ii* ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	exit 0
fi
if [[ ${1:-} == --check ]]; then
	vm_log "missing: ${missing[*]}"
	exit 1
fi
((EUID == 0)) || vm_die "need root to install: ${missing[*]}"

vm_log "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# -q keeps CI logs short; errors still show.
apt-get -q update
apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends "${missing[@]}"
vm_log "done"
