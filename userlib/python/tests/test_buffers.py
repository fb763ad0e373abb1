# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The buffer-protocol paths: what item sizes, layouts and writability
each array argument takes, and that a refused one reaches no kernel
(the pool is exactly as before)."""

import array
import errno
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import kvpool
from kvpt import Handles, L, snap

pytestmark = pytest.mark.device

REFUSED = (TypeError, ValueError)


@pytest.fixture
def rows(pool: kvpool.Pool) -> Iterator[tuple[kvpool.Pool, Handles]]:
    """Three held rows of 2, 1 and 0 pages (8, 4 and 0 tokens)."""
    hs = pool.alloc_rows(3)
    pool.extend(hs, L(8, 4, 0))
    yield pool, hs
    pool.release(hs)


@pytest.mark.parametrize("make", [
    lambda hs: np.asarray(hs, np.uint64),
    lambda hs: np.asarray(hs, np.uint64).view(np.int64),
    lambda hs: array.array("Q", [int(x) for x in hs]),
    lambda hs: array.array("q", [int(x) for x in hs]),
    lambda hs: memoryview(np.asarray(hs, np.uint64).tobytes()).cast("Q"),
], ids=["np.uint64", "np.int64", "array-Q", "array-q", "memoryview-Q"])
def test_handle_arrays_accepted(pool: kvpool.Pool,
                                make: Callable[[Any], Any]) -> None:
    hs = pool.alloc_rows(2)
    pool.extend(make(hs), L(4, 8))
    assert pool.commit(make(hs), L(4, 4)) is None
    assert pool.trim(make(hs)) == 1
    assert pool.release(make(hs)) == 2
    assert pool.stats().client_rows == 0


@pytest.mark.parametrize("make", [
    lambda n: np.array(n, np.int32),
    lambda n: np.array(n, np.uint32),
    lambda n: array.array("i", n),
    lambda n: array.array("I", n),
], ids=["np.int32", "np.uint32", "array-i", "array-I"])
def test_length_arrays_accepted(rows: tuple[kvpool.Pool, Handles],
                                make: Callable[[Any], Any]) -> None:
    pool, hs = rows
    pool.extend(hs, make([8, 8, 8]))
    pool.commit(hs, make([8, 2, 0]))
    q = pool.row_query(int(hs[1]))
    assert (q.allocated_len, q.committed_len) == (8, 2)


def bad_handle_arrays(hs: Handles) -> dict[str, Any]:
    a = np.asarray(hs, np.uint64)
    wide = np.zeros(2 * len(a), np.uint64)
    wide[::2] = a
    return {
        "np.uint32": a.astype(np.uint32),
        "np.float64": a.astype(np.float64),
        "array-I": array.array("I", [1, 2, 3]),
        "strided": wide[::2],
        "bytes": a.tobytes(),
        "2-d": np.ascontiguousarray(a.reshape(len(a), 1)),
    }


@pytest.mark.parametrize("kind,cls", [
    ("np.uint32", TypeError), ("np.float64", TypeError),
    ("array-I", TypeError), ("bytes", TypeError),
    ("strided", ValueError), ("2-d", ValueError),
])
def test_bad_handle_arrays_refused(rows: tuple[kvpool.Pool, Handles],
                                   kind: str, cls: type[Exception]) -> None:
    pool, hs = rows
    bad = bad_handle_arrays(hs)[kind]
    before = snap(pool, hs)
    for call in (lambda: pool.extend(bad, L(12, 12, 12)),
                 lambda: pool.commit(bad, L(1, 1, 1)),
                 lambda: pool.trim(bad),
                 lambda: pool.release(bad),
                 lambda: pool.release(bad, donate=True)):
        with pytest.raises(cls):
            call()
    assert snap(pool, hs) == before


def test_not_a_buffer_refused(rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    with pytest.raises(TypeError):
        pool.release([int(h) for h in hs])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pool.commit(hs, "abc")  # type: ignore[arg-type]
    assert snap(pool, hs) == before


@pytest.mark.parametrize("bad,cls", [
    (np.array([12, 12, 12], np.int64), TypeError),
    (np.array([12, 12, 12], np.int16), TypeError),
    (np.array([12.0, 12.0, 12.0], np.float32), TypeError),
    (array.array("q", [12, 12, 12]), TypeError),
    (np.array([12, 0, 12, 0, 12, 0], np.int32)[::2], ValueError),
], ids=["np.int64", "np.int16", "np.float32", "array-q", "strided"])
def test_bad_length_arrays_refused(rows: tuple[kvpool.Pool, Handles], bad: Any,
                                   cls: type[Exception]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    with pytest.raises(cls):
        pool.extend(hs, bad)
    with pytest.raises(cls):
        pool.commit(hs, bad)
    assert snap(pool, hs) == before


def test_more_than_max_batch_refused(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(2)
    before = snap(pool, hs)
    n = pool.info.max_batch + 1
    with pytest.raises(ValueError):
        pool.alloc_rows(n)
    many = np.resize(hs, n)
    with pytest.raises(ValueError):
        pool.release(many)
    with pytest.raises(ValueError):
        pool.extend(many, np.zeros(n, np.int32))
    assert snap(pool, hs) == before
    pool.release(hs)


def test_dlpack_inputs(pool: kvpool.Pool) -> None:
    """An input with only __dlpack__ (a torch CPU tensor's way in)."""
    class Tensor:
        def __init__(self, a: Any) -> None:
            self.a = a

        def __dlpack__(self, **kw: Any) -> Any:
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self) -> Any:
            return self.a.__dlpack_device__()

    hs = pool.alloc_rows(2)
    pool.extend(Tensor(hs.view(np.int64)), Tensor(L(8, 4)))
    assert pool.stats().row_pages == 3
    assert pool.release(Tensor(hs.view(np.int64))) == 3


