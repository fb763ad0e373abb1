#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# kvpoolctl_check.py MODE ARGS < OUTPUT: kvpoolctl_test's checks of what
# kvpoolctl printed, with real parsers (Python's json module; the
# OpenMetrics parser of Debian's python3-prometheus-client). Exits 0 when
# the output holds, 1 with the reason otherwise.
#
# An argument @FILE stands for the words of FILE.
#
#   json POOL HEX...     status --json: valid JSON; pool POOL's tenants an
#                        array of every tenant (tenants_shown "all"), with
#                        a tenant labelled each HEX (bytes; those that
#                        start no UTF-8 sequence read as U+FFFD)
#   list POOL HEX...     tenant list --json: the same
#   own POOL UID         status --json as a user: pool POOL's tenants are
#                        [that user's own] (tenants_shown "own")
#   none POOL            status --json as a user who cannot open POOL:
#                        tenants [] (tenants_shown "none"), a note why
#   retired N M          status --json: retired_pools N and
#                        retired_chunks M, numbers
#   metrics POOL PAGES HEX
#                        metrics: parses as Prometheus's text format (the
#                        client's parser of it); kvpool_up 1;
#                        kvpool_pool_pages{pool} = PAGES; a tenant sample
#                        labelled HEX; no OpenMetrics-only line
#   openmetrics POOL PAGES HEX
#                        metrics --openmetrics: the same, parsed by the
#                        OpenMetrics parser; units; ends in "# EOF"
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools', 'kvpoolctl'))
from utf8_expect import expect  # noqa: E402 (after the path)


def fail(msg):
    print(f'kvpoolctl_check: FAIL: {msg}')
    sys.exit(1)


def load_json(raw):
    try:
        return json.loads(raw.decode('utf-8', 'strict'))
    except (UnicodeDecodeError, ValueError) as e:
        fail(f'not JSON: {e}')


def pool_of(doc, pool):
    for p in doc['pools']:
        if p['pool_id'] == pool:
            return p
    fail(f'pool {pool} not in the output')


def check_labels(tenants, hexes):
    if not isinstance(tenants, list):
        fail(f'tenants is no array: {tenants!r}')
    labels = [t['label'] for t in tenants]
    for h in hexes:
        want = expect(bytes.fromhex(h))
        if want not in labels:
            fail(f'no tenant labelled {want!r} (from {h}); labels {labels!r}')


def check_metrics(raw, om, args):
    """kvpoolctl metrics' output, in the text format or OpenMetrics."""
    if om:
        from prometheus_client.openmetrics.parser import \
            text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families
    text = raw.decode('utf-8', 'strict')
    if om and not text.endswith('# EOF\n'):
        fail('no "# EOF" line at the end')
    # What node_exporter 1.5 and promtool refuse a whole file for.
    for bad in ('# EOF', '# UNIT', ' info\n'):
        if not om and bad in text:
            fail(f'{bad.strip()!r} in the text format')
    try:
        fams = {f.name: f for f in text_string_to_metric_families(text)}
    except ValueError as e:
        fail(f'{"OpenMetrics" if om else "text format"} parser: {e}')
    pool, pages, label = args[0], int(args[1]), expect(
        bytes.fromhex(args[2]))
    if [s.value for s in fams['kvpool_up'].samples] != [1]:
        fail(f"kvpool_up: {fams['kvpool_up'].samples!r}, want 1")
    got = [s.value for s in fams['kvpool_pool_pages'].samples
           if s.labels['pool'] == pool]
    if got != [pages]:
        fail(f'kvpool_pool_pages{{pool="{pool}"}}: {got}, want {pages}')
    info = fams['kvpool_pool' if om else 'kvpool_pool_info']
    if info.type != ('info' if om else 'gauge') or \
            [s.name for s in info.samples
             if s.labels['pool'] == pool] != ['kvpool_pool_info']:
        fail(f'kvpool_pool_info: {info.type} {info.samples!r}')
    if om and fams['kvpool_pool_mem_bytes'].unit != 'bytes':
        fail('kvpool_pool_mem_bytes has no unit bytes')
    labels = [s.labels.get('label') for s in
              fams['kvpool_tenant_pages'].samples
              if s.labels['pool'] == pool]
    if label not in labels:
        fail(f'no kvpool_tenant_pages labelled {label!r}: {labels!r}')
    # The pool's counters: counter families, samples named _total.
    for c in ('clients_opened', 'refused_space', 'refused_quota',
              'reclaimed_pages'):
        f = fams.get('kvpool_pool_' + c)
        if f is None or f.type != 'counter':
            fail(f'kvpool_pool_{c}: not a counter family')
        got = [s for s in f.samples if s.labels['pool'] == pool]
        if len(got) != 1 or got[0].name != f'kvpool_pool_{c}_total':
            fail(f'kvpool_pool_{c}: samples {got!r}')
    for f in fams.values():
        if f.type == 'counter' and f.name.startswith('kvpool_tenant'):
            fail(f'{f.name}: tenants have no counters')


def main():
    mode, args = sys.argv[1], []
    # @FILE: the arguments in FILE, one a line (long hex lists).
    for a in sys.argv[2:]:
        if a.startswith('@'):
            with open(a[1:], encoding='ascii') as f:
                args += f.read().split()
        else:
            args.append(a)
    raw = sys.stdin.buffer.read()
    if mode == 'json':
        p = pool_of(load_json(raw), int(args[0]))
        if p['tenants_shown'] != 'all':
            fail(f"tenants_shown {p['tenants_shown']!r}, want 'all'")
        check_labels(p['tenants'], args[1:])
    elif mode == 'list':
        doc = load_json(raw)
        check_labels(doc['tenants'], args[1:])
    elif mode == 'own':
        p = pool_of(load_json(raw), int(args[0]))
        t = p['tenants']
        if p['tenants_shown'] != 'own' or len(t) != 1 or \
                t[0]['uid'] != int(args[1]) or t[0]['nr_clients'] is not None:
            fail(f"own tenant: shown {p['tenants_shown']!r}, tenants {t!r}")
    elif mode == 'none':
        p = pool_of(load_json(raw), int(args[0]))
        if p['tenants_shown'] != 'none' or p['tenants'] != [] or \
                not p['tenants_note']:
            fail(f"no tenants: shown {p['tenants_shown']!r}, "
                 f"tenants {p['tenants']!r}, note {p['tenants_note']!r}")
    elif mode == 'retired':
        doc = load_json(raw)
        got = (doc.get('retired_pools'), doc.get('retired_chunks'))
        if got != (int(args[0]), int(args[1])):
            fail(f'retired (pools, chunks) {got!r}, want '
                 f'({args[0]}, {args[1]})')
    elif mode in ('metrics', 'openmetrics'):
        check_metrics(raw, mode == 'openmetrics', args)
    else:
        fail(f'unknown mode {mode}')
    print(f'kvpoolctl_check: {mode}: ok')


main()
