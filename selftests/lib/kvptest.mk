# SPDX-License-Identifier: GPL-2.0-only
#
# What the Makefiles of selftests/kernel, selftests/debug and selftests/lib
# share: where the tree and the kselftest headers are, the flags, and (for
# the test folders) the rules of one kselftest-harness binary per
# *_test.c linked with libkvptest.a.
#
# kselftest_harness.h and kselftest.h come from Debian's linux-source-6.1
# tarball, extracted once into a cache folder outside the checkout by
# tools/extract-kernel-tools.sh (never committed).

LIBDIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
TOPDIR := $(abspath $(LIBDIR)/../..)
EXTRACT := $(TOPDIR)/tools/extract-kernel-tools.sh

# Run the extraction only when something is built, not on "make clean".
ifneq ($(MAKECMDGOALS),clean)
KSRC := $(shell $(EXTRACT))
ifeq ($(KSRC),)
$(error $(EXTRACT) failed)
endif
endif

CC ?= gcc
CFLAGS += -Wall -Wextra -Werror -O2 -g -pthread
CPPFLAGS += -I$(TOPDIR)/uapi -I$(KSRC)/tools/testing/selftests -I$(LIBDIR)
LDFLAGS += -pthread
LIBHDRS := $(wildcard $(LIBDIR)/*.h) $(TOPDIR)/uapi/linux/kvpool.h \
	$(LIBDIR)/kvptest.mk

ifndef KVPTEST_LIB
LIBKVPTEST := $(LIBDIR)/libkvptest.a
SRCS := $(sort $(wildcard *_test.c))
TESTS := $(SRCS:.c=)

all: $(TESTS)

# The library's own Makefile knows what it depends on: ask it every time.
$(LIBKVPTEST): FORCE
	$(MAKE) -C $(LIBDIR)

%_test: %_test.c $(LIBHDRS) Makefile $(LIBKVPTEST)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIBKVPTEST) $(LDFLAGS) $(LDLIBS)

clean:
	rm -f $(TESTS)
	$(MAKE) -C $(LIBDIR) clean

FORCE:

.PHONY: all clean FORCE
endif
