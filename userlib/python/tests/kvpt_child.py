# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The other process of the binding's multi-process tests (not a test
file): python kvpt_child.py MODE ARGS..., run with the venv's python.
It reports one JSON line per step on stdout and waits on stdin (or its
socket) where the test decides when it goes.

numpy is kept out (importing it takes seconds under TCG), which makes
this process also the test of the binding without numpy: the forms that
return a new array must give array.array here."""

import array
import json
import os
import socket
import sys

# import numpy raises ImportError (None there is the documented way; the
# type checkers know sys.modules as modules only).
sys.modules["numpy"] = None  # type: ignore[assignment]
import kvpool  # noqa: E402 - after numpy is blocked


def say(**kw: object) -> None:
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def hold(path: str, nr_pages: int) -> tuple[kvpool.Pool, int]:
    """A client holding one row of nr_pages pages."""
    p = kvpool.Pool(path)
    h = p.alloc_row()
    p.extend(array.array("Q", [h]),
             array.array("i", [nr_pages * p.info.page_tokens]))
    return p, h


def main(argv: list[str]) -> None:
    mode = argv[1]
    if mode in ("hold", "close-hold"):
        p, h = hold(argv[2], int(argv[3]))
        st = p.stats()
        if mode == "close-hold":
            p.close()
        say(ready=True, client_pages=st.client_pages)
        sys.stdin.read()  # until the test kills it or closes stdin
    elif mode == "import":
        p = kvpool.Pool(argv[2])
        sock = socket.socket(fileno=int(argv[3]))
        xfd = kvpool.recv_fd(sock)
        h, n = p.import_row(xfd)
        q = p.row_query(h)
        assert q.pages is not None  # row_query() without a pages buffer
        os.close(xfd)
        say(idx=kvpool.handle_idx(h), nr_pages=n,
            pages=[int(x) for x in q.pages],
            pages_type=type(q.pages).__module__ + "." +
            type(q.pages).__name__,
            client_pages=p.stats().client_pages)
        # And send it back as a new export, once the test has looked.
        sock.recv(1)
        p.commit(array.array("Q", [h]), array.array("i", [q.allocated_len]))
        back = p.export(h)
        kvpool.send_fd(sock, back)
        os.close(back)
        say(exported=True, client_pages=p.stats().client_pages)
        sock.recv(1)  # the test says when to go
    elif mode == "arena":
        # Read page A's first bytes, write a pattern into page B.
        p = kvpool.Pool(argv[2])
        a = p.map_arena()
        pa, pb = int(argv[3]), int(argv[4])
        seen = bytes(a.page(pa)[:16])
        pat = bytes(range(0x40, 0x50))
        a.page(pb)[:16] = pat
        say(seen=seen.hex(), wrote=pat.hex())
        sys.stdin.read()
        a.close()
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)
