#!/bin/bash
# shellcheck disable=SC2016 # the bash -c checks expand their own $1
# SPDX-License-Identifier: GPL-2.0-only
#
# unit-test.sh: the packaging's shell logic without the module, root or
# udev: kvpool-setup against a fake kvpoolctl, udevadm and sysfs (the
# order of its udev calls, the names the udev rule asks it for, a rerun,
# a bad file, udev that does not settle, no udev, no module), the bash
# completion of kvpoolctl against kvpoolctl(8), and kvpool-gpud.service
# (systemd-analyze verify and security, offline). The real thing (the
# module, the packaged tools, udevadm test of the rule) is
# tools/packaging/test-install.sh's VM half.
#
# Usage: tools/packaging/unit-test.sh   (build-debs.sh --check runs it)
# Prints a PASS or FAIL line per check, then "N passed, N failed"; exit
# status 0 when none failed. Takes a second or two.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
setup=$here/kvpool-setup
pass=0 fail=0
ok() { echo "PASS packaging: $*"; pass=$((pass + 1)); }
ko() { echo "FAIL packaging: $*"; fail=$((fail + 1)); }
# check DESCRIPTION CMD...: PASS or FAIL as CMD succeeds.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else ko "$what"; fi
}

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
sys=$t/sys log=$t/log state=$t/state bin=$t/bin
mkdir -p "$sys/class/kvpool" "$sys/module/kvpool" "$bin"

# The fakes log one line per call to $log, in order. kvpoolctl create
# makes the next kvpoolN folder in the fake sysfs and prints N.
cat >"$bin/kvpoolctl" <<'EOF'
#!/bin/sh
echo "kvpoolctl $*" >>"$FAKE_LOG"
case $1 in
create)	n=1
	while [ -e "$KVPOOL_SYSFS/class/kvpool/kvpool$n" ]; do n=$((n + 1)); done
	mkdir "$KVPOOL_SYSFS/class/kvpool/kvpool$n"
	echo "$n" ;;
