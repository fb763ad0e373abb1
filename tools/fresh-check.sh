#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# fresh-check.sh: prove that the README's two commands work on a brand-new
# Debian 12 machine, i.e. that everything they need is in some install list
# (tools/vm/install-deps.sh, selftests/fuzz/install-deps.sh, sim.sh's
# gnuplot, ...) and nothing is found only because someone once installed it
# by hand on the machine at hand.
#
# Usage: tools/fresh-check.sh [--dir DIR] [--keep-root] [--sim-only]
#                             [--run CMD] [--help]
#
#   --dir DIR     the work folder (default $KVPOOL_FRESH_DIR, else
#                 /var/tmp/kvpool-fresh); whatever an earlier run left in
#                 DIR/root is thrown away first
#   --keep-root   start from the pristine debootstrap result that an earlier
#                 --keep-root run saved as DIR/base.tar (made now if there
#                 is none, or it is over 7 days old): saves debootstrap's
#                 1-4 min. The root the commands run in is still a plain
#                 debootstrap result; only the download and unpacking are
#                 skipped. Without --keep-root nothing of an earlier run is
#                 used (base.tar is left alone, not read).
#   --sim-only    run only the README's first command (a quick shake-out
#                 of this script: 3-8 min instead of about an hour)
#   --run CMD     run CMD (a bash command line) instead of the README's
#                 commands, the same way; for other checks that need a
#                 fresh root (tools/packaging/test-install.sh)
#
# Env: KVPOOL_FRESH_DIR (see --dir), KVPOOL_FRESH_MIRROR (default
# http://deb.debian.org/debian), KVPOOL_FRESH_SECURITY (default
# http://deb.debian.org/debian-security).
#
# What it does, as root on an amd64 Debian (or Debian-like) host:
#   1. installs what it needs itself on the host (debootstrap,
#      debian-archive-keyring, git), if missing
#   2. debootstraps Debian 12 (bookworm, amd64, the default variant: what
#      debootstrap and the installer's base system give) into DIR/root,
#      and adds what a Debian 12 machine has and a bare debootstrap lacks:
#      the apt sources bookworm, bookworm-updates, bookworm-security (main;
#      deb822 /etc/apt/sources.list.d/debian.sources, as cloud images have),
#      the host's resolv.conf, the host's apt.conf.d files that set
#      Acquire:: options (the machine image's registry settings), its
#      local certificate authorities (/usr/local/share/ca-certificates:
#      the egress proxy the package index is reached through), and a
#      policy-rc.d that keeps any package's daemon from starting in the
#      root. The apt lists stay empty, as on a
#      machine nobody has run `apt-get update` on: the install scripts must
#      cope with that too.
#   3. puts the project at /root/kvpool in the root: a `git clone` of this
#      checkout's committed HEAD (what CI sees), not the working tree
#   4. makes the root a mount point (a bind mount onto itself, as / is on
#      a machine), then mounts /dev, /dev/pts, /proc, /sys (bind mounts)
#      and a tmpfs on /dev/shm in it; every mount is undone on exit, also on a
#      failure, Ctrl-C or TERM (any process still running in the root is
#      stopped first)
#   5. runs the commands of the README's first code block, exactly as
#      written there (tools/sim.sh, then tools/check.sh), in /root/kvpool,
#      as root, with only HOME, PATH and TERM set (env -i); the test
#      command also gets CI=true, as CI runs it (.ci/run), which turns on
#      the debug-kernel lane. stdin is /dev/null. Both run even if the
#      first fails. Each one's output goes to DIR/logs/N-NAME.log and here.
#   6. prints a summary (also DIR/logs/summary.txt): each command's exit
#      status and wall time, and its last lines (tools/check.sh's last is
#      "N passed, N failed, N skipped").
#
# What it proves: on a machine with no more than Debian 12's base system
# (priorities required and important; an installed or cloud machine has
# that and more), the two commands install all they need and then pass,
# from committed code. What it does not: a leaner start such as a minbase
# container image (no kmod, cpio, procps, ...), which the README does not
# promise; anything about the host's kernel (QEMU runs under TCG in the
# root as on any machine).
#
# Takes about 50 min on 2 busy cores (measured 2026-12-01, load 4-7:
# 49:40 in all): debootstrap 1-4 min (3:25), tools/sim.sh 2-5 min with
# its apt installs and kernel download (5:03), tools/check.sh about 40 min
# (41:07, of which the 6.1-debug kernel build 15 min and its lane 12 min;
# the build alone is 8-25 min depending on load). Disk: 4.7 GB in DIR/root
# after the run (packages, kernels, the debug kernel build), plus 0.3 GB
# of base.tar with --keep-root. DIR/root is left after the run, for a look
# inside; the next run removes it, or `rm -rf DIR` (nothing is mounted
# once this script has ended). It never touches the host's /boot, kernels or
# /var/cache/kvpool: the commands' cache is the root's own.
#
# Not part of CI or tools/check.sh: it takes too long. Run it after
# changing what any script installs, or before a release.
#
# Exit status: 0 when every command ran and exited 0; 1 when one failed;
# 2 when this script could not set the root up (usage, debootstrap, ...).
set -euo pipefail