def test_negative_lengths_refused(rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    with pytest.raises(ValueError):
        pool.extend(hs, L(12, -1, 12))
    with pytest.raises(ValueError):
        pool.commit(hs, L(-8, 0, 0))
    with pytest.raises(ValueError):
        pool.donate(hs, L(0, 0, -4))
    with pytest.raises((ValueError, OverflowError)):
        pool.alloc_rows(-1)
    assert snap(pool, hs) == before


def test_mismatched_lengths_refused(rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    with pytest.raises(ValueError):
        pool.extend(hs, L(12, 12))
    with pytest.raises(ValueError):
        pool.extend(hs[:2], L(12, 12, 12))
    with pytest.raises(ValueError):
        pool.commit(hs, L(4))
    with pytest.raises(ValueError):
        pool.extend(hs, L(12, 12, 12), nr_new=np.zeros(2, np.uint32))
    assert snap(pool, hs) == before


def test_read_only_outputs_refused(rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    ro = np.zeros(16, np.uint32)
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        pool.extend(hs, L(12, 12, 12), pages=ro)
    with pytest.raises(TypeError):
        pool.extend(hs, L(12, 12, 12), pages=bytes(64))
    nr = np.zeros(3, np.uint32)
    nr.flags.writeable = False
    with pytest.raises(TypeError):
        pool.extend(hs, L(12, 12, 12), nr_new=nr)
    with pytest.raises(TypeError):
        pool.row_query(int(hs[0]), pages=ro)
    out = np.zeros(2, np.uint64)
    out.flags.writeable = False
    with pytest.raises(TypeError):
        pool.alloc_rows(2, out)
    assert snap(pool, hs) == before


def test_bad_output_itemsizes_refused(
        rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    with pytest.raises(TypeError):
        pool.extend(hs, L(12, 12, 12), pages=np.zeros(16, np.uint64))
    with pytest.raises(TypeError):
        pool.extend(hs, L(12, 12, 12), nr_new=np.zeros(3, np.uint16))
    with pytest.raises(TypeError):
        pool.row_query(int(hs[0]), pages=np.zeros(4, np.uint8))
    with pytest.raises(TypeError):
        pool.alloc_rows(2, np.zeros(2, np.uint32))
    with pytest.raises(REFUSED):
        pool.alloc_rows(3, np.zeros(2, np.uint64))  # too small
    with pytest.raises(TypeError):
        pool.cache_evict(np.zeros(2, np.uint64))
    with pytest.raises(TypeError):
        pool.attach_prefix(int(hs[2]), np.zeros(2, np.int64))
    assert snap(pool, hs) == before


def test_too_small_page_buffer(rows: tuple[kvpool.Pool, Handles]) -> None:
    """A pages buffer with room for fewer ids than the extend makes:
    ENOBUFS from the kernel, and nothing taken."""
    pool, hs = rows
    before = snap(pool, hs)
    with pytest.raises(kvpool.Error) as ei:
        pool.extend(hs, L(16, 16, 16), pages=np.zeros(3, np.uint32))
    assert ei.value.errno == errno.ENOBUFS
    assert snap(pool, hs) == before


def test_returned_arrays_are_numpy(rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    one = pool.alloc_rows(1)
    assert isinstance(one, np.ndarray) and one.dtype.itemsize == 8
    pool.release(one)
    got = pool.extend(hs, L(12, 4, 0))
    assert isinstance(got, np.ndarray) and got.dtype.itemsize == 4
    assert len(got) == 1
    q = pool.row_query(int(hs[0]))
    assert isinstance(q.pages, np.ndarray) and len(q.pages) == 3
    assert pool.stats().client_rows == 3


def test_empty_batches(rows: tuple[kvpool.Pool, Handles]) -> None:
    pool, hs = rows
    before = snap(pool, hs)
    empty_h = np.zeros(0, np.uint64)
    empty_l = np.zeros(0, np.int32)
    # A count of 0 is EINVAL for the kernel; the binding may refuse it
    # itself or do nothing: either way nothing changes.
    for call in (lambda: pool.extend(empty_h, empty_l),
                 lambda: pool.commit(empty_h, empty_l),
                 lambda: pool.release(empty_h)):
        try:
            call()
        except (ValueError, kvpool.Error):
            pass
    assert snap(pool, hs) == before
