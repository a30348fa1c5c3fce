"""Real transformers: our stages reproduce the model's own `output_attentions` exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui.cli import main  # noqa: E402
from attn_tui.sources import folder, hf  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

SENTENCES = ("the quick brown fox jumps over the lazy dog", "attention is all you need")


@pytest.fixture(scope="module")
def minilm() -> hf.LoadedModel:
    return hf.load("minilm")


def test_minilm_weights_equal_output_attentions_batched_with_padding(minilm: hf.LoadedModel) -> None:
    """Two sentences in one padded batch, as HF runs them; every layer and head of both."""
    tok, model = minilm.tokenizer, minilm.model
    batch = tok(list(SENTENCES), return_tensors="pt", padding=True)
    with torch.no_grad():
        reference = model(**batch, output_attentions=True).attentions  # layers × (2, heads, N, N)
    n = batch["input_ids"].shape[1]
    assert batch["attention_mask"][1].sum() < n  # the second sentence really is padded
    for index, text in enumerate(SENTENCES):
        run = hf.run(minilm, text, pad_to=n)
        assert run.tokens.count("[PAD]") == int((batch["attention_mask"][index] == 0).sum())
        trace = hf.trace_run(run, 0, 0)  # one trace of the run; the other layers fill in on demand
        for layer in range(minilm.layers):
            for head in range(minilm.heads):
                ours = trace.tensor("weights", layer, head)
                assert (ours - reference[layer][index, head]).abs().max() <= 1e-5, (index, layer, head)


def test_minilm_trace_has_scaled_dot_stages_and_marks_specials(minilm: hf.LoadedModel) -> None:
    trace = hf.trace_run(hf.run(minilm, "나는 학교에 간다", pad_to=20), 3, 7)
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output", "moved"]
    assert trace.query_tokens[0] == "[CLS]"
    special = trace.meta.special_tokens
    assert 0 in special and trace.query_tokens.index("[SEP]") in special
    assert trace.query_tokens[-1] == "[PAD]" and len(trace.query_tokens) - 1 in special
    # The head's output is the same slice of the model's own attention context.
    assert trace.stage("query", 3, 7).shape == (20, 32)


def _tiny_gpt2(tmp_path) -> str:
    """A 2-layer GPT-2 with random weights and a word-level tokenizer, saved like a real model."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<|endoftext|>", "the", "cat", "sat", "on", "mat", "a", "dog", "ran"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>",
                                                pad_token="<|endoftext|>")
    config = transformers.GPT2Config(vocab_size=len(words), n_positions=32, n_embd=16, n_layer=2, n_head=4)
    torch.manual_seed(0)
    model = transformers.GPT2Model(config)
    path = tmp_path / "tiny-gpt2"
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)


def test_tiny_gpt2_matches_output_attentions_and_shows_causal_mask(tmp_path) -> None:
    loaded = hf.load(_tiny_gpt2(tmp_path))
    assert loaded.family == "gpt2" and loaded.causal
    text = "the cat sat on the mat"
    run = hf.run(loaded, text)
    ids = loaded.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        reference = loaded.model(**ids, output_attentions=True).attentions
    trace = hf.trace_run(run, 0, 0)
    for layer in range(2):
        for head in range(4):
            assert (trace.tensor("weights", layer, head) - reference[layer][0, head]).abs().max() <= 1e-5
    masked = trace.tensor("masked", 1, 2)
    n = masked.shape[0]
    above = torch.ones(n, n, dtype=torch.bool).triu(1)
    assert torch.isinf(masked[above]).all() and torch.isfinite(masked[~above]).all()


def test_cli_model_json(capsys) -> None:
    code = main(["stages", "--model", "minilm", "--text", "the cat sat", "--layer", "1", "--head", "2",
                 "--format", "json", "--stage", "weights"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["tokens"]["query"] == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    assert [(s["layer"], s["head"]) for s in doc["stages"]] == [(1, 2)]


@pytest.mark.parametrize("argv,fragment", [
    (["--model", "no-such-model-anywhere", "--text", "a"], "no model 'no-such-model-anywhere'"),
    (["--model", "minilm", "--text", "a", "--layer", "6"], "layers 0…5"),
    (["--model", "minilm", "--text", "a", "--head", "12"], "heads 0…11"),
    (["--model", "minilm"], "--model needs --text"),
])
def test_cli_model_errors_exit_2(capsys, argv: list[str], fragment: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stages", *argv])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_directory_without_config_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(folder.ModelError, match="has no config.json"):
        folder.check_folder(Path(folder.resolve(str(tmp_path))))


def test_cli_heads_summary_json(capsys) -> None:
    code = main(["heads", "--model", "minilm", "--text", "the cat sat", "--pad-to", "7", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and len(doc["stats"]) == 6 * 12
    rolled = torch.tensor(doc["rollout"])
    assert rolled.shape == (7, 7) and torch.all(rolled[:, 5:] == 0)  # padding keeps no share
    assert torch.allclose(rolled.sum(-1), torch.ones(7), atol=1e-5)


def test_minilm_warns_when_its_vocabulary_breaks_korean_into_jamo(minilm: hf.LoadedModel) -> None:
    korean = hf.run(minilm, "나는 학교에 간다")
    assert any("jamo" in str(w) for w in korean.warnings)
    assert any("\u1100" <= ch <= "\u11ff" for token in korean.tokens for ch in token)  # the letters themselves
    assert not any("jamo" in str(w) for w in hf.run(minilm, "the cat sat on the mat").warnings)
