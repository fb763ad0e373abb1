# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""What the binding does without the kernel module: `make check` on the
build host runs these (and the VM runs them too)."""

import errno
import os
import re
import socket
import struct
from typing import Any

import pytest

import kvpool
from kvpt import TOPDIR


def uapi_defines() -> dict[str, int]:
    """KVPOOL_* constants of <linux/kvpool.h> that are plain numbers."""
    with open(os.path.join(TOPDIR, "uapi", "linux", "kvpool.h")) as f:
        text = f.read()
    out = {}
    for name, val in re.findall(
            r"^#define\s+KVPOOL_(\w+)\s+"
            r"(_BITULL?\(\d+\)|0x[0-9a-fA-F]+U?|\d+)", text, re.M):
        m = re.match(r"_BITULL?\((\d+)\)", val)
        out[name] = 1 << int(m.group(1)) if m else int(val.rstrip("U"), 0)
    return out


def test_import_is_the_installed_package() -> None:
    # The venv's installed wheel, not the source folder.
    assert "site-packages" in kvpool.__file__ or \
        "dist-packages" in kvpool.__file__, kvpool.__file__


def test_version_is_the_tree_version() -> None:
    with open(os.path.join(TOPDIR, "VERSION")) as f:
        want = f.read().strip()
    assert kvpool.version() == want


def test_constants_match_uapi() -> None:
    d = uapi_defines()
    want = [k for k in d if k.startswith(("FEAT_", "CREATE_", "PRESSURE_"))]
    want += ["ARENA_NONE", "ARENA_HOST", "ARENA_CUDA", "ABI_VERSION",
             "PAGE_NONE", "LABEL_LEN"]
    assert len([k for k in want if k.startswith("FEAT_")]) >= 10
    for name in want:
        assert getattr(kvpool, name) == d[name], name
    # And every other KVPOOL_* number the module exports.
    for name, val in d.items():
        if hasattr(kvpool, name):
            assert getattr(kvpool, name) == val, name
    assert (kvpool.ROW_HELD, kvpool.ROW_SLOT) == (1, 2)  # an enum there
    assert kvpool.NO_INDEX == 0xFFFFFFFF
    assert kvpool.CONTROL_PATH == "/dev/kvpool-control"


def test_other_constants() -> None:
    assert kvpool.PAGE_NONE == 0xFFFFFFFF
    assert kvpool.DEFAULT_PATH == "/dev/kvpool0"
    assert (kvpool.ARENA_NONE, kvpool.ARENA_HOST, kvpool.ARENA_CUDA) == \
        (0, 1, 2)
    assert (kvpool.LAYOUT_PAGE_MAJOR, kvpool.LAYOUT_LAYER_MAJOR) == (0, 1)


def test_handle_helpers() -> None:
    h = (5 << 32) | 7
    assert kvpool.handle_idx(h) == 7
    assert kvpool.handle_gen(h) == 5
    # The int is the bytes of struct kvpool_handle { idx; gen; } (LE).
    assert h.to_bytes(8, "little") == struct.pack("<II", 7, 5)
    assert kvpool.handle(7, 5) == h
    top = (0xFFFFFFFF << 32) | 0xFFFFFFFE
    assert kvpool.handle(0xFFFFFFFE, 0xFFFFFFFF) == top
    assert kvpool.handle_idx(top) == 0xFFFFFFFE
    assert kvpool.handle_gen(top) == 0xFFFFFFFF


def test_handle_helpers_refuse_non_handles() -> None:
    with pytest.raises((ValueError, OverflowError)):
        kvpool.handle_idx(1 << 64)
    with pytest.raises(TypeError):
        kvpool.handle_gen("1")  # type: ignore[arg-type]


def test_strerror() -> None:
    s = kvpool.strerror(errno.ESTALE)
    assert isinstance(s, str) and "stale" in s.lower()
    assert kvpool.strerror(-errno.ESTALE) == s
    assert kvpool.strerror(errno.ENOSPC) != s


def test_error_classes() -> None:
    assert issubclass(kvpool.Error, OSError)
    assert issubclass(kvpool.NoSpace, kvpool.Error)
    assert issubclass(kvpool.QuotaExceeded, kvpool.Error)
    assert not issubclass(kvpool.NoSpace, kvpool.QuotaExceeded)


def test_open_missing_device() -> None:
    with pytest.raises(kvpool.Error) as ei:
        kvpool.Pool("/nonexistent/kvpool0")
    e = ei.value
    assert isinstance(e, OSError)
    assert e.errno == errno.ENOENT
    assert e.strerror == kvpool.strerror(errno.ENOENT)
    assert kvpool.strerror(errno.ENOENT) in str(e)
    assert e.index is None
    assert e.shortfall == 0


def test_from_fd_not_a_pool_keeps_fd() -> None:
    fd = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    try:
        with pytest.raises(kvpool.Error) as ei:
            kvpool.Pool.from_fd(fd)
        assert ei.value.errno in (errno.ENOTTY, errno.EINVAL, errno.ENODEV)
        os.fstat(fd)  # still the caller's: not closed by the failure
    finally:
        os.close(fd)


def test_pool_argument_types() -> None:
    with pytest.raises(TypeError):
        kvpool.Pool(12)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        kvpool.Pool.from_fd("3")  # type: ignore[arg-type]


def test_send_recv_fd_socketpair() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    r, w = os.pipe()
    try:
        kvpool.send_fd(a, w)
        got = kvpool.recv_fd(b.fileno())  # int form of the socket
        assert got != w
        os.write(got, b"kvpool")
        os.close(got)
        os.close(w)
        assert os.read(r, 16) == b"kvpool"
        # The received descriptor is close-on-exec.
        got2_src = os.dup(r)
        kvpool.send_fd(a.fileno(), got2_src)
        got2 = kvpool.recv_fd(b)
        assert not os.get_inheritable(got2)
        os.close(got2)
        os.close(got2_src)
    finally:
        a.close()
        b.close()
        os.close(r)


def test_recv_fd_without_fd_fails() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        a.send(b"x")
        with pytest.raises(OSError) as ei:
            kvpool.recv_fd(b)
        assert ei.value.errno == errno.EBADMSG
        a.close()
        with pytest.raises(OSError) as ei:
            kvpool.recv_fd(b)
        assert ei.value.errno == errno.ECONNRESET
    finally:
        a.close()
        b.close()


def test_send_fd_bad_fd() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with pytest.raises(OSError) as ei:
            kvpool.send_fd(a, 1 << 20)
        assert ei.value.errno == errno.EBADF
    finally:
        a.close()
        b.close()


def _callables() -> list[tuple[str, Any]]:
    """Every public function, method and class of the package, and the
    context managers' methods: the ones a user's inspect.signature(),
    help() or IDE asks about."""
    out = []
    for name in kvpool.__all__:
        obj = getattr(kvpool, name)
        if isinstance(obj, type) and issubclass(obj, OSError):
            continue        # OSError's own constructor
        if callable(obj):
            out.append((name, obj))
    for cls in (kvpool.Pool, kvpool.Arena):
        for name, obj in vars(cls).items():
            if callable(obj) and (not name.startswith("_") or name in (
                    "__enter__", "__exit__", "__dlpack__",
                    "__dlpack_device__")):
                out.append((cls.__name__ + "." + name, obj))
    return out


def test_signatures() -> None:
    # The C methods' docstrings carry __text_signature__ ("name($self,
    # ...)\n--\n\n"); without it inspect.signature() raises ValueError.
    import inspect
    names = [name for name, obj in _callables() if inspect.signature(obj)]
    assert len(names) > 50 and "Pool.extend" in names
    sig = inspect.signature
    assert str(sig(kvpool.Pool.extend)) == \
        "(self, /, handles, new_lens, pages=None, nr_new=None)"
    assert str(sig(kvpool.Pool)) == "(path='/dev/kvpool0')"
    assert str(sig(kvpool.Pool.from_fd)) == "(fd, /)"
    assert str(sig(kvpool.Pool.trim)) == "(self, handles, /)"
    assert str(sig(kvpool.Arena.__exit__)) == "(self, exc_type, exc, tb, /)"
    assert str(sig(kvpool.strerror)) == "(err, /)"
    assert str(sig(kvpool.handle)) == "(idx: int, gen: int = 0) -> int"


def test_import_from_the_sources_says_what_to_do() -> None:
    # The package's sources hold no built extension: importing them
    # (PYTHONPATH=src) must say to install the package, not only that
    # kvpool._kvpool is missing.
    import subprocess
    import sys
    env = dict(os.environ,
               PYTHONPATH=os.path.join(TOPDIR, "userlib", "python", "src"))
    r = subprocess.run([sys.executable, "-c", "import kvpool"], cwd="/",
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: kvpool: the C extension"), last
    assert "pip install" in last, last
