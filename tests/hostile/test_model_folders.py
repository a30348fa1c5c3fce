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


_KB = struct.pack("<Q", 64) + b'{"w":{"dtype":"U8","shape":[1024],"data_offsets":[0,1024]}}'.ljust(64) + b"x" * 1024


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


@pytest.mark.parametrize("sizes,fragment", [
    # 1 kB of weights, 16 TB of model: its embeddings alone outgrow memory, offloaded or not
    ({"vocab_size": 10**9, "hidden_size": 4096}, "even with its layers offloaded to disk (the embeddings"),
    ({"num_hidden_layers": 10**6, "hidden_size": 4096}, "even with its layers offloaded to disk (one layer's weights"),
    # a size that is no whole number ≥ 1 is refused by the checks every family's config passes, naming what it must be
    ({"hidden_size": "8\x1b]2;x\x07"}, "has hidden_size '8\\x1b]2;x\\x07': it must be a whole number, at least 1"),
    ({"vocab_size": -1}, "has vocab_size -1: it must be a whole number, at least 1"),
    ({"intermediate_size": 1.5}, "has intermediate_size 1.5: it must be a whole number, at least 1"),
])
def test_config_sizes_are_budgeted_before_transformers_builds_the_model(tmp_path: Path, sizes: dict,
                                                                         fragment: str) -> None:
    folder = _folder(tmp_path, "sized", {**TINY_BERT, **sizes}, {"vocab.txt": VOCAB, "model.safetensors": _KB})
    outcome = attn_tui("stages", "--model", str(folder), "--text", "a b")
    assert outcome.refused(fragment), outcome
    assert attn_tui("--model", str(folder), "--text", "a b").refused(fragment)  # the app: before it starts


def test_a_tokenizer_file_is_sized_before_it_is_parsed(tmp_path: Path) -> None:
    huge = _folder(tmp_path, "huge", TINY_BERT, {"vocab.txt": VOCAB})
    with open(huge / "tokenizer.json", "wb") as handle:  # sparse: no disk is spent
        handle.truncate(300 * 1024**2)
    assert attn_tui("stages", "--model", str(huge), "--text", "a").refused("attn-tui reads tokenizer files up to")
    large = _folder(tmp_path, "large", TINY_BERT, {"vocab.txt": VOCAB})
    with open(large / "tokenizer.json", "wb") as handle:
        handle.truncate(100 * 1024**2)  # 1.6 GB once parsed, over a 1 GB limit
    outcome = attn_tui("stages", "--model", str(large), "--text", "a", "--max-memory", "1G")
    assert outcome.refused("the largest part, tokenizer"), outcome


@pytest.mark.parametrize("name,size", [("merges.txt", 300 * 1024**2), ("special_tokens_map.json", 64 * 1024**2),
                                       ("added_tokens.json", 1024**3)])
def test_a_tokenizers_side_file_is_sized_before_it_is_parsed(tmp_path: Path, name: str, size: int) -> None:
    """What the tokenizer library reads beside vocab.txt or tokenizer.json is sized too: never parsed whole."""
    folder = _folder(tmp_path, "side", TINY_BERT, {"vocab.txt": VOCAB})
    with open(folder / name, "wb") as handle:  # sparse: no disk is spent
        handle.truncate(size)
    outcome = attn_tui("stages", "--model", str(folder), "--text", "a")
    assert outcome.refused(f"{name} of "), outcome
    assert "attn-tui reads tokenizer files up to" in outcome.err


@pytest.mark.parametrize("family,config", [
    ("bert", {"hidden_size": 256, "num_hidden_layers": 3, "intermediate_size": 1024, "vocab_size": 5000,
              "max_position_embeddings": 512, "type_vocab_size": 2, "num_attention_heads": 4}),
    ("gpt2", {"n_embd": 256, "n_layer": 3, "vocab_size": 5000, "n_positions": 512, "n_head": 4}),  # n_inner: 4 × width
])
def test_the_estimate_follows_what_transformers_builds(tmp_path: Path, family: str, config: dict) -> None:
    """config.json's sizes give the parameters transformers allocates, within the biases and norms (3%)."""
    import transformers

    from attn_tui.sources.folder import config_parameters

    folder = _folder(tmp_path, family, {"model_type": family, **config})
    built = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(family, **config))
    real = sum(p.numel() for p in built.parameters())
    assert abs(config_parameters(folder) - real) / real < 0.03, (config_parameters(folder), real)