prog=fresh-check
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${KVPOOL_FRESH_DIR:-/var/tmp/kvpool-fresh}
mirror=${KVPOOL_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${KVPOOL_FRESH_SECURITY:-http://deb.debian.org/debian-security}
suite=bookworm arch=amd64
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
keep_root=0 sim_only=0 run_cmd=
# The PATH a root shell on Debian 12 has.
root_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 2; }
usage() {
	# The header comment is the manual.
	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' \
		"${BASH_SOURCE[0]}"
	exit "${1:-0}"
}
# mmss SECONDS: "12:05".
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

while (($#)); do
	case $1 in
	--dir)		[[ -n ${2-} ]] || die "--dir wants a folder"
			dir=$2; shift 2 ;;
	--keep-root)	keep_root=1; shift ;;
	--sim-only)	sim_only=1; shift ;;
	--run)		[[ -n ${2-} ]] || die "--run wants a command"
			run_cmd=$2; shift 2 ;;
	-h|--help)	usage 0 ;;
	*)		say "unknown argument: $1"; usage 2 >&2 ;;
	esac
done

((EUID == 0)) || die "run it as root (debootstrap, chroot and mounts need it)"
# A foreign-arch root would need qemu-user; not worth it for a CI proof.
[[ $(dpkg --print-architecture 2>/dev/null) == "$arch" ]] ||
	die "the host must be $arch Debian (dpkg --print-architecture)"
