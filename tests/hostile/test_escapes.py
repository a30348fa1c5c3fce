"""Nothing from user data reaches the terminal raw: every format, every notice, in a child process.

The child's stdout and stderr are pipes, so Rich emits no colour codes of its own: any ESC, C1
control or bidi override in what comes back was copied from the input.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from attn_tui.io.controls import UNSAFE, json_safe, printable
from tests.hostile.helpers import TIME_LIMIT, attn_tui

CLIPBOARD = "\x1b]52;c;aGk=\x07"  # OSC 52: writes the user's clipboard
TITLE = "\x1b]2;pwned\x1b\\"  # OSC 2: sets the terminal's title
OVERRIDE = "\u202eevil"  # right-to-left override: reverses the rest of the line
C1 = "\x9b31m"  # CSI as one C1 byte
ISOLATE = "\u2067x\u2069\u200f\u061c"
HOSTILE = f"ok {CLIPBOARD} {TITLE} {OVERRIDE} {C1} {ISOLATE}"


def _clean(text: str) -> bool:
    """Nothing unsafe but line ends (CSV's are \\r\\n)."""
    return UNSAFE.search(text.replace("\r\n", "").replace("\n", "")) is None


def test_printable_draws_every_unsafe_character_one_for_one() -> None:
    shown = printable(HOSTILE + "\x7f\u2028")
    assert _clean(shown) and len(shown) == len(HOSTILE) + 2  # one for one: offsets into the text stay valid
    assert shown.startswith("ok ␛]52;c;aGk=␇ ␛]2;pwned␛\\ �evil")
    assert printable("나는 학교에 간다 café") == "나는 학교에 간다 café"  # text that is safe is kept as it is


def test_json_safe_escapes_what_json_leaves_raw_and_reads_back_exact() -> None:
    document = json_safe(json.dumps({"t": HOSTILE + "\x7f", "k": "한국어"}, ensure_ascii=False))
    assert _clean(document) and "\\u202e" in document and "\\u009b" in document and "한국어" in document
    assert json.loads(document) == {"t": HOSTILE + "\x7f", "k": "한국어"}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_tokens_print_without_escapes(fmt: str) -> None:
    outcome = attn_tui("stages", "--text", HOSTILE, "--format", fmt)
    assert outcome.code == 0, outcome.err
    assert _clean(outcome.out) and _clean(outcome.err), ascii(outcome.out[:400])
    if fmt == "json":  # escaped, and read back exactly as typed
        assert json.loads(outcome.out)["stages"][0]["axes"][0]["labels"] == HOSTILE.split()
    else:
        assert "␛]52;c;" in outcome.out  # drawn (and cut to its 10 cells), never acted on


@pytest.mark.slow
def test_csv_to_a_pipe_draws_controls_as_the_table_does() -> None:
    """CSV has no escape for a control character, and a pipe often ends at a terminal (`| less -R`, `| cat`): its
    labels show them as pictures, one for one, as the table does (the JSON export keeps them exact)."""
    outcome = attn_tui("stages", "--text", HOSTILE, "--format", "csv", "--stage", "weights")
    assert outcome.code == 0, outcome.err
    assert _clean(outcome.out), ascii(outcome.out[:400])
    rows = list(csv.reader(io.StringIO(outcome.out)))
    shown = [printable(token) for token in HOSTILE.split()]
    assert rows[0][1:] == shown and [r[0] for r in rows[1:]] == shown
    assert "\r\nok," in outcome.out  # a plain row is left unquoted


_SGR = re.compile(r"\x1b\[[0-9;]*m")  # Rich's own colours on a terminal


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_a_terminal_gets_no_escape_from_the_input(fmt: str) -> None:
    """stdout a pseudo-terminal, as a person runs it: only Rich's colour codes may hold ESC."""
    leader, follower = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--text", HOSTILE, "--format", fmt,
                                 "--stage", "weights"], stdout=follower, stderr=subprocess.PIPE, timeout=TIME_LIMIT,
                                env={**os.environ, "COLUMNS": "100"})
        os.close(follower)
        chunks = []
        while select.select([leader], [], [], 0.5)[0]:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    out = _SGR.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "")
    assert result.returncode == 0, result.stderr
    assert _clean(out), ascii(out[:400])
    assert ("␛]52;c;" in out) if fmt != "json" else ("\\u001b]52;c;aGk=\\u0007" in out)


@pytest.mark.slow
def test_a_json_file_keeps_the_data_exact_and_a_csv_file_draws_it(tmp_path: Path) -> None:
    out = attn_tui("stages", "--text", HOSTILE, "--format", "json", "--out", str(tmp_path / "t.json"))
    assert out.code == 0 and _clean(out.out), out
    text = (tmp_path / "t.json").read_text()
    assert _clean(text) and json.loads(text)["stages"][0]["axes"][0]["labels"] == HOSTILE.split()
    out = attn_tui("stages", "--text", HOSTILE, "--format", "csv", "--stage", "weights", "--out",
                   str(tmp_path / "w.csv"))
    assert out.code == 0, out
    with open(tmp_path / "w.csv", newline="") as handle:
        text = handle.read()
    rows = list(csv.reader(io.StringIO(text)))
    assert _clean(text) and rows[2][0] == printable(CLIPBOARD)  # a file that is `cat` later is a terminal's too


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["stages", "--text", "a b", "--stage", TITLE],  # an unknown stage, quoted in the error line
    ["stages", "--model", f"no{CLIPBOARD}such", "--text", "a"],  # an unknown model, quoted
    ["stages", "--text", "a", "--variant", OVERRIDE],  # an argparse choice error
    ["stages", "--q", f"/nonexistent/{TITLE}"],  # a missing file, named
])
def test_an_error_line_quoting_user_text_is_clean(argv: list[str]) -> None:
    outcome = attn_tui(*argv)
    assert outcome.refused(), outcome
    assert _clean(outcome.err), ascii(outcome.err)  # drawn as ␛ or spelled \\x1b, never sent


