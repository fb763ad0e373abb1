#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Fails when the documentation drifts from the code:
#
# - sysfs: the attributes the driver declares in driver/*.c and the What:
#   entries of docs/ABI/testing/sysfs-class-kvpool name the same files;
#   so do the module's parameters (and version) and
#   docs/ABI/testing/sysfs-module-kvpool;
# - ops: every KVPOOL_CMD_* of uapi/linux/kvpool.h reaches every place
#   docs/process/adding-an-op.rst lists (its table of ops says which
#   libkvpool, Python, kvpoolctl and fuzzer names go with each); one
#   table of checks below, one PASS or FAIL line each. Every KVPOOL_*
#   name the docs use exists in the header;
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
# to one of them (as KVPD_ATTR() does); plus every dev_attr_NAME used.
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

# ---- ops: every command in every place ----

op_rst=docs/process/adding-an-op.rst

# C of files $@ without comments, #define bodies joined to one line.
c_code() {
	perl -0777 -ne '
		s{/\*.*?\*/}{ }gs;
		s{//[^\n]*}{}g;
		s{\\\n}{ }g;
		print;
	' "$@"
}

# The header's commands (KVPOOL_CMD_INFO -> INFO), in its order.
cmds=$(perl -ne 'print "$1\n" if /^\s*KVPOOL_CMD_(\w+)\b/' "$uapi")

# The op table of $op_rst: the rows between the rules that follow its
# ".. doc-check:" comment, as "OP LIB PY CTL FUZZ" (cells of names
# joined by commas, n/a where the place does not apply).
op_table() {
	[[ -r $op_rst ]] || return 0
	perl -ne '
		$on = 1 if /^\.\. doc-check:/;
		next unless $on;
		if (/^=+(\s+=+)+\s*$/) { last if ++$rules == 3; next; }
		next unless $rules == 2;
		my @f = split;
		print "@f\n" if @f == 5;
	' "$op_rst"
}
declare -A t_lib=() t_py=() t_ctl=() t_fz=()
while read -r op lib py ctl fz; do
	[[ -n $op ]] || continue
	t_lib[$op]=$lib t_py[$op]=$py t_ctl[$op]=$ctl t_fz[$op]=$fz
done < <(op_table)

drv_code=$(c_code driver/*.c)
lib_code=$(c_code userlib/*.c)
py_code=$(c_code userlib/python/src/kvpool/*.c)
ctl_code=$(c_code tools/kvpoolctl/*.c)
fz_ops=$(perl -ne 'print "$1\n" if /^\s*X\((\w+),/' selftests/fuzz/fuzz_core.c)
abi_ops=$(perl -ne 'print "$1\n" if /^\s*OP\w*\(\w+,\s*(KVPOOL_\w+)/' \
	  selftests/kernel/abi_test.c)
syz=$(cat tools/syzkaller/kvpool.txt)
lib_hdr=$(c_code userlib/kvpool.h)
lib_map=$(cat userlib/libkvpool.map)

# The names of cell $1 (n/a: none), one a line.
cell() { [[ $1 == n/a ]] || tr , '\n' <<<"$1"; }

# Each check: OP on $1; prints what is missing, one line each.
ck_row() {
	[[ -n ${t_lib[$1]:-} ]] || echo "  $op_rst: no row for $1"
}
ck_dispatch() {
	grep -qE "\bKVPD_\w*OP\w*\(\s*$1\b" <<<"$drv_code" ||
		echo "  driver/*.c: no op-table row KVPD_*OP*($1"
}
ck_ioctl() {
	grep -qE "^#define\s+KVPOOL_$1\s+_IO\(KVPOOL_TYPE,\s*KVPOOL_CMD_$1\)" \
		"$uapi" || echo "  $uapi: no KVPOOL_$1 from KVPOOL_CMD_$1"
}
ck_api_doc() {
	grep -qw -- "KVPOOL_$1" "$api_rst" 2>/dev/null ||
		echo "  $api_rst: KVPOOL_$1 not named"
}
ck_abi_test() {
	grep -qx -- "KVPOOL_$1" <<<"$abi_ops" ||
		echo "  selftests/kernel/abi_test.c: no OP() row for KVPOOL_$1"
}
ck_syzkaller() {
	grep -qF -- "ioctl\$KVPOOL_$1(" <<<"$syz" ||
		echo "  tools/syzkaller/kvpool.txt: no ioctl\$KVPOOL_$1"
}
ck_libkvpool() {
	local f
	grep -qw -- "KVPOOL_$1" <<<"$lib_code" ||
		echo "  userlib/*.c: KVPOOL_$1 is never issued"
	for f in $(cell "${t_lib[$1]:-n/a}"); do
		# Defined, or a versioned alias's default (.symver).
		grep -qE "^\w[^;]*\b$f\(|\.symver \w+, *$f@" <<<"$lib_code" ||
			echo "  userlib/*.c: $f ($1) not defined"
		grep -qE "\b$f\(" <<<"$lib_hdr" ||
			echo "  userlib/kvpool.h: $f ($1) not declared"
		grep -qE "^\s*$f;" <<<"$lib_map" ||
			echo "  userlib/libkvpool.map: $f ($1) not exported"
		[[ -r userlib/man/$f.3 ]] ||
			echo "  userlib/man/$f.3 ($1): missing"
	done
}
# $1: OP, $2: its cell, $3: the code, $4: where.
ck_calls() {
	local f
	for f in $(cell "$2"); do
		grep -qE "\b$f\b" <<<"$3" || echo "  $4: $f ($1) not called"
	done
}
ck_python() {
	ck_calls "$1" "${t_py[$1]:-n/a}" "$py_code" \
		userlib/python/src/kvpool/*.c
}
ck_kvpoolctl() {
	ck_calls "$1" "${t_ctl[$1]:-n/a}" "$ctl_code" tools/kvpoolctl/*.c
}
ck_fuzzer() {
	local x
	for x in $(cell "${t_fz[$1]:-n/a}"); do
		grep -qx -- "$x" <<<"$fz_ops" ||
			echo "  selftests/fuzz/fuzz_core.c: no FZ_OPS row $x ($1)"
	done
}

# The checks, one line each: what, then the function of one op.
op_checks=(
	"a row of the op table of $op_rst|ck_row"
	"an op-table row in driver/*.c|ck_dispatch"
	"KVPOOL_<OP> in $uapi|ck_ioctl"
	"named in $api_rst|ck_api_doc"
	"an OP() row in selftests/kernel/abi_test.c|ck_abi_test"
	"an ioctl\$ in tools/syzkaller/kvpool.txt|ck_syzkaller"
	"libkvpool: issued, its calls declared, exported, in man|ck_libkvpool"
	"the Python binding calls its column|ck_python"
	"kvpoolctl calls its column|ck_kvpoolctl"
	"the fuzzer has its column's FZ_OPS rows|ck_fuzzer"
)
nr_cmds=$(grep -c . <<<"$cmds")
if [[ -z $cmds ]]; then
	fail "ops: found no KVPOOL_CMD_* in $uapi"
elif [[ ! -r $op_rst ]]; then
	fail "ops: $op_rst missing"
else
	for c in "${op_checks[@]}"; do
		what=${c%|*} fn=${c##*|}
		out=$(for op in $cmds; do "$fn" "$op"; done)
		verdict "$out" "ops: $what: not for every command" \
			"ops: $what ($nr_cmds commands)"
	done
	# The table names no command the header lacks.
	out=$(for op in "${!t_lib[@]}"; do
		grep -qx -- "$op" <<<"$cmds" ||
			echo "  $op_rst: row $op: no KVPOOL_CMD_$op in $uapi"
	      done)
	verdict "$out" "ops: the op table has rows for no command" \
		"ops: the op table has no row of a command the header lacks"
fi

# The test library's first unknown numbers name the last command of each
# block (pool ops below KVPOOL_CMD_CTL_CREATE, control ops from it, the
# agent file's from KVPOOL_CMD_AGENT_RECV).
kvptest=selftests/lib/kvptest.h
last_pool=$(perl -ne '
	$ctl = 1 if /^\s*KVPOOL_CMD_CTL_CREATE\b/;
	$l = $1 if !$ctl && /^\s*(KVPOOL_CMD_\w+)\b/;
	END { print $l }' "$uapi")
last_ctl=$(perl -ne '$l = $1 if /^\s*(KVPOOL_CMD_CTL_\w+)\b/;
	END { print $l }' "$uapi")
last_agent=$(perl -ne '$l = $1 if /^\s*(KVPOOL_CMD_AGENT_\w+)\b/;
	END { print $l }' "$uapi")
out=""
grep -qE "^#define\s+KT_POOL_CMD_END\s+\($last_pool \+ 1\)" "$kvptest" ||
	out+="  $kvptest: KT_POOL_CMD_END is not ($last_pool + 1)"$'\n'
grep -qE "^#define\s+KT_CTL_CMD_END\s+\($last_ctl \+ 1\)" "$kvptest" ||
	out+="  $kvptest: KT_CTL_CMD_END is not ($last_ctl + 1)"$'\n'
grep -qE "^#define\s+KT_AGENT_CMD_END\s+\($last_agent \+ 1\)" "$kvptest" ||
	out+="  $kvptest: KT_AGENT_CMD_END is not ($last_agent + 1)"$'\n'
verdict "$out" "ops: the tests' first unknown numbers are not past the last commands" \
	"ops: KT_POOL_CMD_END, KT_CTL_CMD_END, KT_AGENT_CMD_END follow $last_pool, $last_ctl, $last_agent"

# The ABI version the tools' checks expect is the header's.
abi=$(perl -ne 'print "$1\n" if /^#define\s+KVPOOL_ABI_VERSION\s+(\d+)/' "$uapi")
out=$(grep -HnoE '\(kvpool ABI [0-9]+\)' tools/Makefile tools/*/Makefile \
	2>/dev/null | grep -v "(kvpool ABI $abi)" | sed 's/^/  /')
verdict "$out" "ops: a tool's check expects another ABI version than $abi" \
	"ops: the tools' (kvpool ABI N) strings are the header's $abi"

# Names such as KVPOOL_FEAT_* (a prefix) are not names: skipped. An
# environment variable a script of the tree reads ($NAME or ${NAME), or
# a device property a udev rule of the tree sets (ENV{NAME}), is no ABI
# name either.
mapfile -t docs < <(find docs -type f \( -name '*.rst' -o -name '*.md' \)
		    find docs/ABI -type f 2>/dev/null)
out=$(perl -ne '
	print "$ARGV: $1\n" while /\b(KVPOOL_[A-Z0-9_]*[A-Z0-9])\b/g;
      ' "${docs[@]}" | sort -u | while read -r file name; do
		grep -qw -- "$name" "$uapi" ||
			grep -rqE -- "\\\$\{?$name\b" tools selftests userlib ||
			grep -rqF -- "ENV{$name}" tools/udev ||
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
