#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# text_check.py TEXT_TEST: check kvpoolctl's JSON and OpenMetrics string
# writers (text.c, through the text_test program) over every byte value:
# every byte alone and between ASCII, every pair of bytes, every lead of
# a 3- and 4-byte sequence with the bytes that matter after it (the edges
# of the continuation range and of E0/ED/F0/F4's second byte, and bytes
# outside it). Each output must parse (Python's json module; for
# OpenMetrics, prometheus_client's parser) and give back the input with
# each byte that starts no well-formed UTF-8 sequence as U+FFFD, which
# is worked out with Python's strict UTF-8 decoder (utf8_expect.py), not text.c's
# rules. NUL ends a C string and is not tried.
import json
import subprocess
import sys

sys.dont_write_bytecode = True
from utf8_expect import expect  # noqa: E402 (after the line above)
from prometheus_client.openmetrics.parser import \
    text_string_to_metric_families

prog = sys.argv[1]

cases = [bytes([b]) for b in range(1, 256)]
cases += [b'a' + bytes([b]) + b'z' for b in range(1, 256)]
cases += [bytes([a, b]) for a in range(1, 256) for b in range(1, 256)]
edges = [0x01, 0x0a, 0x22, 0x41, 0x5c, 0x7f, 0x80, 0x8f, 0x90, 0x9f,
         0xa0, 0xbf, 0xc0, 0xc2, 0xe0, 0xf0, 0xff]
for lead in range(0xc0, 0x100):
    for b in edges:
        for c in edges:
            cases.append(bytes([lead, b, c]))
            cases.append(bytes([lead, b, c, 0x41]))
            if lead >= 0xf0:
                for d in (0x41, 0x80, 0xbf, 0xc0):
                    cases.append(bytes([lead, b, c, d]))
# Valid text, and the three characters both formats escape.
cases += ['tenant ÿ € 𝄞'.encode(), b'a"b\\c\nd', b'\x1f\x7f']


def run(mode):
    inp = ''.join(c.hex() + '\n' for c in cases).encode()
    r = subprocess.run([prog, mode], input=inp, capture_output=True,
                       check=True)
    return r.stdout


fails = 0
lines = run('json').split(b'\n')
assert lines[-1] == b'', 'json: output does not end in a newline'
for c, line in zip(cases, lines[:-1], strict=True):
    try:
        got = json.loads(line.decode('utf-8', 'strict'))
    except (UnicodeDecodeError, ValueError) as e:
        print(f'FAIL json {c.hex()}: {line!r}: {e}')
        fails += 1
        continue
    if got != expect(c):
        print(f'FAIL json {c.hex()}: {got!r}, want {expect(c)!r}')
        fails += 1

text = run('om').decode('utf-8', 'strict')
fams = list(text_string_to_metric_families(text))
samples = fams[0].samples
assert len(fams) == 1 and len(samples) == len(cases), 'om: sample count'
for s in samples:
    c = cases[int(s.labels['i'])]
    if s.labels['v'] != expect(c):
        print(f"FAIL om {c.hex()}: {s.labels['v']!r}, want {expect(c)!r}")
        fails += 1

if fails:
    sys.exit(f'FAIL text_check: {fails} of {2 * len(cases)} strings')
print(f'PASS text_check: {len(cases)} byte strings, JSON and OpenMetrics')
