# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The engine lane's guest side, both halves in one process.

  guest_engines.py DIR [REPS]

compare.py's kvpool side (SGLang's scenario through kvpool.sglang) into
DIR, then vllm_compare.py's (vLLM's scenario through kvpool.vllm, and
vLLM's own again, REPS timed runs of each) into DIR/vllm. One process,
because most of a guest run is importing torch under TCG; it runs on the
bench venv's python, which has the engine venv's packages too. Exit
status 1 if either half raised (each half still runs).
"""

import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402
import vllm_compare  # noqa: E402


def main(argv):
    out = argv[1]
    reps = int(argv[2]) if len(argv) > 2 else 0
    rc = 0
    try:
        compare.run_kvpool(out)
    except Exception:
        traceback.print_exc()
        rc = 1
    try:
        os.makedirs(os.path.join(out, "vllm"), exist_ok=True)
        vllm_compare.run_kvpool(os.path.join(out, "vllm"), reps)
    except Exception:
        traceback.print_exc()
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
