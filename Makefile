# SPDX-License-Identifier: GPL-2.0-only
#
# kvpool: kernel module, libkvpool, kvpoolctl and tests.
#
#   make                 module (against KDIR), library, tools
#   make check           the whole suite (tools/check.sh; KERNELS=... to narrow)
#   make check-unit      the core in userspace under ASan/UBSan
#   make check-vm        kselftests in QEMU (KERNELS="6.1 6.12 6.12-rt 7.3 sid")
#   make lint            checkpatch --strict, W=1 and sparse per kernel
#   make sim             the README's first command: tenants sharing a pool
#   make demo            a two-client demonstration, in a VM
#   make install         library, headers, tools, man pages (PREFIX, DESTDIR)
#   make modules_install the module, into the running kernel's tree

KDIR ?= /lib/modules/$(shell uname -r)/build
# Empty: each script's own default (every kernel of the matrix).
KERNELS ?=
PREFIX ?= /usr/local

all: module userlib tools

# Without headers there is no module to build: say so and fail, so a
# packaging script or `make && make modules_install` cannot go on
# without it.
module:
	@if [ ! -d "$(KDIR)" ]; then \
		echo "kvpool.ko: no kernel headers at $(KDIR);" \
		     "install linux-headers-$$(uname -r) or pass" \
		     "KDIR=/path/to/build" >&2; \
		exit 1; \
	fi
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules

modules_install:
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules_install

userlib:
	$(MAKE) -C userlib

tools: userlib
	$(MAKE) -C tools
	$(MAKE) -C tools/kvpool-replay
	$(MAKE) -C tools/kvpool-bench
	$(MAKE) -C tools/kvpool-sim

check:
	$(if $(KERNELS),KERNELS="$(KERNELS)") tools/check.sh

check-unit:
	$(MAKE) -C selftests/unit check

check-vm:
	$(if $(KERNELS),KERNELS="$(KERNELS)") tools/check.sh --vm-only

demo:
	tools/demo.sh

sim:
	tools/sim.sh

lint:
	$(if $(KERNELS),KERNELS="$(KERNELS)") tools/lint.sh

install: userlib tools
	$(MAKE) -C userlib install PREFIX="$(PREFIX)"
	$(MAKE) -C tools install PREFIX="$(PREFIX)"

clean:
	@if [ -d "$(KDIR)" ]; then $(MAKE) -C "$(KDIR)" M="$(CURDIR)" clean; fi
	$(MAKE) -C userlib clean
	$(MAKE) -C tools clean
	$(MAKE) -C tools/kvpool-replay clean
	$(MAKE) -C tools/kvpool-bench clean
	$(MAKE) -C tools/kvpool-sim clean
	$(MAKE) -C selftests/unit clean
	-$(MAKE) -C selftests/kernel clean

.PHONY: all module modules_install userlib tools check check-unit check-vm \
	demo sim lint install clean
