# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""One decode step from Python through the binding, and the same from C.

    python3 -m kvpool.bench [--path /dev/kvpool0] [--rows 256] [--steps 64]
                            [--rounds 20]

A decode step is what a scheduler does for a running batch each
iteration: grow every row by one token (one EXTEND, new page ids into a
buffer it keeps) and commit the token computed before (one COMMIT). Both
sides run it on the same pool, on rows they allocated the same way, in
rounds that alternate between them so that the pool's state, the CPU's
frequency and the caches are the same for both: C first in even rounds,
Python first in odd ones. Each round takes fresh rows, runs --steps
steps and releases them, so the pool never fills.

The C side is a loop inside the extension that calls libkvpool directly
(kvpool._kvpool._c_decode_steps), with the GIL dropped once around the
loop; the Python side calls Pool.extend and Pool.commit, which drop it
around each call, as a threaded server needs. The difference is what the
binding costs a step.

Prints the median of the per-round figures (microseconds a step), for C,
for Python with the lengths precomputed (the binding alone) and for
Python adding the numpy increment a scheduler would do, and the
differences. Needs numpy.

Under QEMU's TCG (the test VMs) the interpreter is slowed far more than
the kernel, so the Python-vs-C difference there overstates the
binding's cost; userlib/python/bench/nullpool.c is a stand-in device
that lets both sides run natively, with the kernel's share taken out:

    make -C userlib/python/bench
    LD_PRELOAD=userlib/python/bench/libnullpool.so \
        python3 -m kvpool.bench --path /dev/null --steps 256
"""

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

import kvpool
from kvpool import _kvpool

_Handles = npt.NDArray[np.uint64]
_Lens = npt.NDArray[np.int32]
# A side of the comparison: runs a round's steps, returns nanoseconds.
_Run = Callable[[kvpool.Pool, _Handles, _Lens], int]


def _round(pool: kvpool.Pool, nrows: int, steps: int, start_len: int,
           run: _Run) -> float:
    """Fresh rows of start_len tokens, run(pool, handles, lens) timing
    its steps (nanoseconds), the rows released: microseconds a step."""
    handles = pool.alloc_rows(nrows)
    lens = np.full(nrows, start_len, dtype=np.int32)
    try:
        if start_len:
            pool.extend(handles, lens)
            pool.commit(handles, lens)
        ns = run(pool, handles, lens)
    finally:
        pool.release(handles)
    return ns / steps / 1000.0


def _steps_c(steps: int) -> _Run:
    def run(pool: kvpool.Pool, handles: _Handles, lens: _Lens) -> int:
        return _kvpool._c_decode_steps(pool, handles, lens, steps)
    return run


def _steps_py(steps: int, buf: npt.NDArray[np.uint32]) -> _Run:
    def run(pool: kvpool.Pool, handles: _Handles, lens: _Lens) -> int:
        # Every step's lengths made beforehand: the loop times the binding.
        table = [lens + (s + 1) for s in range(steps)]
        extend = pool.extend
        commit = pool.commit
        t0 = time.perf_counter_ns()
        for new in table:
            extend(handles, new, buf)
            commit(handles, new)
        return time.perf_counter_ns() - t0
    return run


def _steps_py_inc(steps: int, buf: npt.NDArray[np.uint32]) -> _Run:
    def run(pool: kvpool.Pool, handles: _Handles, lens: _Lens) -> int:
        extend = pool.extend
        commit = pool.commit
        add = np.add
        t0 = time.perf_counter_ns()
        for _ in range(steps):
            add(lens, 1, out=lens)
            extend(handles, lens, buf)
            commit(handles, lens)
        return time.perf_counter_ns() - t0
    return run


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kvpool.bench",
                                 description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--path", default=kvpool.DEFAULT_PATH)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--steps", type=int, default=64,
                    help="decode steps a round (default 64)")
    ap.add_argument("--rounds", type=int, default=20,
                    help="rounds of each side (default 20)")
    ap.add_argument("--start-len", type=int, default=0,
                    help="tokens each row holds before its first step")
    a = ap.parse_args(argv)

    with kvpool.Pool(a.path) as pool:
        info = pool.info
        need = a.rows * -(-(a.start_len + a.steps) // info.page_tokens)
        if a.rows > info.max_batch or need > info.nr_pages:
            sys.exit(f"kvpool.bench: {a.rows} rows of "
                     f"{a.start_len + a.steps} tokens do not fit this pool "
                     f"({info.nr_pages} pages, batches of {info.max_batch})")
        buf = np.empty(a.rows, dtype=np.uint32)
        sides = (_steps_c(a.steps), _steps_py(a.steps, buf),
                 _steps_py_inc(a.steps, buf))
        # One untimed round each: page faults, lazy imports, caches.
        for run in sides:
            _round(pool, a.rows, a.steps, a.start_len, run)
        times: tuple[list[float], ...] = ([], [], [])
        c, py, inc = times
        for r in range(a.rounds):
            order = (0, 1, 2) if r % 2 == 0 else (2, 1, 0)
            for side in order:
                times[side].append(_round(pool, a.rows, a.steps,
                                          a.start_len, sides[side]))

    mc, mp, mi = (statistics.median(x) for x in (c, py, inc))
    print(f"kvpool.bench: decode step, {a.rows} rows, page_tokens "
          f"{info.page_tokens}, {a.rounds} rounds x {a.steps} steps a side")
    print(f"  C (libkvpool, GIL dropped once)  {mc:9.2f} us/step")
    print(f"  Python (binding)                 {mp:9.2f} us/step"
          f"   +{mp - mc:.2f} us ({mp / mc:.3f}x C)")
    print(f"  Python (binding + numpy lens+1)  {mi:9.2f} us/step"
          f"   +{mi - mc:.2f} us ({mi / mc:.3f}x C)")
    print(f"  spread (min..max us/step): C {min(c):.2f}..{max(c):.2f}, "
          f"Python {min(py):.2f}..{max(py):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