# The folder is removed recursively: insist on a plain, specific path.
[[ $dir == /* && $dir != *[[:space:]]* ]] ||
	die "--dir wants an absolute path without spaces, not '$dir'"
dir=$(realpath -m "$dir")
case $dir in
/|/var|/var/tmp|/tmp|/root|/home|/usr|/etc|/var/cache|/var/cache/kvpool*)
	die "--dir $dir: refusing a system folder; name one of its own" ;;
esac
root=$dir/root logs=$dir/logs base=$dir/base.tar

# --- the host's own needs: debootstrap and its keyring, git for the clone.
need=()
for p in debootstrap debian-archive-keyring git; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ $st == ii* ]] || need+=("$p")
done
if ((${#need[@]})); then
	say "installing on the host: ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Without an update first: the lists are usually there, and current
	# enough; with one when they are not.
	apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends \
		"${need[@]}" >&2 ||
	{ apt-get -q update >&2 &&
	  apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends \
		"${need[@]}" >&2; } || die "could not install ${need[*]}"
fi

# A folder this script did not make is not this script's to empty.
if [[ -d $dir && ! -e $dir/.kvpool-fresh ]] &&
   [[ -n $(ls -A "$dir") ]]; then
	die "$dir is not empty and was not made by $prog (no .kvpool-fresh)"
fi
mkdir -p "$dir"
touch "$dir/.kvpool-fresh"
# Two runs in one folder would unmount and delete each other's root.
exec 9>"$dir/.lock"
flock -n 9 || die "another $prog is using $dir"

# mounts_under DIR: every mount point at or below DIR, deepest first.
mounts_under() {
	findmnt -rn -o TARGET | awk -v r="$1" '$0 == r || index($0, r "/") == 1' |
		sort -r
}
# root_pids: the processes whose root is the fresh root (the commands, and
# QEMU and whatever else they started). Only ever ours.
root_pids() {
	local p
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] &&
			echo "${p#/proc/}"
	done
	return 0
}

mounts=()	# what mount_in mounted, in order
job=		# the running command's background pipeline
mount_in() {	# PATH-IN-ROOT MOUNT-ARGS...
	local dest=$root$1
	shift
	mount "$@" "$dest"
	mounts+=("$dest")
}
stop_root_procs() {
	local pids n
	mapfile -t pids < <(root_pids)
	((${#pids[@]})) || return 0
	say "stopping ${#pids[@]} processes still running in the root"
	kill -TERM "${pids[@]}" 2>/dev/null || true
	for ((n = 0; n < 10; n++)); do
		sleep 1
		mapfile -t pids < <(root_pids)
		((${#pids[@]})) || return 0
	done
	kill -KILL "${pids[@]}" 2>/dev/null || true
	sleep 1
}
# shellcheck disable=SC2317 # invoked by the trap
unmount_all() {
	local i m left
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		m=${mounts[i]}
		# Lazy as a last resort: a mount that stays would make the next
		# run refuse to delete the root, not delete through it.
		umount "$m" 2>/dev/null || umount -l "$m" ||
			say "could not unmount $m"
	done
	mounts=()
	left=$(mounts_under "$root")
	[[ -z $left ]] || say "still mounted, unmount by hand: $left"
}
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	local rc=$?
	# Every step, whatever fails before it: errexit off. A second Ctrl-C
	# must not stop it halfway either (it takes at most ~12 s).
	set +e
	trap - EXIT
	trap '' INT TERM HUP
	stop_root_procs
	[[ -z $job ]] || kill "$job" 2>/dev/null
	unmount_all
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# --- throw away the previous run's root. A run killed with SIGKILL leaves
# its mounts: undo them, and never rm across a mount point (--one-file-
# system, and a check that nothing is mounted any more).
if [[ -e $root ]]; then
	old=$(root_pids | tr '\n' ' ')
	[[ -z $old ]] ||
		die "processes of an earlier run still run in $root: $old(stop them first)"
	while read -r m; do
		[[ -n $m ]] || continue
		say "unmounting $m, left by an earlier run"
		umount "$m" || umount -l "$m"
	done < <(mounts_under "$root")
	[[ -z $(mounts_under "$root") ]] || die "$root still has mounts; not deleting it"
	say "removing the previous root $root"
	rm -rf --one-file-system "$root"
	[[ ! -e $root ]] || die "could not remove $root"
fi
rm -rf "$logs"
mkdir -p "$logs"

commit=$(git -C "$repo" -c safe.directory="$repo" rev-parse HEAD)
dirty=$(git -C "$repo" -c safe.directory="$repo" status --porcelain | wc -l)
t_all=$SECONDS

# --- the root: a plain debootstrap result (or the same, saved earlier).
base_id="$suite $arch default $mirror"
t0=$SECONDS
if ((keep_root)) && [[ -f $base && $(cat "$base.info" 2>/dev/null) == "$base_id" ]] &&
   [[ -n $(find "$base" -mtime -7) ]]; then
	say "unpacking the saved debootstrap result $base"
	mkdir -p "$root"
	tar -C "$root" --numeric-owner --xattrs --xattrs-include='*' -xpf "$base"
	how="unpacked from $base ($(date -r "$base" +%F))"
else
	say "debootstrap $suite $arch from $mirror into $root (1-4 min; log: $logs/debootstrap.log)"
	if ! debootstrap --arch="$arch" --keyring="$keyring" "$suite" "$root" \
		"$mirror" >"$logs/debootstrap.log" 2>&1; then
		tail -n 20 "$logs/debootstrap.log" >&2
		die "debootstrap failed (whole log: $logs/debootstrap.log)"
	fi
	how=debootstrap
	if ((keep_root)); then
		# Saved before anything below touches it: the pristine result.
		say "saving the debootstrap result as $base"
		tar -C "$root" --numeric-owner --xattrs --xattrs-include='*' \
			-cf "$base.tmp" .
		mv "$base.tmp" "$base"
		echo "$base_id" >"$base.info"
	fi
fi
t_base=$((SECONDS - t0))

# What a Debian 12 machine has and debootstrap does not give: all three
# suites (debootstrap writes one sources.list line, bookworm main only).
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: $keyring

Types: deb
URIs: $security
Suites: $suite-security
Components: main
Signed-By: $keyring
EOF
# Name resolution for apt: the host's, dereferenced (systemd-resolved and
# friends make it a symlink that means nothing inside the root).
rm -f "$root/etc/resolv.conf"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# 101: "action forbidden"; invoke-rc.d then starts no daemon in the root.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
# This workplace's machines come with apt settings for the package
# registry they reach (a frozen mirror: sid's Release file is past its
# Valid-Until there, and apt refuses it without them). A fresh machine of
# that kind has them, a bare debootstrap does not: carry over the host's
# apt.conf.d files that set Acquire:: options, and nothing else.
for f in /etc/apt/apt.conf.d/*; do
	[[ -f $f ]] && grep -q '^[[:space:]]*Acquire::' "$f" || continue
	cp "$f" "$root/etc/apt/apt.conf.d/"
	say "apt settings from the host: ${f##*/}"
done
# Their network, too: the HTTPS of the package index (pip) goes through
# an egress proxy whose certificate authority the machine image adds to
# /usr/local/share/ca-certificates. A fresh machine of that kind has it;
# on the open internet the public authorities do. ca-certificates, when a
# script installs it (python3-pip needs it), adds these to the bundle.
for f in /usr/local/share/ca-certificates/*.crt; do
	[[ -f $f ]] || continue
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp "$f" "$root/usr/local/share/ca-certificates/"
	say "certificate authority from the host: ${f##*/}"
