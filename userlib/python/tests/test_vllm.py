# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvpool.vllm without vLLM: its version check and its plugin's
do-nothing default (docs/vllm.md). The block pool itself is checked
against vLLM in the engine lane (tests/engine/vllm_compare.py)."""

import re

import pytest

from kvpool import vllm as kv
from kvpool import vllm_plugin


@pytest.mark.parametrize("version", ["0.33.0", "0.33.12", "0.33.1rc2"])
def test_supported_versions(version: str) -> None:
    kv.check_version(version)


@pytest.mark.parametrize("version", ["0.32.9", "0.34.0", "1.33.0", "0.3",
                                     "?"])
def test_other_versions_refused(version: str) -> None:
    with pytest.raises(RuntimeError,
                       match=r"supports vLLM 0\.33\.x \(>=0\.33\.0,<0\.34\);"
                       r" this is vLLM " + re.escape(version) + "$"):
        kv.check_version(version)


def test_plugin_does_nothing_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    # vLLM runs the plugin in every process: without the variable it
    # must not import vLLM or open a pool (or fail on a vLLM it does
    # not support).
    monkeypatch.delenv(kv.POOL_ENV, raising=False)
    monkeypatch.setattr(kv, "_built", {})
    vllm_plugin.register()
    assert kv._built == {}
