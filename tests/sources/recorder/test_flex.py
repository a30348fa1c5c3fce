"""flex_attention recorded: score_mod and mask_mod stages against dense float64 references, the block map
against BlockMask's own counts, the inspector's cells, long calls laid out lazily, and `attn-tui trace`."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

import attn_tui
from attn_tui.explain.cell import explain
from attn_tui.sources.recorder.hooks import flex_lazy
from tests.cli.test_cli import run_cli
from tests.sources.recorder import flex_mods as fm

flex = pytest.importorskip("torch.nn.attention.flex_attention")
BLOCK = 16


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(fm.B, fm.H, fm.L, fm.D, generator=g) for _ in range(3))  # type: ignore[return-value]


def _record(case: fm.Case, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None):
    block_mask = None if case.mask_mod is None else flex.create_block_mask(
        case.mask_mod, fm.B, fm.H, fm.L, fm.L, device="cpu", BLOCK_SIZE=BLOCK)
    with attn_tui.record() as rec:
        out = flex.flex_attention(q, k, v, score_mod=case.score_mod, block_mask=block_mask, scale=scale)
    return rec.trace, out, block_mask


def _stage(trace, name: str, b: int, h: int) -> torch.Tensor:
    stage = trace.stage(name, head=h, step=b)
    return stage.data[:, :] if stage.lazy else stage.tensor


@pytest.mark.parametrize("case", fm.CASES, ids=[c.name for c in fm.CASES])
def test_each_mod_is_recorded_and_matches_its_float64_reference(case: fm.Case) -> None:
    q, k, v = _inputs()
    scale = 0.3
    trace, out, _ = _record(case, q, k, v, scale)
    ref = fm.reference(q, k, v, case, scale)
    for b in range(fm.B):
        for h in range(fm.H):
            torch.testing.assert_close(_stage(trace, "scaled", b, h).double(), ref["scaled"][b, h], atol=1e-5, rtol=0)
            names = {s.name for s in trace}
            if case.score_mod is not None:
                torch.testing.assert_close(_stage(trace, "score_mod", b, h).double(), ref["modded"][b, h], atol=1e-5,
                                           rtol=0)
            else:
                assert "score_mod" not in names
            if case.mask_mod is not None:
                masked = _stage(trace, "masked", b, h)
                assert torch.equal(torch.isneginf(masked), ~case.allowed)
            torch.testing.assert_close(_stage(trace, "weights", b, h).double(), ref["weights"][b, h], atol=1e-5,
                                       rtol=0)
            assert torch.equal(_stage(trace, "output", b, h), out[b, h])  # the call's own output, bit for bit
            torch.testing.assert_close(out[b, h].double(), ref["output"][b, h], atol=1e-5, rtol=0)
    assert "largest difference" in str(trace.stage("output", head=0, step=0).formula)


def test_the_score_mod_stage_names_the_function_and_its_line_and_the_inspector_shows_its_cell() -> None:
    q, k, v = _inputs(1)
    trace, _, _ = _record(fm.CASES[1], q, k, v)  # alibi
    stage = trace.stage("score_mod", head=2, step=1)
    assert "alibi" in str(stage.formula) and "flex_mods.py:" in str(stage.formula)
    arithmetic = explain(trace, stage.place, (9, 4))
    assert arithmetic.matches
    text = "\n".join([arithmetic.title, *arithmetic.lines])
    assert "def alibi(score, b, h, q_idx, kv_idx):" in text
    assert "b = 1, h = 2, q_idx = 9, kv_idx = 4" in text
    scaled = float(trace.stage("scaled", head=2, step=1).tensor[9, 4])
    assert f"{scaled:.4g}" in text
    assert arithmetic.total == pytest.approx(scaled - 0.125 * 5, abs=1e-6)  # alibi by hand: head 2's slope, |9 − 4|


def test_the_block_map_holds_the_block_masks_own_counts_and_indices() -> None:
    q, k, v = _inputs()
    trace, _, block_mask = _record(fm.CASES[5], q, k, v)  # prefix-LM: skipped, partial and full tiles
    rows = -(-fm.L // BLOCK)
    for b in range(fm.B):
        for h in range(fm.H):
            tiles = trace.stage("block_map", head=h, step=b).tensor  # (q blocks, kv blocks)
            assert tiles.shape == (rows, rows)
            for qb in range(rows):
                partial = block_mask.kv_indices[b, h, qb, : block_mask.kv_num_blocks[b, h, qb]].tolist()
                full = block_mask.full_kv_indices[b, h, qb, : block_mask.full_kv_num_blocks[b, h, qb]].tolist()
                assert sorted(torch.nonzero(tiles[qb] == 1).flatten().tolist()) == sorted(partial)
                assert sorted(torch.nonzero(tiles[qb] == 2).flatten().tolist()) == sorted(full)
    first = trace.stage("block_map", head=0, step=0)
    assert {0.0, 1.0, 2.0} <= set(first.tensor.flatten().tolist())
    counts = [int((first.tensor == value).sum()) for value in (2, 1, 0)]
    total = fm.B * fm.H
    assert f"{counts[0] * total} full, {counts[1] * total} partial, {counts[2] * total} skipped" in str(first.formula)
    assert first.axes[0].labels[1] == f"q{BLOCK}–{2 * BLOCK - 1}"
    skipped = tuple(int(x) for x in torch.nonzero(first.tensor == 0)[0])
    arithmetic = explain(trace, first.place, skipped)
    assert arithmetic.matches and "never computes" in arithmetic.lines[-1]


def test_a_masked_cell_says_which_mask_mod_was_false_and_where() -> None:
    q, k, v = _inputs()
    trace, _, _ = _record(fm.CASES[4], q, k, v)  # sliding window
    stage = trace.stage("masked", head=1, step=1)
    arithmetic = explain(trace, stage.place, (30, 2))
    assert arithmetic.matches
    assert any("mask_mod sliding_window (flex_mods.py:" in line and "is False at (1, 1, 30, 2)" in line
               for line in arithmetic.lines), arithmetic.lines


def test_a_long_call_is_laid_out_by_tiles_and_equals_the_whole_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    q, k, v = _inputs(2)
    case = fm.Case("both", fm.relative_bias, fm.document, fm.CASES[2].modded, fm.CASES[6].allowed)
    whole, _, _ = _record(case, q, k, v)
    monkeypatch.setattr(flex_lazy, "LAZY_CELLS", 100)
    tiled, out, _ = _record(case, q, k, v)
    assert not tiled.warnings
    for name in ("scores", "scaled", "score_mod", "masked", "weights"):
        stage = tiled.stage(name, head=2, step=1)
        assert stage.lazy, name
        torch.testing.assert_close(stage.data[5:40, 3:33], whole.stage(name, head=2, step=1).tensor[5:40, 3:33])
    assert torch.equal(tiled.stage("output", head=2, step=1).tensor, out[1, 2])
    masked = tiled.stage("masked", head=2, step=1)
    lines = explain(tiled, masked.place, (20, 3)).lines
    assert any("mask_mod document" in line and "(1, 2, 20, 3)" in line for line in lines), lines
    assert explain(tiled, tiled.stage("score_mod", head=0, step=0).place, (7, 7)).matches


@pytest.mark.slow
def test_a_4k_token_call_holds_no_whole_score_stage() -> None:
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, 4096, 16, generator=g) for _ in range(3))
    block_mask = flex.create_block_mask(fm.causal, None, None, 4096, 4096, device="cpu")
    with attn_tui.record() as rec:
        out = flex.flex_attention(q, k, v, score_mod=fm.soft_cap, block_mask=block_mask)
    trace = rec.trace
    for name in ("scores", "scaled", "score_mod", "masked", "weights"):
        assert trace.stage(name, head=1).lazy
    corner = trace.stage("weights", head=1).data[4000:4010, 0:64]
    scores = (q[0, 1, 4000:4010].double() @ k[0, 1].double().T) / 4
    capped = (fm.CAP * torch.tanh(scores / fm.CAP)).masked_fill(torch.arange(4096)[None, :] > torch.arange(
        4000, 4010)[:, None], -torch.inf)
    torch.testing.assert_close(corner.double(), torch.softmax(capped, dim=-1)[:, :64], atol=1e-6, rtol=0)
    assert torch.equal(trace.stage("output", head=1).tensor, out[0, 1])
    assert trace.stage("block_map", head=0).shape == (32, 32)


def test_a_call_under_a_function_imported_before_the_recording_is_seen_and_put_back() -> None:
    original = flex.flex_attention
    q, k, v = _inputs()
    with attn_tui.record() as rec:
        assert flex.flex_attention is not original  # wrapped while recording
        fm_out = flex.flex_attention(q, k, v, score_mod=fm.soft_cap)
    assert flex.flex_attention is original
    assert torch.equal(rec.trace.stage("output", head=0, step=0).tensor, fm_out[0, 0])


@pytest.mark.slow
def test_attn_tui_trace_records_flex_in_the_supervised_child(capsys, tmp_path: Path) -> None:
    script = tmp_path / "flexy.py"
    script.write_text(
        "import torch\n"
        "from torch.nn.attention.flex_attention import create_block_mask, flex_attention\n"
        "def bias(score, b, h, q_idx, kv_idx):\n"
        "    return score + 0.5 * (kv_idx - q_idx)\n"
        "def window(b, h, q_idx, kv_idx):\n"
        "    return (q_idx >= kv_idx) & (q_idx - kv_idx < 3)\n"
        "torch.manual_seed(0)\n"
        "q, k, v = (torch.randn(1, 2, 6, 4) for _ in range(3))\n"
        "mask = create_block_mask(window, None, None, 6, 6, device='cpu', BLOCK_SIZE=2)\n"
        "out = flex_attention(q, k, v, score_mod=bias, block_mask=mask)\n"
        "torch.save(out, __file__ + '.out')\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(script))
    assert code == 0, err
    stages = {(s["name"], s.get("head")): s for s in json.loads(out)["stages"]}
    own = torch.load(str(script) + ".out")
    torch.testing.assert_close(torch.tensor(stages[("output", 1)]["data"]), own[0, 1])
    assert "bias" in stages[("score_mod", 1)]["formula"]
    tiles = torch.tensor(stages[("block_map", 0)]["data"])
    assert tiles.shape == (3, 3) and tiles[0, 2] == 0 and tiles[1, 1] == 1
    weights = torch.tensor(stages[("weights", 0)]["data"])
    assert weights[5, :3].abs().sum() == 0 and torch.allclose(weights.sum(-1), torch.ones(6))


COMPILED: object = None  # a torch.compile(flex_attention) a module holds from before the recording


@pytest.mark.slow
def test_torch_compile_of_flex_made_before_or_during_the_recording_is_recorded() -> None:
    global COMPILED
    q, k, v = _inputs(4)
    block_mask = flex.create_block_mask(fm.causal, None, None, fm.L, fm.L, device="cpu", BLOCK_SIZE=BLOCK)
    COMPILED = torch.compile(flex.flex_attention)
    from torch._dynamo import eval_frame
    from torch._dynamo.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    with attn_tui.record() as rec:
        during = torch.compile(flex.flex_attention)
        first = during(q, k, v, score_mod=fm.alibi, block_mask=block_mask)
        stance_after = eval_frame._stance.stance
        second = COMPILED(q, k, v, score_mod=fm.soft_cap, block_mask=block_mask)  # type: ignore[operator]
    # flex_attention compiled on its own is let compile (its kernel holds no whole score matrix), and other
    # compiled code runs as written again once it returned
    assert counters["stats"]["unique_graphs"] > graphs and stance_after == "force_eager"
    assert eval_frame._stance.stance == "default"
    assert COMPILED is not None and getattr(COMPILED, "__wrapped_flex__", None) is None  # put back
    trace = rec.trace
    steps = sorted({s.step for s in trace if s.name == "output"})
    assert len(steps) == 2 * fm.B  # two calls of two batch items each
    assert torch.equal(trace.stage("output", head=1, step=0).tensor, first[0, 1])
    assert torch.equal(trace.stage("output", head=1, step=fm.B).tensor, second[0, 1])
    assert "alibi" in str(trace.stage("score_mod", head=0, step=0).formula)
    assert "soft_cap" in str(trace.stage("score_mod", head=0, step=fm.B).formula)


@pytest.mark.slow
def test_a_compiled_flex_held_only_in_a_local_variable_is_recorded_and_put_back() -> None:
    q, k, v = _inputs(7)
    block_mask = flex.create_block_mask(fm.causal, None, None, fm.L, fm.L, device="cpu", BLOCK_SIZE=BLOCK)
    local = torch.compile(flex.flex_attention)  # no namespace holds it: only its closure reaches flex_attention
    before = local(q, k, v, score_mod=fm.alibi, block_mask=block_mask)
    with attn_tui.record() as rec:
        got = local(q, k, v, score_mod=fm.alibi, block_mask=block_mask)
    torch.testing.assert_close(got, before)
    trace = rec.trace
    assert trace.meta.kinds == ("flex",)
    assert torch.equal(trace.stage("output", head=1, step=0).tensor, got[0, 1])
    assert "alibi" in str(trace.stage("score_mod", head=0, step=0).formula)
    cells = [c.cell_contents for c in local.__closure__ or () if callable(c.cell_contents)]
    assert flex.flex_attention in cells and not any(hasattr(c, "__wrapped_flex__") for c in cells)  # put back
    torch.testing.assert_close(local(q, k, v, score_mod=fm.alibi, block_mask=block_mask), before)


def test_stages_too_long_to_send_from_the_child_are_left_there_and_said(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    from attn_tui.sources.recorder import wire

    q, k, v = _inputs(5)
    monkeypatch.setattr(flex_lazy, "LAZY_CELLS", 100)
    monkeypatch.setattr(wire, "MATERIALIZE_CELLS", 100)  # as a 4k-token call's (L, S) stages are
    trace, out, _ = _record(fm.CASES[3], q, k, v)
    wire.write_trace(trace, tmp_path)
    back = wire.read_trace(tmp_path)
    names = {s.name for s in back}
    assert {"scores", "scaled", "masked", "weights"}.isdisjoint(names) and {"block_map", "output"} <= names
    assert "stay in the traced process" in str(back.warnings[-1])
    output = back.stage("output", head=1, step=1)
    assert torch.equal(output.tensor, out[1, 1])
    assert explain(back, output.place, (3, 2)).matches  # shown as given: it reads no stage left behind


def test_grouped_query_heads_and_a_returned_lse_are_laid_out() -> None:
    g = torch.Generator().manual_seed(6)
    q = torch.randn(1, 4, 20, 8, generator=g)
    k, v = (torch.randn(1, 2, 20, 8, generator=g) for _ in range(2))
    block_mask = flex.create_block_mask(fm.causal, None, None, 20, 20, device="cpu", BLOCK_SIZE=8)
    with attn_tui.record() as rec:
        out, aux = flex.flex_attention(q, k, v, score_mod=fm.soft_cap, block_mask=block_mask, enable_gqa=True,
                                       return_aux=flex.AuxRequest(lse=True))
    trace = rec.trace
    k4, v4 = (t.repeat_interleave(2, dim=1).double() for t in (k, v))  # query head h reads key/value head h // 2
    scaled = q.double() @ k4.transpose(-2, -1) / 8 ** 0.5
    masked = (fm.CAP * torch.tanh(scaled / fm.CAP)).masked_fill(~(fm.kv_at[:20, :20] <= fm.q_at[:20, :20]),
                                                                 -torch.inf)
    for h in range(4):
        torch.testing.assert_close(trace.stage("weights", head=h).tensor.double(), torch.softmax(masked, -1)[0, h],
                                   atol=1e-5, rtol=0)
        assert torch.equal(trace.stage("output", head=h).tensor, out[0, h])
        torch.testing.assert_close(out[0, h].double(), torch.softmax(masked, -1)[0, h] @ v4[0, h], atol=1e-5, rtol=0)
    torch.testing.assert_close(aux.lse[0].double(), torch.logsumexp(masked[0], -1), atol=1e-4, rtol=0)


@pytest.mark.slow
def test_a_transformers_model_run_with_flex_attention_gives_its_eager_weights(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.integrations import flex_attention as hf_flex

    from tests.sources.test_families import CONFIGS, TEXT
    from tests.sources.tiny_models import reference, tiny

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="flex_attention").eval()
    with torch.no_grad(), attn_tui.record() as rec:
        model(**tokenizer(TEXT, return_tensors="pt"))
    eager = reference(path, TEXT)  # (heads, N, N) per layer, from transformers' eager attention
    weights = [s for s in rec.trace if s.name == "weights"]
    assert len(weights) == len(eager) * eager[0].shape[0]
    for n, stage in enumerate(weights):
        torch.testing.assert_close(stage.tensor, eager[n // eager[0].shape[0]][n % eager[0].shape[0]], atol=1e-5,
                                   rtol=0)
    assert not hf_flex.WrappedFlexAttention._instance._is_flex_compiled  # it compiles the real flex_attention anew


@pytest.mark.slow
def test_a_flex_attention_model_writes_as_it_does_unrecorded_and_each_step_has_its_eager_weights(
        tmp_path: Path) -> None:
    """transformers compiles flex_attention itself (inductor on the CPU too): under the recording it stays compiled,
    the same as the program compiled it (a wrapper compiled in its place once broke inductor's CPU kernel in the
    decode steps), and each call is recorded as it returns."""
    transformers = pytest.importorskip("transformers")
    from tests.sources.tiny_models import SMALL, TEXT, tiny

    path = tiny(tmp_path, "llama", dict(SMALL, num_key_value_heads=2))
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    prompt = tokenizer(TEXT, return_tensors="pt", return_token_type_ids=False)
    flex_model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="flex_attention").eval()
    eager = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    with torch.no_grad():
        unrecorded = flex_model.generate(**prompt, max_new_tokens=3, do_sample=False, pad_token_id=0)
        expected = eager.generate(**prompt, max_new_tokens=3, do_sample=False, pad_token_id=0,
                                  output_attentions=True, return_dict_in_generate=True)
        with attn_tui.record() as rec:
            written = flex_model.generate(**prompt, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert torch.equal(written, unrecorded) and torch.equal(written, expected.sequences)
    trace = rec.trace
    module = trace.meta.modules[0]
    heads = expected.attentions[0][0].shape[1]
    for step, layers in enumerate(expected.attentions):  # the prompt, then one new token a step
        got = torch.stack([trace.tensor("weights", head=h, module=module, step=step) for h in range(heads)])
        torch.testing.assert_close(got, layers[0][0], atol=1e-5, rtol=0)


FRAGILE_OK = True  # the score_mod below works while this holds


def fragile(score, b, h, q_idx, kv_idx):
    if not FRAGILE_OK:
        raise ValueError("no longer")
    return score * 2


def test_a_score_mod_that_fails_when_run_again_leaves_a_warning_and_the_rest_recorded() -> None:
    global FRAGILE_OK
    q, k, v = _inputs(7)
    FRAGILE_OK = True
    with attn_tui.record() as rec:
        out = flex.flex_attention(q, k, v, score_mod=fragile)
        sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    FRAGILE_OK = False  # the layout calls the score_mod again, after the block: now it raises
    try:
        trace = rec.trace
    finally:
        FRAGILE_OK = True
    assert out.shape == sdpa.shape
    assert torch.equal([s for s in trace if s.name == "output"][-1].tensor, sdpa[-1, -1])
    assert any("could not lay out" in str(w) and "ValueError" in str(w) for w in trace.warnings), trace.warnings


@pytest.mark.slow
def test_the_flex_sample_script_traces(capsys) -> None:
    code, out, err = run_cli(capsys, "trace", "--sample", "flex_documents", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["tokens"]["query"][:3] == ["나는", "학교에", "간다"]
    stages = {(s["name"], s.get("head")): s for s in doc["stages"]}
    assert "alibi" in stages[("score_mod", 0)]["formula"]
    weights = torch.tensor(stages[("weights", 1)]["data"])
    assert weights[4:, :4].abs().sum() == 0  # the second document never reads the first
    tiles = torch.tensor(stages[("block_map", 0)]["data"])
    assert tiles.tolist() == [[1, 0, 0, 0], [2, 1, 0, 0], [0, 0, 1, 0], [0, 0, 2, 1]]


def test_flex_attention_runs_with_the_recording_off_the_mode_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """flex_attention compiles itself even when called eagerly (fullgraph): the recorder's mode must not be on the
    stack dynamo traces then (on CUDA its bookkeeping became guards that failed within the same frame). The call is
    still recorded whole, by the wrapper's hand-over; a mode the code pushed inside the recording stays on."""
    from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

    real = flex.flex_attention
    seen: list[list[object]] = []

    def spy(*args, **kwargs):  # what the recording wraps: the module's flex_attention as the code finds it
        seen.append(list(_get_current_function_mode_stack()))
        return real(*args, **kwargs)

    monkeypatch.setattr(flex, "flex_attention", spy)
    q, k, v = _inputs(8)

    class Outer(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with attn_tui.record() as rec:
        got = flex.flex_attention(q, k, v, score_mod=fm.alibi)
        with Outer() as outer:
            flex.flex_attention(q, k, v)
    assert seen[0] == [] and seen[1] == [rec.recorder, outer]  # the code's own mode on top: left as it is
    assert rec.trace.meta.calls == (2,) and torch.equal(rec.trace.stage("output", head=0, step=0).tensor, got[0, 0])


def test_a_flex_attention_held_in_a_local_variable_from_before_the_recording_is_recorded_once() -> None:
    """No namespace the wrapper replaces holds it: its inner op reaches the mode (compiled code runs as written
    while recording) and the call's arguments are read from its frame; the defaults it put in place of a None
    score_mod and block_mask are told back to None."""
    from torch.nn.attention.flex_attention import flex_attention as local

    q, k, v = _inputs(9)
    block_mask = flex.create_block_mask(fm.causal, None, None, fm.L, fm.L, device="cpu", BLOCK_SIZE=BLOCK)
    with attn_tui.record() as rec:
        plain = local(q, k, v)
        modded = local(q, k, v, score_mod=fm.soft_cap, block_mask=block_mask, scale=0.5)
    assert rec.trace.meta.calls == (2,)  # steps: (call 0, batch 0), (call 0, batch 1), (call 1, batch 0), …
    first = {s.name for s in rec.trace if s.place.step in (0, 1)}
    assert "score_mod" not in first and "block_map" not in first
    case = fm.CASES[0]
    ref = fm.reference(q, k, v, fm.Case("capped_causal", fm.soft_cap, fm.causal, case.modded, fm.kv_at <= fm.q_at),
                       0.5)
    for h in range(fm.H):
        assert torch.equal(rec.trace.stage("output", head=h, step=1).tensor, plain[1, h])
        assert torch.equal(rec.trace.stage("output", head=h, step=3).tensor, modded[1, h])
        torch.testing.assert_close(rec.trace.stage("score_mod", head=h, step=3).tensor.double(),
                                   ref["modded"][1, h], atol=1e-5, rtol=0)
        torch.testing.assert_close(rec.trace.stage("weights", head=h, step=3).tensor.double(),
                                   ref["weights"][1, h], atol=1e-5, rtol=0)


def test_joined_masks_and_a_module_score_mod_are_named_by_the_users_own_functions() -> None:
    """`or_masks(causal, document)` is torch's closure `or_mask`: the trace names the masks it joins, and the
    line of the first; a score_mod that is an nn.Module is named by its class and its forward's line."""
    from attn_tui.sources.recorder.hooks.flex_parts import describe

    class Bias(torch.nn.Module):
        def forward(self, score, b, h, q_idx, kv_idx):
            return score + 0.5 * (kv_idx <= q_idx)

    joined = flex.or_masks(fm.causal, fm.document)
    name, where = describe(joined)
    assert name == "or_masks(causal, document)" and where.startswith("flex_mods.py:") and "def causal(" in where
    assert describe(flex.and_masks(fm.causal, fm.sliding_window))[0] == "and_masks(causal, sliding_window)"
    name, where = describe(Bias())
    assert "Bias" in name and "def forward(self, score, b, h, q_idx, kv_idx):" in where
    q, k, v = _inputs(2)
    block_mask = flex.create_block_mask(flex.and_masks(fm.causal, fm.sliding_window), None, None, fm.L, fm.L,
                                        device="cpu", BLOCK_SIZE=BLOCK)
    with attn_tui.record() as rec:
        flex.flex_attention(q, k, v, block_mask=block_mask)
    arithmetic = explain(rec.trace, rec.trace.stage("masked", head=0, step=0).place, (30, 20))
    assert any("and_masks(causal, sliding_window)" in line for line in arithmetic.lines), arithmetic.lines
