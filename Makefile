# SPDX-License-Identifier: GPL-2.0-only
#
# kvpool: kernel module, libkvpool, kvpoolctl and tests.
#
#   make                 module (against KDIR), library, tools
#   make check           unit tests + VM tests on Debian 6.1 and 6.12
#   make check-unit      the core in userspace under ASan/UBSan
#   make check-vm        kselftests in QEMU (KERNELS="6.1 6.12")
#   make lint            checkpatch --strict, W=1 and sparse per kernel
#   make sim             the README's first command: tenants sharing a pool
#   make demo            a two-client demonstration, in a VM
#   make install         library, headers, tools, man pages (PREFIX, DESTDIR)
#   make modules_install the module, into the running kernel's tree

KDIR ?= /lib/modules/$(shell uname -r)/build
KERNELS ?= 6.1 6.12
PREFIX ?= /usr/local

all: module userlib tools

module:
	@if [ -d "$(KDIR)" ]; then \
		$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules; \
	else \
		echo "kvpool.ko: no kernel headers at $(KDIR);" \
		     "install them or pass KDIR=/path/to/build (skipped)"; \
	fi

modules_install:
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules_install

userlib:
	$(MAKE) -C userlib

tools: userlib
	$(MAKE) -C tools
	$(MAKE) -C tools/kvpool-replay
	$(MAKE) -C tools/kvpool-sim

check:
	KERNELS="$(KERNELS)" tools/check.sh

check-unit:
	$(MAKE) -C selftests/unit check

check-vm:
	KERNELS="$(KERNELS)" tools/check.sh --vm-only

demo:
	tools/demo.sh

sim:
	tools/sim.sh

lint:
	KERNELS="$(KERNELS)" tools/lint.sh

install: userlib tools
	$(MAKE) -C userlib install PREFIX="$(PREFIX)"
	$(MAKE) -C tools install PREFIX="$(PREFIX)"

clean:
	@if [ -d "$(KDIR)" ]; then $(MAKE) -C "$(KDIR)" M="$(CURDIR)" clean; fi
	$(MAKE) -C userlib clean
	$(MAKE) -C tools clean
	$(MAKE) -C tools/kvpool-replay clean
	$(MAKE) -C tools/kvpool-sim clean
	$(MAKE) -C selftests/unit clean
	-$(MAKE) -C selftests/kernel clean

.PHONY: all module modules_install userlib tools check check-unit check-vm \
	demo sim lint install clean
