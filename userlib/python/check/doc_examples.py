# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Write the docs' Python examples out as files for the type checkers.

    doc_examples.py OUTDIR DOC...

Every ```python block of each DOC becomes OUTDIR/<doc>_<line>.py (line:
the block's first line in DOC): a comment naming the doc, then blank
lines, so that each line of code sits on its line number in the doc and
a checker's "file:line" is the doc's line. The blocks are checked as
they are, each on its own: an example a reader copies must stand
alone, imports included. OUTDIR is emptied of
earlier .py files first, so that a block removed from a doc is not
checked from a stale copy. Exits 1 if no DOC has a block (a doc moved
or renamed would otherwise check nothing and pass).
"""

import os
import re
import sys

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def blocks(path):
    """(first line number, text) of each ```python block of path."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i + 1
        i = start
        while i < len(lines) and not FENCE.match(lines[i]):
            i += 1
        if lang == "python":
            body = [ln[len(indent):] if ln.startswith(indent) else ln
                    for ln in lines[start:i]]
            out.append((start + 1, "\n".join(body) + "\n"))
        i += 1
    return out


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    outdir, docs = argv[1], argv[2:]
    os.makedirs(outdir, exist_ok=True)
    for name in os.listdir(outdir):
        if name.endswith(".py"):
            os.unlink(os.path.join(outdir, name))
    n = 0
    for doc in docs:
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(doc))[0])
        for line, text in blocks(doc):
            dst = os.path.join(outdir, "%s_%d.py" % (stem, line))
            with open(dst, "w", encoding="utf-8") as f:
                f.write("# From %s: line numbers are the doc's.\n" % doc
                        + "\n" * (line - 2) + text)
            n += 1
    if n == 0:
        sys.exit("doc_examples: no ```python block in " + " ".join(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
