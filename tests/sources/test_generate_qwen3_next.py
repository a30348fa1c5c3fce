"""Qwen3-Next writes: the ids are transformers' greedy `generate`; its full-attention layers' step rows are the
rows of one full causal forward (their gate at each step too); its Gated DeltaNet layers' state after step t is
what the recurrence gives over the whole prefix (a float64 loop here), its implied row the float64 closed form's,
and its heads' output what the module's out_proj reads at that step (a forward hook during `generate`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from attn_tui.ask.settings import ModelAsk
from attn_tui.attention.variants.linear.compute import implied_matrix, l2_rows, recurrence
from attn_tui.explain.cell import explain
from attn_tui.sources import run
from attn_tui.trace.ops import Place
from tests.sources.test_qwen3_next import CONFIGS
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

WRITE = 4


def _prefix_reference(la: Any, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """q̂, k̂, v, g, β (float64, per value head) of a linear layer over its whole normed input x (1, N, d)."""
    n = x.shape[1]
    query, key, value, _z, b, a = la.fix_query_key_value_ordering(la.in_proj_qkvz(x), la.in_proj_ba(x))
    before = torch.cat([t.reshape(1, n, -1) for t in (query, key, value)], dim=-1).transpose(1, 2)  # (1, C, N)
    mixed = F.silu(la.conv1d(before)[..., :n])[0].T.double()  # (N, C)
    share = la.num_v_heads // la.num_k_heads
    heads = torch.arange(la.num_v_heads) // share
    q = l2_rows(mixed[:, :la.key_dim].reshape(n, -1, la.head_k_dim)[:, heads]) * la.head_k_dim ** -0.5
    k = l2_rows(mixed[:, la.key_dim:2 * la.key_dim].reshape(n, -1, la.head_k_dim)[:, heads])
    v = mixed[:, 2 * la.key_dim:].reshape(n, la.num_v_heads, la.head_v_dim)
    g = (-la.A_log.double().exp() * F.softplus(a[0].double() + la.dt_bias.double()))  # (N, H_v)
    return q, k, v, g, b[0].sigmoid().double()


@pytest.mark.parametrize(("name", "text"), [(name, TEXT) for name in sorted(CONFIGS)] + [("experts", "hi")])
def test_qwen3_next_writes_full_rows_of_one_forward_and_linear_states_of_the_whole_prefix(tmp_path: Path,
                                                                                         name: str, text: str) -> None:
    """("experts", "hi"): a prompt of 3 tokens, shorter than the convolution's kernel of 4."""
    import transformers

    path = tiny(tmp_path, "qwen3_next", CONFIGS[name])
    trace = run(ModelAsk(str(path), text, generate=WRITE)).trace
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    prompt = tokenizer(text, return_tensors="pt")["input_ids"]  # (1, P)
    p = prompt.shape[1]
    kinds = CONFIGS[name]["layer_types"]
    linear = [i for i, kind in enumerate(kinds) if kind == "linear_attention"]
    seen: dict[int, list[torch.Tensor]] = {i: [] for i in linear}  # each layer's out_proj input, per call
    hooks = [model.model.layers[i].linear_attn.out_proj.register_forward_pre_hook(
        lambda _m, args, i=i: seen[i].append(args[0][0].detach())) for i in linear]
    with torch.no_grad():
        expected = model.generate(prompt, max_new_tokens=WRITE, do_sample=False)[0, p:].tolist()
    for hook in hooks:
        hook.remove()
    assert list(trace.meta.generated_ids) == expected  # type: ignore[union-attr]
    ids = torch.tensor([prompt[0].tolist() + expected])
    with torch.no_grad():
        out = model(ids, output_attentions=True, output_hidden_states=True)
    full = dict(zip([i for i, kind in enumerate(kinds) if kind == "full_attention"], out.attentions))
    for t in range(WRITE):
        rows = slice(0, p) if t == 0 else slice(p + t - 1, p + t)
        keys = p + t if t else p
        for layer, weights in full.items():
            for head in range(trace.heads):
                torch.testing.assert_close(trace.tensor("weights", layer, head, t), weights[0, head, rows, :keys],
                                           atol=1e-5, rtol=0)
        for layer in linear:
            la = model.model.layers[layer].linear_attn
            with torch.no_grad():
                x = model.model.layers[layer].input_layernorm(out.hidden_states[layer][:, :keys])
                q, k, v, g, beta = _prefix_reference(la, x)
            gated = torch.stack([trace.tensor("gated_norm", layer, h, t) for h in range(la.num_v_heads)], dim=1)
            torch.testing.assert_close(gated.reshape(gated.shape[0], -1), seen[layer][t][-gated.shape[0]:],
                                       atol=1e-5, rtol=0)  # what the module's out_proj read at this step
            for h in range(la.num_v_heads):
                states, _ = recurrence(q[:, h], k[:, h], v[:, h], g[:, h], beta[:, h])  # float64, token by token
                state = trace.stage("state", layer, h, t)
                assert state.shape == (la.head_k_dim, la.head_v_dim)  # the same size at every step
                torch.testing.assert_close(state.tensor.double(), states[-1], atol=1e-5, rtol=0)
                torch.testing.assert_close(trace.tensor("decay", layer, h, t)[:, 0].double(), g[rows, h].exp(),
                                           atol=1e-6, rtol=0)
                torch.testing.assert_close(trace.tensor("beta", layer, h, t)[:, 0].double(), beta[rows, h],
                                           atol=1e-6, rtol=0)
                implied = implied_matrix(q[:, h], k[:, h], g[:, h], beta[:, h])[rows]  # (rows, keys)
                torch.testing.assert_close(trace.tensor("implied", layer, h, t).double(), implied, atol=1e-5, rtol=0)
    # a full-attention layer's other stages, its gate included, are traced when asked for at a later step
    layer = next(iter(full))
    assert Place("gate", layer, 0, WRITE - 1) not in trace.stages
    gated_out = trace.tensor("gated", layer, 1, WRITE - 1)
    torch.testing.assert_close(gated_out, trace.tensor("output", layer, 1, WRITE - 1)
                               * trace.tensor("gate", layer, 1, WRITE - 1))
    assert gated_out.shape[0] == 1
    for place, stage in list(trace.stages.items()):  # the inspector recomputes every cell of the step's stages
        if place.step != WRITE - 1 or place.head not in (None, 0) or place.layer not in (layer, linear[0]):
            continue
        for index in ((0, 0), (stage.data.shape[0] - 1, stage.data.shape[1] - 1)):
            found = explain(trace, place, index)
            assert found.matches, (place.key, index, found.lines)


def test_streamingllm_is_refused_in_one_line_for_a_recurrent_state(tmp_path: Path) -> None:
    from attn_tui.errors import ConfigError

    path = tiny(tmp_path, "qwen3_next", CONFIGS["dense"])
    with pytest.raises(ConfigError) as refused:
        run(ModelAsk(str(path), TEXT, generate=2, cache="window:4,sinks:1"))
    assert "recurrent state" in str(refused.value) and "\n" not in str(refused.value)
