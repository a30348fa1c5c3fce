"""A causal model writing token by token: every step's weights are the rows of one full forward (the cache
oracle), the ids are transformers' own `generate`, a draw is reproducible by seed, the sampler and the cache
are stages the inspector explains, and every step is published as it is made."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.explain.cell import explain
from attn_tui.sources import run
from attn_tui.trace.shown import Shown
from attn_tui.trace.stage import Trace
from attn_tui.trace.written import written_rows
from tests.sources.tiny_models import CONFIGS as FAMILIES
from tests.sources.tiny_models import TEXT, tiny

pytestmark = pytest.mark.slow  # each test builds and runs tiny transformers models

CONFIGS = {t: FAMILIES[t] for t in ("llama", "qwen2", "gemma3_text")}  # qwen2's window of 3: the text is longer
WRITE = 6


@functools.lru_cache(maxsize=8)
def _folder(root: Path, model_type: str) -> Path:
    return tiny(root, model_type, CONFIGS[model_type])


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("writers")


def _hf(path: Path):
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    return tokenizer, model


def _written(root: Path, model_type: str, **draw: object) -> Trace:
    return run(ModelAsk(str(_folder(root, model_type)), TEXT, generate=WRITE, **draw)).trace  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("model_type", list(CONFIGS))
def test_each_steps_weights_are_the_rows_of_one_full_forward_and_the_ids_are_generates(root: Path,
                                                                                       model_type: str) -> None:
    trace = _written(root, model_type)
    tokenizer, model = _hf(_folder(root, model_type))
    prompt = tokenizer(TEXT, return_tensors="pt")["input_ids"]  # (1, P)
    p = prompt.shape[1]
    expected = model.generate(prompt, max_new_tokens=WRITE, do_sample=False)[0, p:].tolist()
    meta = trace.meta
    assert list(meta.generated_ids) == expected and len(expected) == WRITE  # type: ignore[union-attr]
    assert list(meta.prompt_ids) == prompt[0].tolist()  # type: ignore[union-attr]
    assert meta.output == tokenizer.decode(expected, skip_special_tokens=True)  # type: ignore[union-attr]
    whole = torch.tensor([prompt[0].tolist() + expected])
    with torch.no_grad():
        full = model(whole, output_attentions=True).attentions  # each (1, heads, P + WRITE, P + WRITE)
    assert trace.steps() == WRITE
    for t in range(WRITE):
        rows = slice(0, p) if t == 0 else slice(p + t - 1, p + t)
        keys = p + t if t else p
        for layer in range(trace.layers):
            for head in range(trace.heads):
                weights = trace.tensor("weights", layer, head, t)
                assert weights.shape == ((p, p) if t == 0 else (1, keys))
                torch.testing.assert_close(weights, full[layer][0, head, rows, :keys], atol=1e-5, rtol=0)
    if model_type != "llama":  # a sliding layer: its window of 3 is far shorter than the text
        last = trace.tensor("weights", 1 if model_type == "qwen2" else 0, 0, WRITE - 1)[0]
        assert bool((last[:-3] == 0).all()) and bool((last[-3:] > 0).all())
    grid = written_rows(trace, "weights", 0, 1)  # the rows written so far, one under the other
    torch.testing.assert_close(grid, full[0][0, 1, :p + WRITE - 1, :p + WRITE - 1], atol=1e-5, rtol=0)


def test_the_cache_is_a_stage_that_grows_a_row_a_step_and_a_sliding_window_drops_rows(root: Path) -> None:
    trace = _written(root, "qwen2")
    p = len(trace.meta.prompt_ids)  # type: ignore[union-attr]
    for t in range(WRITE):
        keys = trace.tensor("cache_keys", 0, 1, t)  # layer 0 is global: every position so far
        assert keys.shape == (p + t, 8)
        # what the cache holds is each position's rotated key, as the key_rot of a query head of group 1
        torch.testing.assert_close(keys, trace.tensor("key_rot", 0, 2, t), atol=1e-6, rtol=0)
        torch.testing.assert_close(trace.tensor("cache_values", 0, 1, t), trace.tensor("value", 0, 2, t))
        sliding = trace.stage("cache_keys", 1, 0, t)
        assert sliding.shape == (2, 8)  # a window of 3 keeps the last 2 between steps
        assert sliding.axes[0].labels[-1].startswith(f"{p + t - 1}:")
        assert "fell out of the window of 3" in str(sliding.formula)
    assert "full multi-head attention" in str(trace.stage("cache_keys", 0, 0, 0).formula)


def test_a_draw_is_reproducible_by_seed_and_is_what_transformers_draws(root: Path) -> None:
    draw = dict(do_sample=True, temperature=0.8, top_k=40, top_p=0.9, seed=7)
    first, again = _written(root, "llama", **draw), _written(root, "llama", **draw)
    other = _written(root, "llama", **dict(draw, seed=8))
    assert first.meta.generated_ids == again.meta.generated_ids  # type: ignore[union-attr]
    assert first.meta.generated_ids != other.meta.generated_ids  # type: ignore[union-attr]
    tokenizer, model = _hf(_folder(root, "llama"))
    prompt = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    torch.manual_seed(7)
    drawn = model.generate(prompt, max_new_tokens=WRITE, do_sample=True, temperature=0.8, top_k=40, top_p=0.9)
    assert list(first.meta.generated_ids) == drawn[0, prompt.shape[1]:].tolist()  # type: ignore[union-attr]


def test_the_sampler_stages_are_transformers_warpers_and_every_cell_explains_itself(root: Path) -> None:
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    trace = _written(root, "llama", do_sample=True, temperature=0.7, top_k=5, top_p=0.8, seed=3)
    assert {"logits", "tempered", "cut", "probs", "chosen"} <= set(trace.names())
    _, model = _hf(_folder(root, "llama"))
    ids = list(trace.meta.prompt_ids)  # type: ignore[union-attr]
    warp = LogitsProcessorList([TemperatureLogitsWarper(0.7), TopKLogitsWarper(5), TopPLogitsWarper(0.8)])
    for t, token in enumerate(trace.meta.generated_ids):  # type: ignore[union-attr]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]  # (V,)
        probs = torch.softmax(warp(torch.tensor([ids]), logits[None])[0], -1)  # (V,)
        shown = trace.stage("probs", step=t)
        columns = _shown_ids(trace, t, logits)
        torch.testing.assert_close(shown.tensor[0], probs[columns], atol=1e-5, rtol=0)
        torch.testing.assert_close(trace.tensor("logits", step=t)[0], logits[columns], atol=1e-4, rtol=1e-5)
        assert float(probs[token]) > 0  # the draw came from what the cut kept
        chosen = trace.tensor("chosen", step=t)[0]
        assert float(chosen.sum()) == 1.0 and columns[int(chosen.argmax())] == token
        for name in ("logits", "tempered", "cut", "probs", "chosen"):
            stage = trace.stage(name, step=t)
            for j in range(stage.shape[1]):
                _explains(trace, stage.place, (0, j))
        ids.append(token)


def _shown_ids(trace: Trace, t: int, logits: torch.Tensor) -> list[int]:
    """The vocabulary ids of the sampler's columns at step t: the 20 likeliest, the written token last when
    it is not among them."""
    shown = torch.argsort(logits, descending=True)[:20].tolist()
    token = trace.meta.generated_ids[t]  # type: ignore[union-attr]
    if token not in shown:
        shown[-1] = token
    return shown


def _explains(trace: Trace, place, index: tuple[int, ...]) -> None:
    arithmetic = explain(trace, place, index)
    same = arithmetic.total == arithmetic.expected or math.isclose(arithmetic.total, arithmetic.expected,
                                                                   rel_tol=1e-4, abs_tol=1e-5)
    assert same, (place.key, index, arithmetic)


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text"])
def test_a_generated_tokens_rotation_and_norm_explain_at_its_own_position(root: Path, model_type: str) -> None:
    trace = _written(root, model_type)
    t = WRITE - 1
    for name in ("query", "query_rot", "key_rot", "scores", "weights", "output") + (
            ("query_norm", "key_norm") if model_type == "gemma3_text" else ()):
        stage = trace.stage(name, 1, 1, t)
        last = tuple(n - 1 for n in stage.shape)
        _explains(trace, stage.place, last)
        _explains(trace, stage.place, (0, 0))


def test_each_published_step_is_the_finished_traces_and_a_stopped_writer_keeps_what_it_wrote(root: Path) -> None:
    ask = ModelAsk(str(_folder(root, "llama")), "a dog ran to the door", generate=WRITE)  # written by no other test
    snapshots: list[Shown] = []
    final = run(ask, on_step=snapshots.append).trace
    assert len(snapshots) == WRITE
    for t, shown in enumerate(snapshots):
        trace = shown.trace
        assert trace.steps() == t + 1 and trace.step_axis is not None and trace.step_axis.kind == "token"
        assert list(trace.meta.generated_ids) == list(final.meta.generated_ids[:t + 1])  # type: ignore[union-attr]
        for place, stage in trace.stages.items():
            assert torch.equal(stage.tensor, final.stages[place].tensor), place.key
        assert {p for p in trace.stages} == {p for p in final.stages if p.step is not None and p.step <= t}
    assert str(final.step_axis.label(0)).startswith("token 0: ")  # type: ignore[union-attr]

    class StopError(Exception):
        pass

    kept: list[Shown] = []

    def stop_after_two(shown: Shown) -> None:
        kept.append(shown)
        if len(kept) == 2:
            raise StopError

    other = ModelAsk(ask.name, "the mat", generate=WRITE)  # a text not written yet
    with pytest.raises(StopError):
        run(other, on_step=stop_after_two)
    stopped = kept[-1].trace
    assert stopped.steps() == 2
    whole = run(other).trace  # asked again, it goes on from the two it kept
    assert whole.meta.generated_ids[:2] == stopped.meta.generated_ids and whole.steps() == WRITE  # type: ignore[union-attr]


def test_too_many_tokens_for_the_budget_is_one_refusal_naming_the_figure(root: Path) -> None:
    from attn_tui.ask.budget import BudgetError
    from attn_tui.sources import transformer
    from attn_tui.sources.generate import generate_trace, output_embedding

    folder = _folder(root, "llama")
    loaded = transformer.loaded_model(str(folder), "auto", None)  # loaded already: the writing alone is refused
    ask = ModelAsk(str(folder), TEXT, generate=50)
    with pytest.raises(BudgetError) as refused:
        generate_trace(loaded, ask, output_embedding(loaded, folder), max_memory=2**20)
    message = str(refused.value)
    assert "writing 50 tokens" in message and "the limit is 1.0 MB" in message and "\n" not in message


def test_an_encoder_cannot_write(root: Path) -> None:
    from attn_tui.errors import ConfigError

    with pytest.raises(ConfigError, match="only a causal model writes"):
        run(ModelAsk("minilm", TEXT, generate=2))


def test_asking_for_more_tokens_writes_only_the_new_steps_and_equals_writing_them_at_once(root: Path) -> None:
    folder = str(_folder(root, "gemma3_text"))
    at_once = run(ModelAsk(folder, "the cat", generate=5)).trace
    run(ModelAsk(folder, "the cat", generate=2))
    published: list[Shown] = []
    more = run(ModelAsk(folder, "the cat", generate=5), on_step=published.append).trace
    assert [s.trace.steps() for s in published] == [3, 4, 5]  # steps 0 and 1 were written already
    assert more.meta.generated_ids == at_once.meta.generated_ids  # type: ignore[union-attr]
    assert set(more.stages) == set(at_once.stages)
    for place, stage in at_once.stages.items():
        torch.testing.assert_close(more.stages[place].tensor, stage.tensor, atol=1e-6, rtol=0)
    fewer = run(ModelAsk(folder, "the cat", generate=3)).trace  # fewer than written: written afresh
    assert fewer.steps() == 3 and fewer.meta.generated_ids == at_once.meta.generated_ids[:3]  # type: ignore[union-attr]


def test_the_rows_written_so_far_are_a_stage_that_gains_a_row_a_step_and_explains_each_cell(root: Path) -> None:
    from attn_tui.trace.ops import Place

    trace = _written(root, "qwen2")
    _, model = _hf(_folder(root, "qwen2"))
    p = len(trace.meta.prompt_ids)  # type: ignore[union-attr]
    ids = list(trace.meta.prompt_ids) + list(trace.meta.generated_ids)  # type: ignore[union-attr]
    with torch.no_grad():
        full = model(torch.tensor([ids]), output_attentions=True).attentions  # each (1, heads, N, N)
    torch.testing.assert_close(trace.tensor("written", 1, 2, 0), full[1][0, 2, :p, :p], atol=1e-5, rtol=0)
    for t in range(1, WRITE):
        assert Place("written", 1, 2, t) not in trace.stages  # made when a view asks for it
        rows = trace.stage("written", 1, 2, t)
        assert rows.shape == (t, p + t) and rows.axes[0].labels == trace.key_tokens[p:p + t]
        torch.testing.assert_close(rows.tensor, full[1][0, 2, p:p + t, :p + t], atol=1e-5, rtol=0)
    last = trace.stage("written", 1, 2, WRITE - 1)
    _explains(trace, last.place, (0, 0))  # the first generated token's row, over the first key
    _explains(trace, last.place, (0, p + WRITE - 2))  # a key that came after that row's step: 0
    _explains(trace, last.place, (WRITE - 2, p + WRITE - 2))
