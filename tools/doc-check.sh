#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Fails when the documentation drifts from the code:
#
# - sysfs: the attributes the driver declares in driver/*.c and the What:
#   entries of docs/ABI/testing/sysfs-class-kvpool name the same files;
#   so do the module's parameters (and version) and
#   docs/ABI/testing/sysfs-module-kvpool;
# - ioctls: every ioctl of uapi/linux/kvpool.h is named in
#   docs/userspace-api/kvpool.rst, and every KVPOOL_* name the docs use
#   exists in the header;
# - kernel-doc: scripts/kernel-doc -none has nothing to say about the uapi
#   header and driver/*.h; every kernel-doc directive in docs/ renders
#   (kernel-doc -rst, no warnings); every struct, enum and DOC section the
#   header documents is pulled in by one.
#
# The driver's files are read by pattern (driver/*.c), not by name, so
# moving code between them changes nothing here.
#
# Prints "PASS doc-check: ..." or "FAIL doc-check: ..." per check, with
# the offending names before a FAIL; exits non-zero if any check failed.
# Needs perl and a kernel-doc script: $KVPOOL_KERNEL_DOC, else the one in
# the folder tools/extract-kernel-tools.sh prints, else the one of the
# installed kernel headers (linux-kbuild). Sphinx is not needed.
set -uo pipefail
# sort and comm must agree on the order of names with underscores.
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
rc=0

uapi=uapi/linux/kvpool.h
api_rst=docs/userspace-api/kvpool.rst
abi_class=docs/ABI/testing/sysfs-class-kvpool
abi_module=docs/ABI/testing/sysfs-module-kvpool

pass() { echo "PASS doc-check: $*"; }
fail() { echo "FAIL doc-check: $*"; rc=1; }

# No offenders ($1 empty): pass with $3; else print them and fail with $2.
verdict() {
	if [[ -n $1 ]]; then
		printf '%s\n' "${1%$'\n'}"
		fail "$2"
	else
		pass "$3"
	fi
}

# Lines of $1 not in $2 (both sorted, unique), each prefixed with $3.
missing() {
	comm -23 <(printf '%s\n' "$1") <(printf '%s\n' "$2") | sed "s|^|$3|"
}

# Compares two name lists; $1: what, $2: code's names, $3: docs' names,
# $4: where the docs are.
compare() {
	local what=$1 code=$2 docs=$3 where=$4 out n
	out=$(missing "$code" "$docs" "  not in $where: "
	      missing "$docs" "$code" "  in $where, not in the code: ")
	n=$(printf '%s' "$code" | grep -c .)
	if [[ -z $code ]]; then
		fail "$what: found none in the code (did the declarations change?)"
	else
		verdict "$out" "$what: code and $where differ" \
			"$what ($n, all in $where)"
	fi
}

