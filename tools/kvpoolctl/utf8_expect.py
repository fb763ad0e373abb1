# SPDX-License-Identifier: GPL-2.0-only
#
# What kvpoolctl's text writers (text.c) make of bytes, worked out with
# Python's strict UTF-8 decoder rather than text.c's rules: each
# well-formed sequence as it is, each byte that starts none as U+FFFD.
# Shared by text_check.py and selftests/kernel/kvpoolctl_check.py.


def expect(b):
    """b with each byte that starts no well-formed sequence as U+FFFD."""
    out, i = [], 0
    while i < len(b):
        for n in range(1, 5):
            try:
                out.append(b[i:i + n].decode('utf-8', 'strict'))
                i += n
                break
            except UnicodeDecodeError:
                pass
        else:
            out.append('\ufffd')
            i += 1
    return ''.join(out)
