"""The module namespaces flex_attention is looked for in: listed once, listed anew when a module comes or goes."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

from attn_tui.sources.recorder import whose
from attn_tui.sources.recorder.hooks import flex


def test_a_module_loaded_after_the_last_list_is_found_and_one_dropped_is_forgotten(tmp_path: Path) -> None:
    first = flex._namespaces()
    assert flex._namespaces() is first  # nothing loaded since: the same list, not a walk over sys.modules
    module = types.ModuleType("users_own_model")
    module.__file__ = str(tmp_path / "users_own_model.py")  # a user's file: outside torch, attn-tui, the stdlib
    sys.modules[module.__name__] = module
    try:
        assert any(ns is vars(module) for ns in flex._namespaces())
    finally:
        del sys.modules[module.__name__]
    assert not any(ns is vars(module) for ns in flex._namespaces())


def test_a_module_replaced_under_the_same_name_is_read_anew(tmp_path: Path) -> None:
    old, new = types.ModuleType("users_swapped"), types.ModuleType("users_swapped")
    old.__file__ = new.__file__ = str(tmp_path / "users_swapped.py")
    sys.modules["users_swapped"] = old
    try:
        assert any(ns is vars(old) for ns in flex._namespaces())
        sys.modules["users_swapped"] = new  # same size, same last name: another module
        found = flex._namespaces()
        assert any(ns is vars(new) for ns in found) and not any(ns is vars(old) for ns in found)
    finally:
        del sys.modules["users_swapped"]


def test_realpath_by_folder_matches_os_realpath(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.py").write_text("")
    (tmp_path / "link").symlink_to(real)
    (real / "b.py").symlink_to(real / "a.py")
    for path in (tmp_path / "link" / "a.py", real / "b.py", real / "a.py", tmp_path / "link" / ".." / "x.py"):
        assert whose._realpath(str(path)) == os.path.realpath(str(path))
