#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# test-install.sh: build kvpool's Debian packages in clean roots of
# Debian 12 (bookworm) and 13 (trixie) and install them there; on
# bookworm check that DKMS builds the module for two kernels and that
# the module it built works, with the packaged kvpoolctl, kvpool-setup
# and udev rule, in a VM; on trixie that the packages build (lintian,
# build-debs.sh --check), install in /usr-merged paths and DKMS builds
# the module for trixie's kernel.
#
# Usage: tools/packaging/test-install.sh [--dir DIR] [--keep-root]
#                                        [--suite bookworm|trixie]
#   --dir DIR     fresh-check's work folder (default
#                 /var/tmp/kvpool-fresh-install); the root is DIR/root,
#                 the trixie root DIR/trixie (a copy of a minbase root
#                 that tools/vm/build-root.sh keeps in DIR/cache)
#   --keep-root   reuse fresh-check's saved debootstrap result (its
#                 --keep-root): saves 1-4 min
#   --suite S     only that suite's half (default: both)
#
# As root, on the host:
#   1. tools/fresh-check.sh --run: debootstraps Debian 12 into DIR/root
#      (the fresh-machine check's own root, from committed HEAD) and runs
#      this script there with --in-root, which
#      a. builds the packages from the clone with build-debs.sh, after
#         installing their Build-Depends with apt-get build-dep (so the
#         list in debian/control is proved complete);
#      b. installs dkms, the headers of the 6.1 kernel the VM lane boots
#         (linux-headers-KREL from tools/vm's kernel cache) and the
#         packages: kvpool-dkms's postinst builds the module;
#      c. then, as a kernel update would, the 6.12 headers the VM lane
#         uses (bookworm-backports): DKMS's header hook builds it again;
#      d. checks `dkms status` says installed for both, modinfo's
#         version, the kvpool group (sysusers.d) and the unit's files.
#   2. boots the 6.1 kernel (tools/vm/vm-run.sh) with the module DKMS
#      installed in the root, and in the guest, chrooted into the root
#      (--in-vm), runs the packaged kvpool-setup on a pools.conf (two
#      pools, one of the VM's virtio GPU, an arena, watermarks,
#      tenants), checks what it made with the packaged kvpoolctl, runs
#      `udevadm test` of the packaged rule on both pools (group, mode,
#      /dev/kvpool/by-name and by-gpu links: the guest runs no udevd),
#      runs it again (nothing made twice), checks that a bad file
#      changes nothing, then starts systemd-udevd in the root and runs
#      it for a third pool: when it returns, that pool's node must be
#      the group's (0660) and every by-name and by-gpu link in place.
#   3. trixie: a minbase root from tools/vm/build-root.sh, copied, with
#      this host's certificate authorities and apt date settings, and a
#      `git clone` of committed HEAD in /root/kvpool; there
#      (--in-trixie) build-debs.sh --install-deps --check, then dkms,
#      linux-headers-amd64 and the packages; checks that DKMS installed
#      the module, that the unit and rule are under /usr/lib, enabled,
#      the group, `udevadm verify` of the rule, and the unit's
#      systemd-analyze security exposure by trixie's systemd. Not
#      booted: the VM lanes' kernels are others.
#
# Prints PASS/FAIL lines and "N passed, N failed" after each half.
# bookworm takes about 7 min on 2 busy cores (6:46 on 2026-12-02:
# debootstrap 1-4 min, apt and the package build 2 min, two module
# builds, the VM 25 s); 1-3 min less with --keep-root after the first
# run. trixie 3-4 min more (3:39 on 2026-12-03, its minbase root made
# cold; bookworm's half took 9:46 then). Needs 2 GB in DIR, 1.5 GB more
# for trixie.
# Not in tools/check.sh (too long): run it after changing the packaging.
set -euo pipefail

prog=test-install
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }
say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }
# check DESCRIPTION CMD...: PASS or FAIL as CMD succeeds.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else ko "$what"; fi
}
result() {
	echo "$pass passed, $fail failed"
	((fail == 0))
}