arena)	[ "$2" = show ] && echo '{"kind": "none"}' ;;
esac
exit 0
EOF
# udevadm: FAKE_SETTLE is settle's exit status.
cat >"$bin/udevadm" <<'EOF'
#!/bin/sh
echo "udevadm $*" >>"$FAKE_LOG"
[ "$1" = settle ] && exit "${FAKE_SETTLE:-0}"
exit 0
EOF
cat >"$bin/modprobe" <<'EOF'
#!/bin/sh
echo "modprobe $*" >>"$FAKE_LOG"
exit 1
EOF
chmod +x "$bin"/*
# udevd's control socket, there when udev runs: a real socket file.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	"$t/control"
export KVPOOLCTL=$bin/kvpoolctl UDEVADM=$bin/udevadm KVPOOL_SYSFS=$sys \
	KVPOOL_UDEV_CONTROL=$t/control FAKE_LOG=$log PATH=$bin:$PATH

cat >"$t/pools.conf" <<'EOF'
# two pools, one of a GPU
pool chat --pages 4096 --page-tokens 16 --rows 64 --row-tokens 4096
pool docs --pages 1K --page-tokens 1 --rows 16 --row-tokens 1024 --gpu 0000:3b:00.0
arena chat --host --page-bytes 4096
wmark docs --low 10 --high 20
tenant chat --cgroup /system.slice/chat.service --max 100
EOF
# run ARGS...: kvpool-setup ARGS; its output in $out, status in $rc.
run() {
	: >"$log"
	out=$("$setup" "$@" 2>&1) && rc=0 || rc=$?
}

# --- a first run.
run --config "$t/pools.conf" --state "$state"
check "kvpool-setup: exit 0 on a good file (got $rc)" test "$rc" = 0
check "kvpool-setup: chat is kvpool1, docs kvpool2 (state files)" \
	test "$(cut -d' ' -f1 "$state/chat" "$state/docs" | tr '\n' ' ')" = "1 2 "
# udev last: the change events after every kvpoolctl call (the names are
# in the state by then), then settle, then nothing.
calls=$(cut -d' ' -f1-2 "$log" | tr '\n' ',')
check "kvpool-setup: kvpoolctl, then udevadm trigger of the pools, then settle" \
	test "$calls" = "kvpoolctl create,kvpoolctl create,kvpoolctl arena,kvpoolctl wmark,kvpoolctl tenant,udevadm trigger,udevadm settle,"
check "kvpool-setup: the trigger is a change event of subsystem kvpool" \
	grep -qx "udevadm trigger --action=change --subsystem-match=kvpool" "$log"
check "kvpool-setup: the arena and wmark name the pools' ids" \
	bash -c 'grep -qx "kvpoolctl arena create 1 --host --page-bytes 4096" "$1" &&
		 grep -qx "kvpoolctl wmark 2 --low 10 --high 20" "$1"' _ "$log"

# --- what the udev rule asks: --name kvpoolN.
name() { "$setup" --state "$state" --name "$1" 2>&1; }
check "--name kvpool1: chat" test "$(name kvpool1)" = chat
check "--name kvpool2: docs" test "$(name kvpool2)" = docs
check "--name kvpool3 (no such pool): nothing, exit 1" \
	bash -c '! out=$("$@") && [[ -z $out ]]' _ "$setup" --state "$state" --name kvpool3
mkdir "$sys/class/kvpool/kvpool3"
check "--name kvpool3 (a pool kvpool-setup did not make): nothing, exit 1" \
	bash -c '! out=$("$@") && [[ -z $out ]]' _ "$setup" --state "$state" --name kvpool3
check "--name with no kvpoolN: usage, exit 2" \
	bash -c '"$@" 2>/dev/null; [[ $? == 2 ]]' _ "$setup" --state "$state" --name bogus

# --- run again: nothing made twice, udev waited for again.
run --config "$t/pools.conf" --state "$state"
check "rerun: exit 0, no create, both pools made earlier" \
	bash -c '[[ $1 == 0 ]] && ! grep -q "kvpoolctl create" "$2" &&
		 [[ $(grep -c "made earlier" <<<"$3") == 2 ]]' _ "$rc" "$log" "$out"
check "rerun: the arena kept (the fake says none: created again only if none)" \
	grep -q "kvpoolctl arena create 1" "$log"
check "rerun: udevadm trigger and settle again" \
	bash -c 'grep -q "^udevadm trigger" "$1" && grep -q "^udevadm settle" "$1"' _ "$log"

# --- a module reloaded: pool 1 is another pool (another sysfs node).
# The new node is made before the old goes, or the file system could
# give it the old one's inode number.
mkdir "$sys/class/kvpool/kvpool1.new"
rmdir "$sys/class/kvpool/kvpool1"
mv "$sys/class/kvpool/kvpool1.new" "$sys/class/kvpool/kvpool1"
check "--name kvpool1 after a reload: not chat (stale state), exit 1" \
	bash -c '! out=$("$@") && [[ -z $out ]]' _ "$setup" --state "$state" --name kvpool1

# --- udev does not settle: the unit must fail, not report ready.
rm -rf "$state" "$sys/class/kvpool"/*
FAKE_SETTLE=1 run --config "$t/pools.conf" --state "$state"
check "udev not settled: exit 1, said so" \
	bash -c '[[ $1 == 1 ]] && grep -q "udev did not settle" <<<"$2"' _ "$rc" "$out"

# --- no udev (a chroot): no udevadm call, exit 0.
KVPOOL_UDEV_CONTROL=$t/none run --config "$t/pools.conf" --state "$state"
check "no udev running: exit 0, udevadm not called" \
	bash -c '[[ $1 == 0 ]] && ! grep -q "^udevadm" "$2"' _ "$rc" "$log"

# --- a bad file: nothing done, not even udev.
printf 'pool a --pages 8\ntenant b --uid 0\npoool x y\n' >"$t/bad.conf"
run --config "$t/bad.conf" --state "$state"
check "bad file: exit 2, both errors named, nothing run" \
	bash -c '[[ $1 == 2 ]] && grep -q "bad.conf:2: pool .b. is not defined" <<<"$2" &&
		 grep -q "bad.conf:3: unknown directive .poool." <<<"$2" &&
		 [[ ! -s $3 ]]' _ "$rc" "$out" "$log"
run --config "$t/pools.conf" --check
check "--check: exit 0, nothing run" \
	bash -c '[[ $1 == 0 ]] && [[ ! -s $2 ]]' _ "$rc" "$log"

# --- no module, and modprobe fails (as in the unit, without
# CAP_SYS_MODULE, when modprobe@kvpool.service could not load it).
rmdir "$sys/module/kvpool"
run --config "$t/pools.conf" --state "$state"
check "no module: modprobe tried, exit 3, no kvpoolctl" \
	bash -c '[[ $1 == 3 ]] && grep -q "^modprobe kvpool" "$2" &&
		 ! grep -q "^kvpoolctl" "$2"' _ "$rc" "$log"

# --- the udev rule calls what the package installs.
rules=$repo/tools/udev/60-kvpool.rules
check "60-kvpool.rules: by-name from /usr/libexec/kvpool/kvpool-setup --name %k" \
	grep -q 'PROGRAM="/usr/libexec/kvpool/kvpool-setup --name %k".*SYMLINK+="kvpool/by-name/%c"' "$rules"
check "60-kvpool.rules: by-gpu from ATTR{gpu}, only when it is not empty" \
	grep -q 'ATTR{gpu}=="?\*", SYMLINK+="kvpool/by-gpu/$attr{gpu}"' "$rules"
check "kvpoolctl.install installs kvpool-setup in /usr/libexec/kvpool" \
	grep -q '^tools/packaging/kvpool-setup usr/libexec/kvpool/$' \
	"$here/debian/kvpoolctl.install"

# --- bash completion. complete WORDS...: what it offers for the last
# word, sorted, one line.
rm -rf "$sys/class/kvpool"/*
mkdir -p "$sys/class/kvpool/kvpool0" "$sys/class/kvpool/kvpool7" \
	"$sys/bus/pci/devices/0000:3b:00.0" "$sys/bus/pci/devices/0000:00:1f.2"
echo 0x030200 >"$sys/bus/pci/devices/0000:3b:00.0/class"
echo 0x010601 >"$sys/bus/pci/devices/0000:00:1f.2/class"
complete_words() {
	bash -c '. "$1"; shift
		 COMP_WORDS=("$@") COMP_CWORD=$(($# - 1))
		 _kvpoolctl
		 printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
		_ "$repo/tools/completion/kvpoolctl" "$@"
}
check "completion: kvpoolctl st -> status" \
	test "$(complete_words kvpoolctl st)" = "status "
check "completion: kvpoolctl tenant '' -> set remove list" \
	test "$(complete_words kvpoolctl tenant '')" = "list remove set "
check "completion: kvpoolctl wmark '' -> the pools 0 7" \
	test "$(complete_words kvpoolctl wmark '')" = "0 7 "
check "completion: kvpoolctl wmark 7 --l -> --low" \
	test "$(complete_words kvpoolctl wmark 7 --l)" = "--low "
check "completion: kvpoolctl create --gpu '' -> the display device only" \
	test "$(complete_words kvpoolctl create --gpu '')" = "0000:3b:00.0 "
check "completion: kvpoolctl status --units p -> pages" \
	test "$(complete_words kvpoolctl status --units p)" = "pages "
check "completion: kvpoolctl status --units pages '' -> the pools (a value is no POOL)" \
	test "$(complete_words kvpoolctl status --units pages '')" = "0 7 "
check "completion: kvpoolctl arena create 0 --c -> --chunks --cuda" \
	test "$(complete_words kvpoolctl arena create 0 --c)" = "--chunks --cuda "
# Every command and subcommand of kvpoolctl(8)'s synopsis is offered,
# and no other: "COMMAND [SUBCOMMAND]" lines, as .SY kvpoolctl's next
# line names them.
synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' \
	"$repo/tools/kvpoolctl/kvpoolctl.8" |
	awk '/^\.SY kvpoolctl/ { getline; if ($1 == ".B") print $2, $3 }')
words_of() { tr ' ' '\n' | grep -v '^-' | grep -vx help | grep . | sort | tr '\n' ' '; }
man_cmds=$(awk '{ print $1 }' <<<"$synopsis" | sort -u | tr '\n' ' ')
check "completion: the commands of kvpoolctl(8) ($man_cmds)" \
	test "$(complete_words kvpoolctl '' | words_of)" = "$man_cmds"
for c in tenant arena; do
	subs=$(awk -v c="$c" '$1 == c { print $2 }' <<<"$synopsis" | sort | tr '\n' ' ')
	check "completion: kvpoolctl $c's subcommands of kvpoolctl(8) ($subs)" \
		test "$(complete_words kvpoolctl "$c" '' | words_of)" = "$subs"
done
# Each command's options in its synopsis are offered after a "-":
# "COMMAND [SUBCOMMAND]|OPTION..." per .SY block.
while IFS='|' read -r cmd opts; do
	# shellcheck disable=SC2086 # the command's words, split
	offered=" $(complete_words kvpoolctl $cmd -) " missing=''
	for o in $opts; do
		[[ $offered == *" $o "* ]] || missing+=" $o"
	done
	check "completion: kvpoolctl $cmd offers the options of its synopsis${missing:+ (not:$missing)}" \
		test -z "$missing"
done < <(python3 - "$repo/tools/kvpoolctl/kvpoolctl.8" <<'PY'
import re, sys
syn = open(sys.argv[1]).read().split(".SH SYNOPSIS", 1)[1]
syn = syn.split(".SH DESCRIPTION", 1)[0]
for blk in syn.split(".SY kvpoolctl")[1:]:
    blk = blk.split(".YS")[0].replace("\\-", "-")
    first = blk.strip().splitlines()[0].split()
    if first[0] != ".B":
        continue	# the synopsis of kvpoolctl itself
    opts = sorted(set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", blk)))
    print(" ".join(first[1:]) + "|" + " ".join(opts))
PY
)

# --- kvpool-gpud.service: systemd's own checks, offline (the binary a
# stand-in: verify wants its ExecStart executable), and what its comment
# promises. The daemon itself is tools/kvpool-gpud's make check.
gpud=$repo/tools/packaging/systemd/kvpool-gpud.service
sed "s|^ExecStart=/usr/sbin/kvpool-gpud\$|ExecStart=$(command -v true)|" \
	"$gpud" >"$t/kvpool-gpud.service"
if command -v systemd-analyze >/dev/null; then
	check "kvpool-gpud.service: systemd-analyze verify" \
		systemd-analyze verify --man=no "$t/kvpool-gpud.service"
	e=$(systemd-analyze security --offline=yes --no-pager \
		"$t/kvpool-gpud.service" 2>&1 |
		sed -n 's/^.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	check "kvpool-gpud.service: systemd-analyze security exposure ${e:-?} (at most 4.0)" \
		awk -v e="${e:-99}" 'BEGIN { exit !(e <= 4.0) }'
else
	ko "kvpool-gpud.service: no systemd-analyze to verify it with"
fi
for line in ExecStart=/usr/sbin/kvpool-gpud Restart=always RestartSec=1 \
	After=kvpool-setup.service "DeviceAllow=/dev/kvpool-control rw" \
	"DeviceAllow=char-nvidia-frontend rw" \
	"DeviceAllow=char-nvidia-uvm rw" CapabilityBoundingSet=CAP_SYS_ADMIN \
	WantedBy=multi-user.target; do
	check "kvpool-gpud.service: $line" grep -qx -- "$line" "$gpud"
done
check "kvpool-gpud.service: root (no User=, no DynamicUser=)" \
	bash -c '! grep -qE "^(User|DynamicUser)=" "$1"' _ "$gpud"
check "kvpoolctl.install ships kvpool-gpud, its man page and its unit" \
	bash -c 'grep -qx "usr/sbin/kvpool-gpud" "$1" &&
		 grep -qx "usr/share/man/man8/kvpool-gpud.8" "$1" &&
		 grep -qx "tools/packaging/systemd/kvpool-gpud.service lib/systemd/system/" "$1"' \
	_ "$here/debian/kvpoolctl.install"

echo "$pass passed, $fail failed"
((fail == 0))
