// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * kvpool_pci_parse(): every address lspci and sysfs print parses to the
 * domain and devid (bus << 8 | device << 3 | function) the kernel's
 * KVPOOL_CREATE_GPU wants, and anything else is -EINVAL with nothing
 * written: no blanks, signs, "0x", newline, short or long fields, device
 * above 1f or function above 7.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "kvpool.h"
#include "kvp_expect.h"

static const struct {
	const char *s;
	uint32_t domain, devid;
} good[] = {
	{ "0000:3b:00.0", 0, 0x3b00 },
	{ "3b:00.0", 0, 0x3b00 },
	/* The VMs' virtio GPU: slot 0x10 is devfn 0x80. */
	{ "0000:00:10.0", 0, 0x0080 },
	{ "00:00.0", 0, 0 },
	{ "0001:02:03.4", 1, 0x021c },
	{ "ffff:ff:1f.7", 0xffff, 0xffff },
	{ "FFFF:FF:1F.7", 0xffff, 0xffff },
	{ "0000:c1:1a.3", 0, 0xc1d3 },
	/* Domains above 0xffff (VMD) take more digits, as lspci prints them. */
	{ "10000:e1:00.0", 0x10000, 0xe100 },
	{ "ffffffff:00:00.1", 0xffffffff, 0x0001 },
};

static const char *const bad[] = {
	"", "3b", "3b:00", "3b:00.", ":3b:00.0", "0000:3b:00",
	"3b:20.0", "3b:ff.0", "3b:00.8", "3b:00.f",
	"0000:3b:00.0\n", " 0000:3b:00.0", "0000:3b:00.0 ", "0000 :3b:00.0",
	"000:3b:00.0", "0:3b:00.0", "123456789:3b:00.0",
	"3:00.0", "3b:0.0", "3b:000.0", "03b:00.0", "3b:00.00", "3b:00.-1",
	"0x3b:00.0", "+3b:00.0", "-3b:00.0", "3b:+0.0", "g0:00.0",
	"0000-3b-00.0", "0000:3b:00:0", "0000:0000:3b:00.0",
	"0000:00:3b:00.0", "pci:0000:3b:00.0", "0000:3b:00.0.0",
	"0000:3b.00.0", "3b.00.0", "pci0000:00",
};

int main(void)
{
	uint32_t domain, devid;
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(good); i++) {
		domain = devid = 0xdeadbeef;
		ret = kvpool_pci_parse(good[i].s, &domain, &devid);
		EXPECT_EQ(0, ret) TH_LOG("'%s' refused", good[i].s);
		EXPECT_EQ(good[i].domain, domain)
			TH_LOG("'%s': domain %#x", good[i].s, domain);
		EXPECT_EQ(good[i].devid, devid)
			TH_LOG("'%s': devid %#x", good[i].s, devid);
		/* Either output may be left out: a check alone. */
		EXPECT_EQ(0, kvpool_pci_parse(good[i].s, NULL, NULL));
		devid = 0xdeadbeef;
		EXPECT_EQ(0, kvpool_pci_parse(good[i].s, NULL, &devid));
		EXPECT_EQ(good[i].devid, devid);
	}

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		domain = devid = 0xdeadbeef;
		ret = kvpool_pci_parse(bad[i], &domain, &devid);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("'%s' taken", bad[i]);
		EXPECT_TRUE(domain == 0xdeadbeef && devid == 0xdeadbeef)
			TH_LOG("'%s': written on failure", bad[i]);
	}
	EXPECT_EQ(-EINVAL, kvpool_pci_parse(NULL, &domain, &devid))
		TH_LOG("NULL taken");

	return kvp_expect_done("pci");
}
