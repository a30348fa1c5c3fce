"""A model folder is data, never code: broken or scheming folders are refused with one line, and run nothing."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import pytest

from tests.hostile.helpers import attn_tui

pytestmark = pytest.mark.slow

TINY_BERT = {"model_type": "bert", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
             "intermediate_size": 16, "vocab_size": 8, "max_position_embeddings": 16}
VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nc\n"


class _Marker:
    """Unpickling this would run `open(marker, 'w')`: weights_only loading must refuse it."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _folder(tmp_path: Path, name: str, config: object, files: dict[str, bytes | str] | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for file, content in (files or {}).items():
        target = folder / file
        target.write_bytes(content) if isinstance(content, bytes) else target.write_text(content)
    return folder


def _remote_code(tmp_path: Path, marker: Path) -> Path:
    module = f"open({str(marker)!r}, 'w').write('ran')\nfrom transformers import BertConfig as EvilConfig\n"
    return _folder(tmp_path, "remote", {**TINY_BERT, "model_type": "evil", "auto_map": {
        "AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}}, {"evil.py": module, "vocab.txt": VOCAB})


def test_a_folder_that_ships_code_never_runs_it_whatever_stdin_says(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = _remote_code(tmp_path, marker)
    for stdin in (b"y\n", b"yes\n" * 100, b""):
        outcome = attn_tui("stages", "--model", str(folder), "--text", "a b", stdin=stdin)
        assert outcome.refused("auto_map"), outcome
        outcome = attn_tui("heads", "--model", str(folder), "--text", "a b", stdin=stdin)
        assert outcome.refused("never runs a model folder's code"), outcome
    tokenizer_only = _folder(tmp_path, "tok", TINY_BERT, {"vocab.txt": VOCAB, "evil.py": "raise SystemExit",
                                                          "tokenizer_config.json": json.dumps(
                                                              {"auto_map": {"AutoTokenizer": ["evil.T", None]}})})
    assert attn_tui("stages", "--model", str(tokenizer_only), "--text", "a").refused("tokenizer_config.json")
    assert not marker.exists()


def test_pickled_weights_that_would_run_code_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = _folder(tmp_path, "pickle", TINY_BERT,
                     {"vocab.txt": VOCAB, "pytorch_model.bin": pickle.dumps({"w": _Marker(marker)})})
    outcome = attn_tui("stages", "--model", str(folder), "--text", "a b")
    assert outcome.refused("cannot load"), outcome
    assert not marker.exists()


@pytest.mark.parametrize("config,files,fragment", [
    ("[1, 2]", {}, "is a JSON list, not an object"),
    ("{not json", {}, "is not readable JSON"),
    ({"model_type": "no-such-architecture"}, {}, "has model_type 'no-such-architecture'"),
    ({**TINY_BERT, "model_type": "t5"}, {}, "has model_type 't5'"),
    (TINY_BERT, {"vocab.txt": VOCAB, "model.safetensors": struct.pack("<Q", 10_000) + b'{"w": '}, "cannot load"),
    (TINY_BERT, {"vocab.txt": VOCAB, "pytorch_model.bin": bytes(range(256)) * 8}, "cannot load"),
    (TINY_BERT, {}, "has no tokenizer"),
    (TINY_BERT, {"vocab.txt": VOCAB}, "cannot load"),  # no weights
])
def test_broken_folders_are_one_line(tmp_path: Path, config: object, files: dict, fragment: str) -> None:
    folder = _folder(tmp_path, "broken", config, files)
    outcome = attn_tui("stages", "--model", str(folder), "--text", "a b")
    assert outcome.refused(fragment), outcome