# The C of driver/*.c without comments, #define bodies joined to one line.
driver_c() {
	perl -0777 -ne '
		s{/\*.*?\*/}{ }gs;
		s{//[^\n]*}{}g;
		s{\\\n}{ }g;
		print;
	' driver/*.c
}

# Names of the sysfs attributes the driver declares: the first argument of
# every *_ATTR*() macro of the kernel (DEVICE_ATTR_RO, __ATTR, CLASS_ATTR_RW,
# ...) and of every macro of the driver's own that passes its argument on
# to one of them (as KVP_ATTR() does); plus every dev_attr_NAME used.
sysfs_names() {
	driver_c | perl -ne '
		BEGIN { $std = qr/\b(?:__ATTR\w*|[A-Z]+_ATTR\w*)\(\s*/; }
		push @lines, $_;
		if (/^\s*#\s*define\s+(\w+)\(([^)]*)\)(.*)$/) {
			my ($mac, $params, $body) = ($1, $2, $3);
			my @p = map { s/\s//gr } split /,/, $params;
			for my $i (0 .. $#p) {
				$wrap{$mac} = $i
					if $body =~ /$std\Q$p[$i]\E\b/;
			}
		}
		END {
			for (@lines) {
				next if /^\s*#/;
				$n{$1} = 1 while /$std(\w+)/g;
				$n{$1} = 1 while /\bdev_attr_(\w+)/g;
				for my $mac (keys %wrap) {
					while (/\b\Q$mac\E\(([^;]*)\)/g) {
						my @a = split /,/, $1;
						my $x = $a[$wrap{$mac}] // "";
						$x =~ s/\s//g;
						$n{$x} = 1 if $x =~ /^\w+$/;
					}
				}
			}
			print "$_\n" for sort grep { !/^_/ } keys %n;
		}
	'
}

# /sys/module/kvpool/ files: module parameters with a non-zero mode, and
# version when the module has MODULE_VERSION().
module_names() {
	driver_c | perl -ne '
		while (/\bmodule_param(?:_named|_cb|_array|_string)?\(([^;]*)\)\s*;/g) {
			my @a = map { s/^\s+|\s+$//gr } split /,/, $1;
			$n{"parameters/$a[0]"} = 1 unless $a[-1] =~ /^0+$/;
		}
		$n{version} = 1 if /\bMODULE_VERSION\(/;
		END { print "$_\n" for sort keys %n; }
	'
}

# The paths of the What: lines of ABI file $1, less the prefix $2.
abi_names() {
	[[ -r $1 ]] || return 0
	perl -ne 'print "$1\n" if /^What:\s+(\S+)/' "$1" |
		sed "s|^$2||" | sort -u
}

# ---- sysfs ----

compare "sysfs attributes of driver/*.c" "$(sysfs_names)" \
	"$(abi_names "$abi_class" '.*/')" "$abi_class"
compare "module files of driver/*.c" "$(module_names)" \
	"$(abi_names "$abi_module" '/sys/module/kvpool/')" "$abi_module"

# ---- ioctls and names ----

ioctls=$(perl -ne 'print "$1\n" if /^#define\s+(KVPOOL_\w+)\s+_IO[RW]*\(/' \
	 "$uapi" | sort -u)
if [[ -z $ioctls ]]; then
	fail "ioctls: found none in $uapi"
elif [[ ! -r $api_rst ]]; then
	fail "ioctls: $api_rst missing"
else
	out=$(for i in $ioctls; do
		grep -qw -- "$i" "$api_rst" || echo "  not in $api_rst: $i"
	      done)
	verdict "$out" "ioctls: not all of $uapi are in $api_rst" \
		"ioctls ($(wc -w <<<"$ioctls"), all in $api_rst)"
fi

# Names such as KVPOOL_FEAT_* (a prefix) are not names: skipped. An
# environment variable a script of the tree reads ($NAME or ${NAME) is
# no ABI name either.
mapfile -t docs < <(find docs -type f \( -name '*.rst' -o -name '*.md' \)
		    find docs/ABI -type f 2>/dev/null)
out=$(perl -ne '
	print "$ARGV: $1\n" while /\b(KVPOOL_[A-Z0-9_]*[A-Z0-9])\b/g;
      ' "${docs[@]}" | sort -u | while read -r file name; do
		grep -qw -- "$name" "$uapi" ||
			grep -rqE -- "\\\$\{?$name\b" tools selftests userlib ||
			echo "  $file $name"
	done)
verdict "$out" "KVPOOL_* names in docs/: some are not in $uapi" \
	"KVPOOL_* names in docs/ (all in $uapi, or variables of the scripts)"

# ---- kernel-doc ----

find_kernel_doc() {
	local d ksrc
	if [[ -n ${KVPOOL_KERNEL_DOC:-} ]]; then
		echo "$KVPOOL_KERNEL_DOC"
		return 0
	fi
	if ksrc=$(tools/extract-kernel-tools.sh 2>/dev/null) &&
	   [[ -r $ksrc/scripts/kernel-doc ]]; then
		echo "$ksrc/scripts/kernel-doc"
		return 0
	fi
	for d in "/lib/modules/$(uname -r)/build" /usr/src/linux-headers-* \
		 /usr/lib/linux-kbuild-*; do
		if [[ -r $d/scripts/kernel-doc ]]; then
			echo "$d/scripts/kernel-doc"
			return 0
		fi
	done
	return 1
}

# Runs kernel-doc; its warnings (stderr, less the note that sphinx-build
# is absent) on stdout, and a non-zero status if there were any.
kdoc() {
	local err status
	if [[ -x $kd ]]; then
		err=$("$kd" "$@" 2>&1 >/dev/null)
	else
		err=$(perl "$kd" "$@" 2>&1 >/dev/null)
	fi
	status=$?
	err=$(grep -v 'Sphinx version not found' <<<"$err")
	[[ -n $err ]] && echo "$err"
	[[ -z $err && $status -eq 0 ]]
}

if ! kd=$(find_kernel_doc); then
	fail "kernel-doc: no scripts/kernel-doc" \
	     "(set KVPOOL_KERNEL_DOC or install linux-headers)"
	exit $rc
fi

hdrs=("$uapi" driver/*.h)
if out=$(kdoc -none "${hdrs[@]}"); then
	pass "kernel-doc -none (${#hdrs[@]} headers)"
else
	echo "$out"
	fail "kernel-doc -none: warnings in ${hdrs[*]}"
fi

# Every ".. kernel-doc:: FILE" directive of docs/, one a line: the rst
# file, a tab, FILE, a tab, and the kernel-doc arguments it stands for,
# separated by \x1e (a DOC title has spaces); no arguments: the whole file.
directives() {
	perl -ne '
		sub flush {
			print "$rst\t$file\t", join("\x1e", @args), "\n"
				if defined $file;
			undef $file; @args = (); $opt = "";
		}
		if (/^\.\.\s+kernel-doc::\s+(\S+)/) {
			flush();
			($rst, $file) = ($ARGV, $1);
		} elsif (defined $file && /^\s+:([\w-]+):\s*(.*?)\s*$/) {
			($opt, $v) = ($1, $2);
		} elsif (defined $file && $opt && /^\s+(\S.*?)\s*$/) {
			$v = $1;
		} else {
			flush();
			$v = undef;
		}
		if (defined $file && defined $v) {
			if ($opt eq "doc") {
				push @args, "-function", $v;
			} elsif ($opt =~ /^(identifiers|functions)$/) {
				push @args, map { ("-function", $_) } split " ", $v;
			} elsif ($opt =~ /^(export|internal)$/) {
				push @args, "-$opt";
			}
			$v = undef;
		}
		flush() if eof;
	' "${rsts[@]}"
}

# What file $1 documents, one a line: the name a kernel-doc comment opens
# with (a struct, union, enum, typedef or function), or a DOC title.
# $2, if given, keeps only the kinds it matches (e.g. "struct|union|enum").
documented() {
	perl -ne '
		BEGIN { $k = shift @ARGV || "struct|union|enum|typedef|"; }
		if ($open) {
			if (/^\s*\*\s*DOC:\s*(.*?)\s*$/) {
				print "$1\n";
			} elsif (/^\s*\*\s*(struct|union|enum|typedef|)\s*(\w+)(?:\(\))?\s*-/) {
				my ($kind, $name) = ($1, $2);
				print "$name\n" if $kind =~ /^(?:$k)$/;
			}
			$open = 0;
		}
		$open = 1 if m{^\s*/\*\*\s*$};
	' "${2:-}" "$1"
}

mapfile -t rsts < <(find docs -name '*.rst' | sort)
dirs=""
((${#rsts[@]})) && dirs=$(directives)
if [[ -z $dirs ]]; then
	fail "kernel-doc directives: none in docs/"
else
	out=""
	# Files pulled in whole, and FILE:NAME of what is pulled in by name.
	declare -A whole=() named=()
	while IFS=$'\t' read -r rst file args; do
		if [[ ! -r $file ]]; then
			out+="  $rst: $file: no such file"$'\n'
			continue
		fi
		a=()
		[[ -n $args ]] && IFS=$'\x1e' read -r -a a <<<"$args"
		((${#a[@]})) || whole[$file]=1
		known=$(documented "$file")
		for x in "${a[@]}"; do
			[[ $x == -* ]] && continue
			named[$file:$x]=1
			grep -qxF -- "$x" <<<"$known" ||
				out+="  $rst: $x: not documented in $file"$'\n'
		done
		if ! w=$(kdoc -rst "${a[@]}" "$file"); then
			out+="  $rst: ${w//$'\n'/$'\n'  $rst: }"$'\n'
		fi
	done <<<"$dirs"
	# Everything the header documents must be pulled in somewhere.
	if [[ -z ${whole[$uapi]:-} ]]; then
		while read -r name; do
			[[ -n ${named[$uapi:$name]:-} ]] ||
				out+="  $uapi: $name: in no kernel-doc directive of docs/"$'\n'
		done < <(documented "$uapi" "struct|union|enum")
	fi
	verdict "$out" \
		"kernel-doc directives: warnings, or parts of $uapi left out" \
		"kernel-doc directives ($(wc -l <<<"$dirs") in docs/:$(
		) render without warnings, cover $uapi)"
fi

exit $rc
