# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""CUDA arenas with the fake CUDA driver (selftests/lib/fakecuda), on a
pool made for the guest's PCI display controller: the device pointers
the binding hands out, __cuda_array_interface__ and __dlpack_device__.
As on a GPU, the fake's device pointers are not the CPU's to touch:
ctypes calls the driver's copies to check that two mappings see the
same bytes. The module takes the fake's files under its fake_cuda hook,
set here for the test's time."""

import ctypes
import errno
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

import kvpool
from kvpt import Pools, TOPDIR, pool_path

pytestmark = pytest.mark.device

FAKECUDA = os.path.join(TOPDIR, "selftests", "lib", "fakecuda",
                        "libcuda.so.1")
PAGES, PB = 64, 64 << 10  # two 2 MiB granules
KDLCUDA = 2
FAKE_HOOK = "/sys/module/kvpool/parameters/fake_cuda"


def display_gpu() -> str | None:
    base = "/sys/bus/pci/devices"
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name, "class")) as f:
            if int(f.read(), 16) >> 16 == 0x03:
                return name
    return None


@pytest.fixture
def cuda_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    gpu = display_gpu()
    assert gpu, "no PCI display controller: vm-run.sh gives the guest one"
    assert os.path.exists(FAKECUDA), "build selftests/lib/fakecuda first"
    d = tempfile.mkdtemp(prefix="kvpool-pycuda-", dir="/dev/shm")
    monkeypatch.setenv("KVPOOL_FAKECUDA_GPUS", gpu + ",0000:00:11.0")
    monkeypatch.setenv("KVPOOL_FAKECUDA_DIR", d)
    monkeypatch.setenv("KVPOOL_LIBCUDA", FAKECUDA)
    # libkvpool opens the GPU's /dev/nvidiaN, found in NVIDIA's procfs;
    # the fake keeps both in its registry, made at its first cuInit().
    monkeypatch.setenv("KVPOOL_NVIDIA_PROC", d)
    monkeypatch.setenv("KVPOOL_NVIDIA_DEV", d)
    monkeypatch.delenv("KVPOOL_FAKECUDA_GRANULARITY", raising=False)
    with open(FAKE_HOOK) as f:
        old = f.read().strip()
    with open(FAKE_HOOK, "w") as f:
        f.write("1")
    assert ctypes.CDLL(FAKECUDA).cuInit(0) == 0
    try:
        yield gpu
    finally:
        with open(FAKE_HOOK, "w") as f:
            f.write("1" if old in ("Y", "1") else "0")
        shutil.rmtree(d, ignore_errors=True)


def test_cuda_arena(pools: Pools, cuda_env: str) -> None:
    pid = pools.create(nr_pages=PAGES, page_tokens=16, nr_rows=8,
                       row_tokens=PAGES * 16, gpu=cuda_env)
    assert kvpool.pool_gpu(pid) is not None
    kvpool.arena_create_cuda(pid, PB, 2)
    p = pools.open(pid)
    ai = p.arena_info()
    assert (ai.kind, ai.nr_chunks, ai.page_bytes) == \
        (kvpool.ARENA_CUDA, 2, PB)
    a = pools.map(p)
    assert a.kind == kvpool.ARENA_CUDA
    assert a.nbytes == ai.bytes and a.nr_pages == PAGES
    assert a.ptr
    with pytest.raises(BufferError):
        memoryview(a)
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["typestr"] == "|u1"
    assert tuple(cai["shape"]) == (a.nbytes,)
    assert cai["data"][0] == a.ptr and cai["data"][1] is False
    assert tuple(a.__dlpack_device__()) == (KDLCUDA, 0)
    assert a.page_ptr(5) == a.ptr + 5 * PB
    assert a.layer_ptr(4, 1, 5) == a.ptr + 5 * PB + PB // 4
    total = a.nbytes // PB
    assert a.layer_ptr(4, 1, 5, kvpool.LAYOUT_LAYER_MAJOR) == \
        a.ptr + (PB // 4) * total + 5 * (PB // 4)
    # A second mapping (another Pool of this process) sees the bytes,
    # copied in and out by the driver (the mapping left its context
    # current on this thread).
    b = pools.map(pools.open(pid))
    assert b.ptr != a.ptr
    cu = ctypes.CDLL(FAKECUDA)
    cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_char_p,
                                   ctypes.c_size_t]
    cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_char_p, ctypes.c_uint64,
                                   ctypes.c_size_t]
    out = ctypes.create_string_buffer(7)
    assert cu.cuMemcpyHtoD_v2(a.page_ptr(7), b"cuda-kv", 7) == 0
    assert cu.cuMemcpyDtoH_v2(out, b.page_ptr(7), 7) == 0
    assert out.raw == b"cuda-kv"
    with pytest.raises((IndexError, ValueError, kvpool.Error)):
        a.page_ptr(PAGES)


NO_DRIVER = """
import sys, kvpool
try:
    kvpool.arena_create_cuda(int(sys.argv[1]), int(sys.argv[2]), 2)
except kvpool.Error as e:
    print(e.errno, str(e))
else:
    print("created")
"""


def test_cuda_no_driver(pools: Pools, cuda_env: str) -> None:
    """libkvpool loads the driver once a process: asked in a new one."""
    pid = pools.create(nr_pages=PAGES, page_tokens=16, nr_rows=8,
                       row_tokens=PAGES * 16, gpu=cuda_env)
    env = dict(os.environ, KVPOOL_LIBCUDA="/nonexistent/libcuda.so.1")
    r = subprocess.run([sys.executable, "-c", NO_DRIVER, str(pid), str(PB)],
                       env=env, stdout=subprocess.PIPE, text=True,
                       timeout=120)
    assert r.returncode == 0
    err, _, text = r.stdout.strip().partition(" ")
    assert int(err) == errno.ELIBACC, r.stdout
    assert "CUDA" in text
    with kvpool.Pool(pool_path(pid)) as p:
        assert p.arena_info().kind == kvpool.ARENA_NONE
