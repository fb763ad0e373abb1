# SPDX-License-Identifier: GPL-2.0-only
#
# venv.sh: sourced by tools/engine-bench.sh and
# tools/engine-bench/kvcached/install.sh, which both make a plain venv
# that uses the engine venv's packages (torch) instead of installing
# them again.

# kvp_venv_over_engine VENV ENGINE PY: a new venv of PY at VENV whose
# engine-venv.pth adds ENGINE's site-packages. addsitedir, not a bare
# path line: the engine venv's own .pth files are read too, as they are
# there.
kvp_venv_over_engine() {
	local venv=$1 engine=$2 py=$3 site esite

	"$py" -m venv "$venv"
	site=$("$venv/bin/python" -c \
		'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	esite=$("$engine/bin/python" -c \
		'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	echo "import site; site.addsitedir('$esite')" > "$site/engine-venv.pth"
}
