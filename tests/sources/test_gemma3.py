"""Gemma 3 270M, built in: our stages against transformers reading the GGUF file itself, and its shape shown whole.

The reference is independent of the cached copy attn-tui opens: transformers de-quantises the
assembled GGUF file again in eager mode and returns its own `output_attentions`. The text is
longer than the 512-token window, so the local layers' window cuts real keys.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gguf")

from attn_tui.sources import gguf, gguf_file, hf

pytestmark = [pytest.mark.slow, pytest.mark.models]

TEXT = "The quick brown fox jumps over the lazy dog, and the dog sleeps on. " * 40  # > 512 tokens
LOCAL, GLOBAL = 0, 5  # the first sliding-window layer and the first global one


@pytest.fixture(scope="module")
def run(gemma3):
    return gguf.run(gemma3, TEXT)


@pytest.fixture(scope="module")
def reference(gemma3, run):
    """transformers' own tokens and eager attention from the assembled GGUF file (not from attn-tui's copy)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path, _ = gguf_file.verified_file("gemma3")
    with tempfile.TemporaryDirectory() as private, contextlib.redirect_stderr(io.StringIO()):
        (Path(private) / path.name).symlink_to(path)
        tokenizer = AutoTokenizer.from_pretrained(private, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(private, gguf_file=path.name, attn_implementation="eager").eval()
    ids = tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        return tokenizer, model(**ids, output_attentions=True).attentions  # 18 × (1, 4, N, N)


def test_the_shape_is_shown_whole(gemma3, run) -> None:
    config = gemma3.model.config
    assert (gemma3.name, gemma3.family, gemma3.layers, gemma3.heads) == ("gemma3", "gemma3", 18, 4)
    assert (config.model_type, config.num_key_value_heads, config.head_dim) == ("gemma3_text", 1, 256)
    trace = hf.trace_run(run, LOCAL, 0)
    n = len(trace.query_tokens)
    assert n > 512
    assert trace.meta.kv_heads == 1 and trace.meta.kv_map == (0, 0, 0, 0)
    names = trace.names()
    assert names.index("query") < names.index("query_norm") < names.index("query_rot") < names.index("scores")
    assert "key_norm" in names and trace.tensor("query", LOCAL, 0).shape == (n, 256)
    windows = []
    for layer in range(18):
        trace.fill(layer, 0)
        geometry = trace.geometry_of(layer)
        assert geometry is not None
        windows.append(geometry.window)
        assert geometry.positional.base == (1_000_000.0 if geometry.window is None else 10_000.0)
    assert windows == ([512] * 5 + [None]) * 3  # five local layers, then one global, three times


def test_a_local_and_a_global_layer_equal_output_attentions(gemma3, run, reference) -> None:
    tokenizer, attentions = reference
    for text in (TEXT, "나는 학교에 간다", "  tabs\tand émoji 🙂"):  # the copy's tokenizer is the GGUF file's
        assert gemma3.tokenizer(text)["input_ids"] == tokenizer(text)["input_ids"], text
    trace = hf.trace_run(run, LOCAL, 0)
    n = len(trace.query_tokens)
    for layer in (LOCAL, GLOBAL):
        for head in range(4):
            trace.fill(layer, head)
            ours = trace.tensor("weights", layer, head)
            assert (ours - attentions[layer][0, head]).abs().max() <= 1e-5, (layer, head)
    far = n - 1  # the last query: keys more than 512 back lie outside the local window
    assert float(trace.tensor("weights", LOCAL, 0)[far, : n - 512].abs().max()) == 0.0
    assert float(trace.tensor("weights", GLOBAL, 0)[far, : n - 512].sum()) > 0.0


def test_q_and_k_norms_are_the_models_own(gemma3, run) -> None:
    trace = hf.trace_run(run, GLOBAL, 2)
    attn = gemma3.model.layers[GLOBAL].self_attn
    with torch.no_grad():
        expected_q = attn.q_norm(trace.tensor("query", GLOBAL, 2))
        expected_k = attn.k_norm(trace.tensor("key", GLOBAL, 2))
    torch.testing.assert_close(trace.tensor("query_norm", GLOBAL, 2), expected_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trace.tensor("key_norm", GLOBAL, 2), expected_k, atol=1e-5, rtol=1e-5)