@pytest.mark.slow
def test_trace_notices_name_the_file_without_escapes(tmp_path: Path) -> None:
    name = f"left{TITLE}.py"
    (tmp_path / name).write_text("import threading, time\nimport torch\nq = torch.randn(1, 1, 2, 4)\n"
                                 "torch.nn.functional.scaled_dot_product_attention(q, q, q)\n"
                                 "threading.Thread(target=time.sleep, args=(30,)).start()\n")
    outcome = attn_tui("trace", "--format", "table", str(tmp_path / name), cwd=tmp_path)
    assert outcome.code == 0 and "left 1 thread running" in outcome.err, outcome
    assert _clean(outcome.err) and _clean(outcome.out) and "left␛]2;pwned␛\\.py" in outcome.err


def _hostile_gpt2(tmp_path: Path) -> Path:
    """A 1-layer GPT-2 whose vocabulary holds the hostile words, in a folder whose name holds an OSC sequence."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<|endoftext|>", "ok", *HOSTILE.split()[1:]]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>",
                                                pad_token="<|endoftext|>")
    torch.manual_seed(0)
    model = transformers.GPT2Model(transformers.GPT2Config(vocab_size=len(words), n_positions=16, n_embd=8,
                                                           n_layer=1, n_head=2))
    path = tmp_path / f"tiny{TITLE}gpt2"
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.mark.slow
def test_heads_and_a_models_tokens_print_without_escapes(tmp_path: Path) -> None:
    folder = _hostile_gpt2(tmp_path).name  # relative, so the name is shown whole
    table = attn_tui("heads", "--model", folder, "--text", HOSTILE, cwd=tmp_path)
    assert table.code == 0, table.err
    assert _clean(table.out) and _clean(table.err) and "tiny␛]2;pwned␛\\gpt2" in table.out, ascii(table.out[:300])
    printed = attn_tui("heads", "--model", folder, "--text", HOSTILE, "--format", "json", cwd=tmp_path)
    assert printed.code == 0 and _clean(printed.out), printed.err
    shown = json.loads(printed.out)
    assert shown["tokens"] == HOSTILE.split() and shown["model"] == folder  # escaped, read back exact
    stages = attn_tui("stages", "--model", folder, "--text", HOSTILE, "--stage", "weights", cwd=tmp_path)
    assert stages.code == 0 and _clean(stages.out) and "␛]52;c;" in stages.out, stages.err


EVERY_UNSAFE = [chr(c) for c in range(0x110000) if UNSAFE.match(chr(c)) and c != 0]  # argv holds no NUL
EVERY_TOKEN = " ".join(f"t{c}u" for c in EVERY_UNSAFE)
RECORDED = ("import torch\nclass Attn(torch.nn.Module):\n    def forward(self, q):\n"
            "        return torch.softmax(q @ q.transpose(-1, -2), -1) @ q\n"
            "model = torch.nn.Module()\n"
            f"model.add_module({EVERY_TOKEN.replace(' ', '')!r}, Attn())\n"  # a module named by every unsafe character
            "for name, module in model.named_children():\n    module(torch.randn(3, 4))\n"
            f"print({EVERY_TOKEN!r})\n")


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["stages", "--text", EVERY_TOKEN, "--format", "table"],
    ["stages", "--text", EVERY_TOKEN, "--format", "json"],
    ["stages", "--text", EVERY_TOKEN, "--format", "csv", "--stage", "weights"],
    ["stages", "--text", EVERY_TOKEN, "--format", "json", "--out", "{tmp}/t.json"],
    ["stages", "--text", EVERY_TOKEN, "--format", "csv", "--out", "{tmp}/csv"],
    ["stages", "--text", EVERY_TOKEN, "--format", "npz", "--out", "{tmp}/t.npz"],
    ["trace", "--format", "table", "{tmp}/recorded.py"],
    ["trace", "--format", "json", "{tmp}/recorded.py"],
], ids=["table", "json", "csv", "json-file", "csv-files", "npz-file", "trace-table", "trace-json"])
def test_every_unsafe_character_through_every_format(argv: list[str], tmp_path: Path) -> None:
    """Each character that acts on a terminal, in typed text, a recorded module's name and a traced file's output:
    nothing of it comes back raw on either stream or in any file written (an .npz's names included)."""
    (tmp_path / "recorded.py").write_text(RECORDED)
    outcome = attn_tui(*(part.format(tmp=tmp_path) for part in argv), cwd=tmp_path)
    assert outcome.code == 0, outcome.err[-500:]
    passed_on = outcome.err.replace("\t", "").replace("\r", "")  # a traced file's own tabs and line ends act
    assert _clean(outcome.out) and _clean(passed_on), ascii((outcome.out + outcome.err)[:400])
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "recorded.py"]
    for path in written:
        if path.suffix == ".npz":
            import zipfile

            with zipfile.ZipFile(path) as archive:
                assert all(_clean(name) for name in archive.namelist()), archive.namelist()
        else:
            assert _clean(path.read_text(encoding="utf-8")), path
    if argv[0] == "trace":
        assert "t␛u" in outcome.err  # its print, drawn
    if argv[0] == "stages" and "json" in argv:
        document = json.loads(written[0].read_text(encoding="utf-8") if written else outcome.out)
        assert document["stages"][0]["axes"][0]["labels"] == EVERY_TOKEN.split()  # JSON: exact, as escapes