done

# --- the project: committed HEAD only, as CI checks it out. Cloned with
# the host's git (the root has none, as a fresh machine has none) and
# without hardlinks, so nothing in the root shares an inode with the
# checkout.
say "cloning $repo at ${commit:0:12} into /root/kvpool"
((dirty == 0)) ||
	say "note: $dirty changed or untracked files in $repo are not in the clone (HEAD only)"
git -c safe.directory="$repo" clone -q --no-hardlinks --no-checkout \
	"$repo" "$root/root/kvpool"
git -C "$root/root/kvpool" checkout -q --detach "$commit"

# The commands: the README's first code block, comments dropped.
mapfile -t cmds < <(awk '
	/fresh Debian 12/ { seen = 1 }
	seen && !inb && /^```sh/ { inb = 1; next }
	inb && /^```/ { exit }
	inb { sub(/[ \t]*#.*/, ""); sub(/^[ \t]+/, ""); if ($0 != "") print }
	' "$root/root/kvpool/README.md")
((${#cmds[@]} == 2)) ||
	die "README.md: expected two commands in the code block after 'fresh Debian 12', found ${#cmds[@]}: ${cmds[*]-}"
((sim_only)) && cmds=("${cmds[0]}")
[[ -z $run_cmd ]] || cmds=("$run_cmd")

# --- what QEMU, apt and the tests need of a running system. Slave
# propagation: nothing mounted below these (the tmpfs on dev/shm) may
# reach the host's /dev, whatever the host's propagation is.
# The root is a mount point of its own first, as / is on a machine:
# `unshare --mount` (build-root.sh runs the 7.x builds that way) cannot
# change the propagation of a / that is a mere folder (EINVAL).
mount_in / --bind "$root"
mount_in /dev --bind --make-slave /dev
mount_in /dev/pts --bind --make-slave /dev/pts
# Its own /dev/shm: the bind above shows the host's bare devtmpfs folder
# there, and POSIX shm and semaphores must not land in the host's /dev.
mount_in /dev/shm -t tmpfs -o mode=1777,nosuid,nodev tmpfs
mount_in /proc -t proc proc
mount_in /sys --bind --make-slave /sys
# /tmp stays the root's own folder on disk, as on a Debian 12 install
# (tmpfs /tmp came with trixie).

# run_one N COMMAND ENV...: run COMMAND in the clone under env -i ENV...;
# sets rcs[N], secs[N], logfile[N].
rcs=() secs=() logfile=()
run_one() {
	local n=$1 cmd=$2 name log t0 rc=0
	shift 2
	name=${cmd%% *}
	name=${name##*/}
	log=$logs/$((n + 1))-${name%.sh}.log
	logfile[n]=$log
	say "running '$cmd' in the root (env: $*; log: $log)"
	{
		echo "# $prog: '$cmd' in $root/root/kvpool at $commit"
		echo "# env -i $*; started $(date -Is)"
	} >"$log"
	t0=$SECONDS
	# In the background and waited for: bash runs a trap only between
	# commands and `wait` is one, so Ctrl-C or TERM stops the run now, not
	# when the command ends. The subshell's status is the command's
	# (pipefail; tee exits 0).
	(chroot "$root" /usr/bin/env -i "$@" /bin/bash -c "cd /root/kvpool && $cmd" \
		</dev/null 9>&- 2>&1 | tee -a "$log") &
	job=$!
	wait "$job" || rc=$?
	job=
	secs[n]=$((SECONDS - t0))
	rcs[n]=$rc
	echo "# exit $rc after $(mmss "${secs[n]}"), $(date -Is)" >>"$log"
	say "'$cmd' exited $rc after $(mmss "${secs[n]}")"
}

env_base=(HOME=/root "PATH=$root_path" "TERM=${TERM:-dumb}")
for i in "${!cmds[@]}"; do
	if ((i == 0)); then
		run_one "$i" "${cmds[i]}" "${env_base[@]}"
	else
		run_one "$i" "${cmds[i]}" "${env_base[@]}" CI=true
	fi
done

# --- the summary.
stop_root_procs
used=$(du -sx --block-size=1M "$root" 2>/dev/null | cut -f1)
fail=0
for i in "${!cmds[@]}"; do
	((rcs[i] == 0)) || fail=1
done
{
	echo
	echo "=== $prog summary ==="
	echo "commit  $commit$( ((dirty)) && echo " ($dirty changed or untracked files in the checkout not tested)")"
	echo "root    $root: Debian $suite $arch, $how in $(mmss "$t_base"); ${used:-?} MiB after the run"
	for i in "${!cmds[@]}"; do
		printf 'command %-16s exit %-3s %8s   %s\n' "${cmds[i]}" \
			"${rcs[i]}" "$(mmss "${secs[i]}")" "${logfile[i]}"
	done
	for i in "${!cmds[@]}"; do
		echo "--- ${cmds[i]}: last lines"
		# Without the "# exit" line run_one added.
		grep -v '^# exit [0-9]* after ' "${logfile[i]}" | tail -n 8
	done
	echo "---"
	echo "total   $(mmss $((SECONDS - t_all))) wall"
	if ((fail)); then
		echo "$prog: FAIL"
	else
		echo "$prog: PASS"
	fi
} | tee "$logs/summary.txt"
exit "$fail"
