"""Qwen3-Next from a local folder: tiny random-weight models (dense, and with small experts) built offline.

Its full-attention layers' weights equal transformers' own `output_attentions` (the only layers that return any)
and the gated heads, side by side, equal what o_proj reads; its Gated DeltaNet layers' per-head outputs equal
what the module hands its gated norm, and the heads after the norm equal what out_proj reads (forward hooks on
transformers' own modules). The `linear` variant's functions with a layer's weights copied in give the same.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk  # noqa: E402
from attn_tui.attention.variants.linear import compute as linear  # noqa: E402
from attn_tui.cli import main  # noqa: E402
from attn_tui.explain.cell import explain  # noqa: E402
from attn_tui.sources import folder, run  # noqa: E402
from attn_tui.sources.families import routing  # noqa: E402
from attn_tui.trace.ops import Place  # noqa: E402
from attn_tui.trace.stage import Trace  # noqa: E402
from tests.sources.tiny_models import LINEAR_KINDS, QWEN3_NEXT, TEXT, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

KINDS = LINEAR_KINDS
CONFIGS = QWEN3_NEXT


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("qwen3_next")
    return {name: tiny(root, "qwen3_next", config, name=name) for name, config in CONFIGS.items()}


@pytest.fixture(scope="module")
def traces(folders: dict[str, Path]) -> dict[str, Trace]:
    found = {}
    for name, path in folders.items():
        trace = run(ModelAsk(str(path), TEXT)).trace
        for layer in range(trace.layers):
            trace.stage("output", layer, 0)  # computes the layer
        found[name] = trace
    return found


def _captured(path: Path) -> dict[str, dict[int, torch.Tensor]]:
    """What transformers' own modules read, by forward pre-hooks: o_proj's input (full layers), the gated
    norm's input and gate and out_proj's input (linear layers), each by layer, batch item 0."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    seen: dict[str, dict[int, torch.Tensor]] = {"o_proj": {}, "core": {}, "z": {}, "out_proj": {}}
    hooks = []
    for index, block in enumerate(model.layers):
        if hasattr(block, "self_attn"):
            hooks.append(block.self_attn.o_proj.register_forward_pre_hook(
                lambda _m, args, i=index: seen["o_proj"].__setitem__(i, args[0][0].detach())))
        else:
            la = block.linear_attn
            def norm_input(_module: Any, args: tuple[torch.Tensor, ...], i: int = index) -> None:
                seen["core"][i], seen["z"][i] = args[0].detach(), args[1].detach()

            hooks.append(la.norm.register_forward_pre_hook(norm_input))
            hooks.append(la.out_proj.register_forward_pre_hook(
                lambda _m, args, i=index: seen["out_proj"].__setitem__(i, args[0][0].detach())))
    with torch.no_grad():
        model(**tokenizer(TEXT, return_tensors="pt"))
    for hook in hooks:
        hook.remove()
    return seen


