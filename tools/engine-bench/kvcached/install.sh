#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# install.sh: make $KVPOOL_CACHE/kvcached-venv, where kvcached 0.1.6's
# own allocator runs on the CPU (run.py's kvcached side).
#
# 1. The engine venv ($KVPOOL_CACHE/engine-venv, torch 2.14.1) by
#    tools/engine-tests.sh --install-only, which keeps a current one.
# 2. A plain venv of /usr/bin/python3 whose engine-venv.pth adds the
#    engine venv's site-packages (torch is shared, not installed twice),
#    with posix_ipc (kvcached's one compiled dependency) on top.
# 3. kvcached's sdist from PyPI, checked against its sha256, unpacked
#    into the venv (nothing of kvcached is in this tree). Its setup.py is
#    not run: it builds a CUDAExtension against libcuda. Instead:
#    - the pure-Python package kvcached/ is copied as it is;
#    - its extension kvcached._C is compiled from the sdist's csrc/*.cpp
#      with g++ and torch's stable-ABI flags, as setup.py would, except:
#      a. standin/cuda.h and standin/cuda_runtime.h come first on the
#         include path, so csrc/inc/gpu_vmm.hpp (the one file through
#         which kvcached makes every CUDA driver and runtime call) reaches
#         standin/standin.cpp, linked in, instead of libcuda/libcudart;
#      b. in csrc/ftensor.cpp, the device argument of the one
#         torch::stable::from_blob() call is cpu instead of the FTensor's
#         device: torch's CUDA from_blob needs a CUDA driver, and the
#         tensor (a view of the virtual range) is never touched here.
#         The FTensor's own device stays cuda:0, so every page takes the
#         GPU path (GPUPage, cuMemCreate/cuMemMap).
#      The edit is checked to apply exactly once; nothing else changes.
# Kept when its stamp names the same pins, sources and engine venv.
#
# Env: KVPOOL_CACHE (default /var/cache/kvpool). Prints the python to put
# in KVB_PYTHON for run.py. The network is needed only here.

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
# shellcheck source=tools/engine-bench/venv.sh
. "$HERE/../venv.sh"
CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
ENGINE=$CACHE/engine-venv
VENV=$CACHE/kvcached-venv
PY=/usr/bin/python3

KVCACHED=kvcached-0.1.6.tar.gz
# From https://pypi.org/simple/kvcached/ (the index lists each file's hash).
KVCACHED_SHA256=4a1a428244b5e3667841e28f03a4a20be7066a21a856b2deaef727e18f845068
POSIX_IPC="posix_ipc==1.3.2"

sources() { cat "$HERE"/standin/* "$0" | sha256sum | cut -c1-16; }

(cd "$TOP" && tools/engine-tests.sh --install-only)
stamp="$KVCACHED $KVCACHED_SHA256 $POSIX_IPC src $(sources)"
stamp+=" engine-venv: $(cat "$ENGINE/.stamp")"
if [ -f "$VENV/.stamp" ] && [ "$(cat "$VENV/.stamp")" = "$stamp" ] &&
   "$VENV/bin/python" -c 'import kvcached.vmm_ops' 2>/dev/null; then
	echo "kvcached venv: $VENV is current"
	echo "KVB_PYTHON=$VENV/bin/python"
	exit 0
fi

echo "kvcached venv: making $VENV"
t0=$(date +%s)
rm -rf "$VENV"
kvp_venv_over_engine "$VENV" "$ENGINE" "$PY"
site=$("$VENV/bin/python" -c \
	'import sysconfig; print(sysconfig.get_paths()["purelib"])')
esite=$("$ENGINE/bin/python" -c \
	'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pip="$VENV/bin/python -m pip -q --disable-pip-version-check"
$pip install --no-cache-dir "$POSIX_IPC"

src=$VENV/src
mkdir -p "$src"
# The simple index's JSON gives the file's URL; pip download would run
# setup.py (which needs torch and CUDA) just to read its metadata.
url=$(curl -fsSL -H 'Accept: application/vnd.pypi.simple.v1+json' \
	https://pypi.org/simple/kvcached/ | "$PY" -c '
import json, sys
for f in json.load(sys.stdin)["files"]:
    if f["filename"] == sys.argv[1]:
        print(f["url"])
' "$KVCACHED")
[ -n "$url" ] || { echo "install.sh: $KVCACHED not on PyPI" >&2; exit 1; }
curl -fsSL -o "$src/$KVCACHED" "$url"
echo "$KVCACHED_SHA256  $src/$KVCACHED" | sha256sum -c --quiet
tar -C "$src" -xzf "$src/$KVCACHED"
sd=$src/${KVCACHED%.tar.gz}

# b. above: the from_blob device, and nothing else.
"$PY" - "$sd/csrc/ftensor.cpp" <<'PYEOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = "strides, dev_, dtype_);"
new = ("strides, torch::stable::Device(torch::headeronly::kCPU), "
       "dtype_); /* kvpool engine-bench: was dev_ */")
if s.count(old) != 1:
    sys.exit(f"install.sh: {p} changed: the from_blob call is not there once")
open(p, "w").write(s.replace(old, new))
PYEOF

cp -r "$sd/kvcached" "$site/"
tinc=$esite/torch/include
# setup.py's flags: C++17, torch's C++ ABI, stable ABI 2.10, CUDA backend.
g++ -O2 -std=c++17 -fPIC -shared -fvisibility=hidden \
	-D_GLIBCXX_USE_CXX11_ABI="$("$ENGINE/bin/python" -c \
		'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')" \
	-DKVCACHED_USE_CUDA -DTORCH_TARGET_VERSION=0x020a000000000000 \
	-DTORCH_STABLE_ONLY -DTORCH_EXTENSION_NAME=_C \
	-I"$HERE/standin" -I"$sd/csrc/inc" -I"$tinc" \
	-I"$tinc/torch/csrc/api/include" \
	-I"$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
	"$sd"/csrc/*.cpp "$HERE/standin/standin.cpp" \
	-L"$esite/torch/lib" -lc10 -ltorch -ltorch_cpu -ltorch_python \
	-Wl,-rpath,"$esite/torch/lib" \
	-o "$site/kvcached/_C$("$PY" -c \
		'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
# No CUDA symbol may be left for the dynamic linker to bind elsewhere.
if nm -D --undefined-only "$site"/kvcached/_C*.so | grep -q ' U cu'; then
	echo "install.sh: kvcached._C still imports CUDA symbols" >&2
	exit 1
fi
rm -f "$src/$KVCACHED"
PYTHONWARNINGS=ignore "$VENV/bin/python" -c 'import kvcached.vmm_ops'
echo "$stamp" > "$VENV/.stamp"
echo "kvcached venv: made in $(( $(date +%s) - t0 )) s," \
	"$(du -sh "$VENV" | cut -f1) of its own"
echo "KVB_PYTHON=$VENV/bin/python"