# ---------------------------------------------------------------------
# 1. In the fresh root (run by fresh-check.sh).
in_root() {
	local krel61=$1 krel612=$2 mirror debs=/root/debs k
	export DEBIAN_FRONTEND=noninteractive
	apt_install() {
		apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends "$@"
	}
	say "apt-get update; what build-debs.sh itself needs"
	apt-get -q update
	apt_install git dpkg-dev xz-utils ca-certificates
	./tools/packaging/build-debs.sh --install-deps --out "$debs" ||
		die "the packages did not build"
	ok "packages built in the fresh root, Build-Depends from debian/control"

	say "dkms and the headers of $krel61, then the packages"
	apt_install dkms "linux-headers-$krel61"
	apt_install "$debs"/kvpool-dkms_*.deb "$debs"/libkvpool1_*.deb \
		"$debs"/kvpoolctl_*.deb
	check "kvpool-dkms installed" dpkg-query -W kvpool-dkms

	say "a second kernel, as an update brings it: headers of $krel612"
	mirror=$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources | head -n 1)
	echo "deb $mirror bookworm-backports main" \
		>/etc/apt/sources.list.d/backports.list
	apt-get -q update
	apt_install -t bookworm-backports "linux-headers-$krel612"

	echo "--- dkms status"
	dkms status | tee /root/dkms-status
	for k in "$krel61" "$krel612"; do
		check "dkms: kvpool/$(cat VERSION) installed for $k" \
			grep -q "^kvpool/$(cat VERSION), $k, [^:]*: installed" /root/dkms-status
		check "modinfo: the module of $k is version $(cat VERSION)" \
			test "$(modinfo -k "$k" -F version kvpool 2>/dev/null)" = "$(cat VERSION)"
	done
	check "the kvpool group exists (sysusers.d)" getent group kvpool
	check "the udev rule is installed in bookworm's udev rules.d" \
		test -f /lib/udev/rules.d/60-kvpool.rules
	check "kvpool-setup.service is enabled" \
		test -L /etc/systemd/system/multi-user.target.wants/kvpool-setup.service
	check "pools.conf(5), kvpool-setup(8) and the bash completion are installed" \
		test -f /usr/share/man/man5/pools.conf.5.gz -a \
		-f /usr/share/man/man8/kvpool-setup.8.gz -a \
		-f /usr/share/bash-completion/completions/kvpoolctl
	out=$(systemd-analyze security --offline=yes --no-pager \
		/lib/systemd/system/kvpool-setup.service 2>&1 | tail -n 1)
	echo "$out"
	check "bookworm's systemd-analyze rates the installed unit 4.0 or less" \
		awk '{ e = $(NF - 2) + 0 } END { exit !(NR && e <= 4.0) }' <<<"$out"
	check "kvpoolctl is in /usr/bin, linked to the packaged libkvpool.so.1" \
		sh -c 'ldd /usr/bin/kvpoolctl | grep -q "libkvpool.so.1 => /.*/libkvpool.so.1 "'
	# Secure Boot (README): DKMS made its key and signed both builds.
	for k in "$krel61" "$krel612"; do
		check "the module of $k is signed with DKMS's key (/var/lib/dkms/mok.pub)" \
			test -f /var/lib/dkms/mok.pub -a \
			"$(modinfo -k "$k" -F signer kvpool 2>/dev/null)" = "DKMS module signing key"
	done
	result
}