@pytest.mark.parametrize("name", list(CONFIGS))
def test_full_attention_layers_equal_output_attentions_and_the_gated_heads_what_o_proj_reads(
        folders: dict[str, Path], traces: dict[str, Trace], name: str) -> None:
    trace, path = traces[name], folders[name]
    full = [i for i, kind in enumerate(CONFIGS[name]["layer_types"]) if kind == "full_attention"]
    expected = reference(path)
    assert len(expected) == len(full)  # only the full-attention layers return weights
    seen = _captured(path)
    for layer, weights in zip(full, expected):
        for head in range(trace.heads):
            assert (trace.tensor("weights", layer, head) - weights[head]).abs().max() <= 1e-5, (layer, head)
        gated = torch.cat([trace.tensor("gated", layer, h) for h in range(trace.heads)], dim=-1)  # (N, H·d_h)
        assert (gated - seen["o_proj"][layer]).abs().max() <= 1e-5, layer
        gate = trace.tensor("gate", layer, 1)
        assert bool(((gate > 0) & (gate < 1)).all())
        assert torch.allclose(trace.tensor("gated", layer, 1), trace.tensor("output", layer, 1) * gate)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_linear_layers_equal_the_modules_own_output_both_ways(folders: dict[str, Path], traces: dict[str, Trace],
                                                              name: str) -> None:
    trace, config = traces[name], CONFIGS[name]
    seen = _captured(folders[name])
    heads, d_v = config["linear_num_value_heads"], config["linear_value_head_dim"]
    linear_layers = [i for i, kind in enumerate(config["layer_types"]) if kind == "linear_attention"]
    for layer in linear_layers:
        core = seen["core"][layer].view(-1, heads, d_v)  # (N, H_v, d_v): what the module hands its norm
        for head in range(heads):
            output = trace.tensor("output", layer, head)
            assert (output - core[:, head]).abs().max() <= 1e-5, (layer, head)
            implied = trace.tensor("implied", layer, head)
            assert (implied @ trace.tensor("value", layer, head) - core[:, head]).abs().max() <= 1e-5
            assert torch.equal(implied.triu(1), torch.zeros_like(implied))
            assert [p.step for p in trace.stages if p.name == "state" and (p.layer, p.head) == (layer, head)] == \
                list(range(len(trace.query_tokens)))
        normed = torch.cat([trace.tensor("gated_norm", layer, h) for h in range(heads)], dim=-1)
        assert (normed - seen["out_proj"][layer]).abs().max() <= 1e-5, layer
    assert not trace.warnings


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_variant_with_a_linear_layers_weights_copied_in_equals_the_layer(folders: dict[str, Path],
                                                                             traces: dict[str, Trace],
                                                                             name: str) -> None:
    """The variant's own gates and recurrence, fed the layer's weights and its convolved q, k, v."""
    trace, config = traces[name], CONFIGS[name]
    seen = _captured(folders[name])
    heads, d_v, d_k = config["linear_num_value_heads"], config["linear_value_head_dim"], config["linear_key_head_dim"]
    model = transformers.AutoModel.from_pretrained(folders[name], attn_implementation="eager").eval()
    layer = config["layer_types"].index("linear_attention")
    la = model.layers[layer].linear_attn
    x = trace.inputs[f"blocks.{layer}.X"]  # the layer's normed input
    share = la.num_v_heads // la.num_k_heads
    for head in range(heads):
        group, j = divmod(head, share)
        w_b, w_a = la.in_proj_ba.weight[group * 2 * share + j], la.in_proj_ba.weight[group * 2 * share + share + j]
        with torch.no_grad():
            g, beta = linear.gates(x, w_a, w_b, la.A_log[head], la.dt_bias[head])
        q, k, v = (trace.tensor(n, layer, head) for n in ("query", "key", "value"))  # after the conv and SiLU
        q_hat, k_hat = linear.l2_rows(q) * d_k ** -0.5, linear.l2_rows(k)
        _, out = linear.recurrence(q_hat, k_hat, v, g, beta)
        core = seen["core"][layer].view(-1, heads, d_v)[:, head]
        assert (out - core).abs().max() <= 1e-5, head
        assert (linear.implied_matrix(q_hat, k_hat, g, beta) @ v - core).abs().max() <= 1e-5, head


def test_every_cell_of_a_linear_head_and_of_a_gate_is_recomputed(traces: dict[str, Trace]) -> None:
    trace = traces["dense"]
    for stage in list(trace):
        if not ((stage.place.layer == 0 and stage.place.head == 1) or stage.name in ("gate", "gated")):
            continue
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches and arithmetic.lines, (stage.key, index, arithmetic)
    lines = "\n".join(explain(trace, Place("decay", 0, 3), (4, 0)).lines)
    assert "softplus" in lines and "A_log" in lines
    for name in ("query", "key", "value"):  # the short convolution, recomputed for every head's channels
        for head in range(4):
            stage = trace.stages[Place(name, 2, head)]
            for index in itertools.product(*(range(n) for n in stage.shape)):
                assert explain(trace, stage.place, index).matches, (stage.key, index)
    lines = "\n".join(explain(trace, Place("key", 0, 3), (5, 2)).lines)
    assert "channel 26 of the projection, rows 3…5" in lines  # past the 16 query channels, key head 1 (8 wide), 2


def test_routing_the_folder_check_and_the_command_line(folders: dict[str, Path], capsys) -> None:
    assert routing()["qwen3_next"] == "qwen3_next"
    assert folder.check_folder(folders["experts"]) == "qwen3_next"
    assert main(["stages", "--model", str(folders["dense"]), "--text", "a cat", "--layer", "2", "--head", "3",
                 "--stage", "implied"]) == 0
    assert "A = tril" in capsys.readouterr().out
    assert main(["stages", "--model", str(folders["dense"]), "--text", "a cat", "--layer", "1", "--stage",
                 "gated"]) == 0
    assert "O_g" in capsys.readouterr().out
    assert main(["stages", "--model", str(folders["dense"]), "--text", "a cat", "--generate", "2", "--format",
                 "json"]) == 0  # a linear layer writes: its state, a step's implied row
    document = json.loads(capsys.readouterr().out)
    states = {(s["layer"], s["head"], s["step"]): s for s in document["stages"] if s["name"] == "state"}
    assert {(0, 3, 0), (0, 3, 1), (2, 0, 1)} <= set(states) and states[(0, 3, 1)]["shape"] == [8, 6]
    assert "the same at every step" in states[(0, 3, 1)]["formula"]


def test_states_too_big_to_step_through_are_refused_in_one_line(folders: dict[str, Path], capsys,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from attn_tui.sources.families import qwen3_next

    monkeypatch.setattr(qwen3_next, "STATES_BYTES", 4 * 4 * 8 * 6 * 3)  # three tokens of the dense model's 4 heads
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--model", str(folders["dense"]), "--text", "the cat sat on the mat", "--stage", "state"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "shorten the text to 3 tokens or fewer" in err, err
    assert len(err.strip().splitlines()) == 1
