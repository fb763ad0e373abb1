# SPDX-License-Identifier: GPL-2.0-only
"""Pools of KV blocks for engine.py: one module per side.

A pool has available(), alloc(n) -> ids or None, free(ids), sample()
(a dict added to every step's sample: held_bytes at least), describe()
(static facts for the ready file) and close() (facts for the summary).
"""