# ---------------------------------------------------------------------
# 2b. In the guest: chrooted into the fresh root, the packaged tools.
in_vm() {
	local r=$1 conf out id0 id1 c
	for m in proc sys dev run tmp; do
		case $m in
		proc) mount -t proc proc "$r/proc" ;;
		sys)  mount -t sysfs sysfs "$r/sys" ;;
		dev)  mount -t devtmpfs devtmpfs "$r/dev" ;;
		*)    mount -t tmpfs tmpfs "$r/$m" ;;
		esac
	done
	mkdir -p "$r/sys/fs/cgroup"
	mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
	# The services' cgroups, as systemd would have made them (a tenant by
	# path needs none, one by id does).
	mkdir -p "$r/sys/fs/cgroup/system.slice/chat.service" \
		"$r/sys/fs/cgroup/system.slice/docs.service"
	inroot() { chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

	check "the DKMS-built module is loaded: /sys/module/kvpool/version $(cat "$r/sys/module/kvpool/version" 2>/dev/null)" \
		test "$(cat "$r/sys/module/kvpool/version" 2>/dev/null)" = "$(cat VERSION)"
	check "/dev/kvpool-control exists" test -c "$r/dev/kvpool-control"
	echo "--- kvpoolctl status (packaged), before"
	inroot kvpoolctl status || ko "kvpoolctl status"

	conf=$r/tmp/pools.conf
	cat >"$conf" <<-'EOF'
	# test-install.sh's configuration
	pool a --pages 4096 --page-tokens 16 --rows 64 --row-tokens 4096
	pool b --pages 1K --page-tokens 1 --rows 16 --row-tokens 1024 --gpu 0000:00:10.0  # a comment
	arena a --host --page-bytes 4096 --chunks 2
	wmark a --low 100 --high 200
	tenant a --cgroup /system.slice/chat.service --uid 0 --max 1000 --label chat
	tenant b --cgroup /system.slice/docs.service --uid 0 --max 500 --min 100 --label docs
	wmark 0 --low 10 --high 20
	EOF
	echo "--- kvpool-setup (packaged)"
	if inroot /usr/libexec/kvpool/kvpool-setup --config /tmp/pools.conf; then
		ok "kvpool-setup made the configuration"
	else
		ko "kvpool-setup exited $?"
	fi
	id0=$(cut -d' ' -f1 "$r/run/kvpool/pools/a" 2>/dev/null) || id0=
	id1=$(cut -d' ' -f1 "$r/run/kvpool/pools/b" 2>/dev/null) || id1=
	echo "--- pools a=kvpool$id0 b=kvpool$id1"
	inroot kvpoolctl status || true
	if [[ -n $id0 && -n $id1 ]]; then
		check "pool a: 4096 pages of 16 tokens" \
			test "$(cat "$r/sys/class/kvpool/kvpool$id0/nr_pages") $(cat "$r/sys/class/kvpool/kvpool$id0/page_tokens")" = "4096 16"
		check "pool b: 1024 pages" test "$(cat "$r/sys/class/kvpool/kvpool$id1/nr_pages")" = 1024
		check "pool a: watermarks 100/200" \
			test "$(cat "$r/sys/class/kvpool/kvpool$id0/low_wmark") $(cat "$r/sys/class/kvpool/kvpool$id0/high_wmark")" = "100 200"
		check "pool 0: watermarks 10/20" \
			test "$(cat "$r/sys/class/kvpool/kvpool0/low_wmark") $(cat "$r/sys/class/kvpool/kvpool0/high_wmark")" = "10 20"
		out=$(inroot kvpoolctl arena show --json "$id0" 2>&1) || true
		echo "$out"
		check "pool a: a host arena of 4096-byte pages" \
			grep -q '"kind": "host"' <<<"$out"
		out=$(inroot kvpoolctl tenant list "$id0" 2>&1) || true
		echo "$out"
		check "pool a: tenant chat, max 1000" \
			bash -c 'grep -q chat <<<"$1" && grep -q 1000 <<<"$1"' _ "$out"
		out=$(inroot kvpoolctl tenant list "$id1" 2>&1) || true
		echo "$out"
		check "pool b: tenant docs, max 500, min 100" \
			bash -c 'grep -q docs <<<"$1" && grep -q 500 <<<"$1" && grep -q 100 <<<"$1"' _ "$out"
	else
		ko "kvpool-setup left no ids in /run/kvpool/pools"
	fi

	# The packaged rule, as udevd would run it on each pool's event
	# (`udevadm test` runs the rules, PROGRAM included, and prints the
	# result; no udevd here to trigger).
	if [[ -n $id0 && -n $id1 ]]; then
		echo "--- udevadm test of kvpool$id0 and kvpool$id1"
		out=$(inroot udevadm test --action=change "/sys/class/kvpool/kvpool$id0" 2>&1) || true
		grep -E 'DEVLINKS|KVPOOL_NAME|GROUP|MODE|kvpool' <<<"$out" | tail -n 20
		check "udev: kvpool$id0 gets /dev/kvpool/by-name/a, no by-gpu link" \
			bash -c 'grep -q "^DEVLINKS=.*/dev/kvpool/by-name/a\b" <<<"$1" &&
				 grep -qx "KVPOOL_NAME=a" <<<"$1" && ! grep -q by-gpu <<<"$1"' _ "$out"
		out=$(inroot udevadm test --action=change "/sys/class/kvpool/kvpool$id1" 2>&1) || true
		grep -E 'DEVLINKS|KVPOOL_NAME' <<<"$out"
		check "udev: kvpool$id1 gets by-name/b and by-gpu/0000:00:10.0" \
			bash -c 'grep -q "^DEVLINKS=.*/dev/kvpool/by-name/b\b" <<<"$1" &&
				 grep -q "^DEVLINKS=.*/dev/kvpool/by-gpu/0000:00:10.0\b" <<<"$1"' _ "$out"
		check "udev: the rule gives kvpool$id1 the group kvpool, mode 0660" \
			bash -c 'grep -Eq "GROUP[ =\"]+(kvpool|$2)\b|gid=$2\b" <<<"$1" && grep -q "0660" <<<"$1"' \
			_ "$out" "$(inroot getent group kvpool | cut -d: -f3)"
	fi

	echo "--- kvpool-setup again (as a restart of the unit)"
	c=$(ls -d "$r"/sys/class/kvpool/kvpool[0-9]* | wc -l)
	out=$(inroot /usr/libexec/kvpool/kvpool-setup --config /tmp/pools.conf 2>&1) ||
		ko "kvpool-setup, again, exited non-zero"
	echo "$out"
	check "run again: no new pool ($c pools), the arena kept" \
		bash -c '[[ $(ls -d "$1"/sys/class/kvpool/kvpool[0-9]* | wc -l) == "$2" ]] &&
			 grep -q "made earlier" <<<"$3" && grep -q "has its arena" <<<"$3"' _ "$r" "$c" "$out"

	echo "--- a bad file: nothing done"
	printf 'pool c --pages 8 --page-tokens 1 --rows 4 --row-tokens 8\ntenant d --uid 0\npoool x y\n' \
		>"$r/tmp/bad.conf"
	out=$(inroot /usr/libexec/kvpool/kvpool-setup --config /tmp/bad.conf 2>&1) && rc=0 || rc=$?
	echo "$out"
	check "bad file: exit 2, both errors named, no pool made" \
		bash -c '[[ $1 == 2 ]] && grep -q "bad.conf:2: pool .d. is not defined" <<<"$2" &&
			 grep -q "bad.conf:3: unknown directive .poool." <<<"$2" &&
			 [[ $(ls -d "$3"/sys/class/kvpool/kvpool[0-9]* | wc -l) == "$4" ]]' _ "$rc" "$out" "$r" "$c"

	# With udevd running, as at boot: when kvpool-setup returns, a new
	# pool's node must already be the kvpool group's and every pool have
	# its links, with no settle of the test's own in between.
	echo "--- udevd running: kvpool-setup waits for it"
	if inroot /lib/systemd/systemd-udevd --daemon; then
		echo 'pool c --pages 64 --page-tokens 1 --rows 4 --row-tokens 64' >>"$conf"
		out=$(inroot /usr/libexec/kvpool/kvpool-setup --config /tmp/pools.conf 2>&1) &&
			rc=0 || rc=$?
		echo "$out"
		id2=$(cut -d' ' -f1 "$r/run/kvpool/pools/c" 2>/dev/null) || id2=
		check "udevd: kvpool-setup made pool c and exited 0 (exit $rc)" \
			test "$rc" = 0 -a -n "$id2"
		out=$(inroot stat -c '%G %a' "/dev/kvpool$id2" 2>&1) || true
		check "udevd: /dev/kvpool$id2 is group kvpool, mode 660, as kvpool-setup returns ($out)" \
			test "$out" = "kvpool 660"
		out=$(inroot sh -c 'for l in /dev/kvpool/by-name/a /dev/kvpool/by-name/b \
			/dev/kvpool/by-name/c /dev/kvpool/by-gpu/0000:00:10.0; do
			printf "%s " "$(readlink -f "$l")"; done' 2>&1) || true
		check "udevd: by-name/a, b, c and by-gpu/0000:00:10.0 name kvpool$id0 $id1 $id2 $id1 ($out)" \
			test "$out" = "/dev/kvpool$id0 /dev/kvpool$id1 /dev/kvpool$id2 /dev/kvpool$id1 "
		inroot udevadm control --exit || true
	else
		ko "systemd-udevd --daemon did not start in the root"
	fi
	result
}

# ---------------------------------------------------------------------
# 3. In the trixie root (run by build-root.sh --run, from the host half).
in_trixie() {
	local debs=/root/debs krel f out
	export DEBIAN_FRONTEND=noninteractive
	apt_install() {
		apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends "$@"
	}
	say "apt-get update; what build-debs.sh and its --check need"
	apt-get -q update
	# systemd for systemd-analyze (every trixie machine has it; minbase
	# does not), lintian for the check that it finds no error.
	apt_install git dpkg-dev xz-utils ca-certificates lintian systemd
	update-ca-certificates >/dev/null
	if ./tools/packaging/build-debs.sh --install-deps --check --out "$debs"; then
		ok "trixie: packages built, Build-Depends from debian/control, build-debs.sh --check passed"
	else
		ko "trixie: build-debs.sh --install-deps --check failed"
	fi
	f=$(ls "$debs"/kvpoolctl_*.deb 2>/dev/null) || { result; return; }
	out=$(dpkg-deb -c "$f")
	check "trixie: the unit and the udev rule are under /usr/lib (the /usr merge)" \
		bash -c 'grep -q " ./usr/lib/systemd/system/kvpool-setup.service$" <<<"$1" &&
			 grep -q " ./usr/lib/udev/rules.d/60-kvpool.rules$" <<<"$1" &&
			 ! grep -q " ./lib/" <<<"$1"' _ "$out"

	say "dkms and trixie's kernel headers (linux-headers-amd64), udev, then the packages"
	apt_install dkms linux-headers-amd64 udev
	apt_install "$debs"/kvpool-dkms_*.deb "$debs"/libkvpool1_*.deb \
		"$debs"/kvpoolctl_*.deb "$debs"/python3-kvpool_*.deb
	krel=$(dpkg-query -W -f '${Depends}\n' linux-headers-amd64 |
		sed -n 's/.*linux-headers-\([^ ,]*\).*/\1/p')
	echo "--- dkms status (headers $krel)"
	dkms status | tee /root/dkms-status
	check "trixie: dkms: kvpool/$(cat VERSION) installed for $krel" \
		grep -q "^kvpool/$(cat VERSION), $krel, [^:]*: installed" /root/dkms-status
	check "trixie: modinfo: the module of $krel is version $(cat VERSION)" \
		test "$(modinfo -k "$krel" -F version kvpool 2>/dev/null)" = "$(cat VERSION)"
	check "trixie: the kvpool group exists (sysusers.d)" getent group kvpool
	check "trixie: kvpool-setup.service is enabled" \
		test -L /etc/systemd/system/multi-user.target.wants/kvpool-setup.service
	check "trixie: the packaged files are in place" \
		test -x /usr/libexec/kvpool/kvpool-setup -a \
		-f /usr/lib/udev/rules.d/60-kvpool.rules -a \
		-f /usr/share/bash-completion/completions/kvpoolctl -a \
		-f /usr/share/man/man5/pools.conf.5.gz
	# systemd 253's rules linter, which bookworm's 252 lacks.
	check "trixie: udevadm verify finds 60-kvpool.rules right" \
		udevadm verify /usr/lib/udev/rules.d/60-kvpool.rules
	check "trixie: kvpool-setup --check takes the packaged pools.conf" \
		/usr/libexec/kvpool/kvpool-setup --check
	check "trixie: python3 -c 'import kvpool' (the packaged extension)" \
		python3 -c 'import kvpool'
	out=$(systemd-analyze security --offline=yes --no-pager \
		/usr/lib/systemd/system/kvpool-setup.service 2>&1 | tail -n 1)
	echo "$out"
	check "trixie's systemd-analyze ($(dpkg-query -W -f '${Version}' systemd)) rates the unit 4.0 or less" \
		awk '{ e = $(NF - 2) + 0 } END { exit !(NR && e <= 4.0) }' <<<"$out"
	result
}

# trixie_half: make the trixie root and run in_trixie there.
trixie_half() {
	local base troot f rc=0
	local -x KVPOOL_CACHE=$dir/cache
	mkdir -p "$KVPOOL_CACHE" "$dir/logs"
	say "trixie: a minbase root (tools/vm/build-root.sh, cached in $KVPOOL_CACHE)"
	base=$("$repo/tools/vm/build-root.sh" trixie apt ca-certificates) ||
		die "no trixie root"
	troot=$dir/trixie
	rm -rf "$troot"
	cp -a "$base" "$troot"
	# What a trixie machine here has and the cached root lacks: this
	# host's certificate authorities (the egress proxy pip's CUDA header
	# wheel comes through), no daemon started by a package's postinst.
	for f in /usr/local/share/ca-certificates/*.crt; do
		[[ -f $f ]] || continue
		mkdir -p "$troot/usr/local/share/ca-certificates"
		cp "$f" "$troot/usr/local/share/ca-certificates/"
	done
	printf '#!/bin/sh\nexit 101\n' >"$troot/usr/sbin/policy-rc.d"
	chmod 755 "$troot/usr/sbin/policy-rc.d"
	git -c safe.directory="$repo" clone -q "$repo" "$troot/root/kvpool"
	"$repo/tools/vm/build-root.sh" --run "$troot" /bin/bash -c \
		'cd /root/kvpool && tools/packaging/test-install.sh --in-trixie' \
		2>&1 | tee "$dir/logs/trixie.log" || rc=$?
	return "$rc"
}

case ${1:-} in
--in-root)	shift; in_root "$@"; exit ;;
--in-vm)	shift; in_vm "$@"; exit ;;
--in-trixie)	shift; in_trixie "$@"; exit ;;
esac

KVPOOL_CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
dir=/var/tmp/kvpool-fresh-install keep=() suite=
while (($#)); do
	case $1 in
	--dir)		dir=${2:?--dir wants a folder}; shift 2 ;;
	--keep-root)	keep=(--keep-root); shift ;;
	--suite)	suite=${2:?--suite wants bookworm or trixie}; shift 2
			[[ $suite == bookworm || $suite == trixie ]] ||
				die "--suite $suite: bookworm or trixie" ;;
	-h|--help)	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' \
				"${BASH_SOURCE[0]}"; exit 0 ;;
	*)		die "unknown argument: $1" ;;
	esac
done
((EUID == 0)) || die "run it as root (fresh-check.sh's debootstrap and chroot)"
dir=$(realpath -m "$dir")

rc_trixie=0
if [[ $suite == trixie ]]; then
	trixie_half
	exit
fi

# The kernels the VM lane uses: their releases from tools/vm's cache.
"$repo/tools/vm/get-kernels.sh" 6.1 6.12 >/dev/null
# shellcheck source=/dev/null # a kernel's info, in the cache
krel() { (. "$KVPOOL_CACHE/kernels/$1/info" && echo "$KREL"); }
k61=$(krel 6.1) k612=$(krel 6.12)
t0=$SECONDS
say "the fresh root: tools/fresh-check.sh --dir $dir (kernels $k61, $k612)"
rc_root=0
"$repo/tools/fresh-check.sh" --dir "$dir" "${keep[@]}" \
	--run "tools/packaging/test-install.sh --in-root $k61 $k612" ||
	rc_root=$?
root=$dir/root
say "root done in $((SECONDS - t0)) s, exit $rc_root (logs: $dir/logs)"
ko_path=$root/lib/modules/$k61/updates/dkms/kvpool.ko
[[ -f $ko_path ]] || die "DKMS installed no $ko_path"

say "the VM: 6.1 with $ko_path"
t0=$SECONDS
"$repo/tools/vm/vm-run.sh" --kernel 6.1 --module "$ko_path" --timeout 400 \
	-- "$here/test-install.sh" --in-vm "$root" | tee "$dir/logs/vm.log"
rc=${PIPESTATUS[0]}
say "VM done in $((SECONDS - t0)) s, exit $rc"
if [[ -z $suite ]]; then
	t0=$SECONDS
	trixie_half || rc_trixie=$?
	say "trixie done in $((SECONDS - t0)) s, exit $rc_trixie (log: $dir/logs/trixie.log)"
fi
((rc == 0 && rc_root == 0 && rc_trixie == 0))
