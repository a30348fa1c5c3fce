"""StreamingLLM (`--cache window:W,sinks:S`): the first S tokens and the last W stay in the cache, the rest are
evicted, and every kept key is turned again at the position it holds in the cache; checked step by step
against a float64 Llama written out here, which knows nothing of attn-tui or of transformers' cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.errors import ConfigError
from attn_tui.sources import run
from tests.sources.tiny_models import SMALL, tiny

WINDOW, SINKS, WRITE = 4, 2, 8
TEXT = "the cat sat on the mat"  # 8 tokens with [CLS] and [SEP]: longer than the window from the first step


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny(tmp_path_factory.mktemp("streaming"), "llama", dict(SMALL, num_key_value_heads=2))


def _rotate(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate-half RoPE of x (…, n, d) at `positions` (n,), in float64."""
    d = x.shape[-1]
    angle = positions[:, None].double() / base ** (torch.arange(0, d, 2).double() / d)[None]  # (n, d/2)
    cos, sin = torch.cat([angle, angle], -1).cos(), torch.cat([angle, angle], -1).sin()
    return x * cos + torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1) * sin


def _streaming_llama(path: Path, prompt: list[int], count: int, window: int = WINDOW, sinks: int = SINKS
                     ) -> tuple[list[int], list[list[torch.Tensor]]]:
    """A float64 Llama writing `count` tokens with StreamingLLM's cache: the ids and, per step and layer, the
    weights (heads, queries, keys)."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    w = {k: v.double() for k, v in model.state_dict().items()}
    cfg = model.config
    heads, kv, eps = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.rms_norm_eps
    d = cfg.hidden_size // heads
    base = float(cfg.rope_parameters["rope_theta"])

    def rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    keys: list[list[torch.Tensor]] = [[] for _ in range(cfg.num_hidden_layers)]  # per position: (kv, d) unturned
    values: list[list[torch.Tensor]] = [[] for _ in range(cfg.num_hidden_layers)]
    ids, weights = list(prompt), []
    for t in range(count):
        n = len(ids)
        new = list(range(n)) if t == 0 else [n - 1]
        kept = list(range(n)) if t == 0 or n <= window + sinks else list(range(sinks)) + list(range(n - window, n))
        at = torch.tensor([kept.index(p) for p in new])  # the queries' places in the cache
        x = w["model.embed_tokens.weight"][torch.tensor([ids[p] for p in new])]  # (q, D)
        step = []
        for layer in range(cfg.num_hidden_layers):
            pre = f"model.layers.{layer}."
            h = rms(x, w[pre + "input_layernorm.weight"])
            q = (h @ w[pre + "self_attn.q_proj.weight"].T).view(len(new), heads, d).transpose(0, 1)  # (H, q, d)
            k = (h @ w[pre + "self_attn.k_proj.weight"].T).view(len(new), kv, d)
            v = (h @ w[pre + "self_attn.v_proj.weight"].T).view(len(new), kv, d)
            keys[layer] += list(k)
            values[layer] += list(v)
            held_k = torch.stack([keys[layer][p] for p in kept], 1)  # (kv, m, d)
            held_v = torch.stack([values[layer][p] for p in kept], 1)
            m = len(kept)
            qr, kr = _rotate(q, at, base), _rotate(held_k, torch.arange(m), base)
            group = heads // kv
            kr, vv = kr.repeat_interleave(group, 0), held_v.repeat_interleave(group, 0)  # (H, m, d)
            scores = qr @ kr.transpose(1, 2) / d ** 0.5  # (H, q, m)
            scores = scores.masked_fill(torch.arange(m)[None, None, :] > at[None, :, None], float("-inf"))
            a = scores.softmax(-1)
            step.append(a)
            out = (a @ vv).transpose(0, 1).reshape(len(new), heads * d) @ w[pre + "self_attn.o_proj.weight"].T
            x = x + out
            h = rms(x, w[pre + "post_attention_layernorm.weight"])
            gate, up = h @ w[pre + "mlp.gate_proj.weight"].T, h @ w[pre + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ w[pre + "mlp.down_proj.weight"].T
        logits = rms(x[-1], w["model.norm.weight"]) @ w["lm_head.weight"].T
        ids.append(int(logits.argmax()))
        weights.append(step)
    return ids[len(prompt):], weights


def test_the_window_keeps_the_sinks_and_the_last_tokens_and_equals_a_float64_streaming_llama(folder: Path) -> None:
    trace = run(ModelAsk(str(folder), TEXT, generate=WRITE, cache=f"window:{WINDOW},sinks:{SINKS}")).trace
    prompt = list(trace.meta.prompt_ids)  # type: ignore[union-attr]
    ids, weights = _streaming_llama(folder, prompt, WRITE)
    assert list(trace.meta.generated_ids) == ids  # type: ignore[union-attr]
    for t in range(WRITE):
        for layer in range(trace.layers):
            for head in range(trace.heads):
                ours = trace.tensor("weights", layer, head, t)
                assert ours.shape == weights[t][layer][head].shape
                torch.testing.assert_close(ours.double(), weights[t][layer][head], atol=1e-5, rtol=0)
    cache = trace.stage("cache_keys", 0, 1, WRITE - 1)
    p = len(prompt)
    newest = p + WRITE - 2  # the position fed at the last step
    assert [label.split(":")[0] for label in cache.axes[0].labels] == \
        [str(i) for i in (*range(SINKS), *range(newest - WINDOW + 1, newest + 1))]
    assert "StreamingLLM evicted" in str(cache.formula)
    full = run(ModelAsk(str(folder), TEXT, generate=WRITE)).trace  # the whole cache: another text at the end
    assert full.tensor("weights", 0, 0, WRITE - 1).shape == (1, p + WRITE - 1)


def test_a_window_of_one_and_no_sink_writes_reading_only_the_newest_token(folder: Path) -> None:
    """The edge of StreamingLLM: the cache keeps nothing but the token just fed, and each step still equals the
    float64 streaming Llama (one key, weight 1)."""
    trace = run(ModelAsk(str(folder), TEXT, generate=3, cache="window:1,sinks:0")).trace
    ids, weights = _streaming_llama(folder, list(trace.meta.prompt_ids), 3, window=1, sinks=0)  # type: ignore
    assert list(trace.meta.generated_ids) == ids  # type: ignore[union-attr]
    for t in range(1, 3):
        for layer in range(trace.layers):
            torch.testing.assert_close(trace.tensor("weights", layer, 0, t).double(), weights[t][layer][0],
                                       atol=1e-5, rtol=0)
            assert trace.tensor("weights", layer, 0, t).shape == (1, 1)


@pytest.mark.parametrize("cache", ["window:0,sinks:2", "sinks:2", "window:4;sinks:1", "window:-1,sinks:2"])
def test_a_wrong_cache_is_refused_in_one_line(cache: str, folder: Path) -> None:
    from attn_tui.ask.model_request import cache_window

    with pytest.raises(ConfigError) as refused:
        cache_window(cache)
    assert "--cache" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("change", [dict(generate=-1), dict(temperature=0.0), dict(top_p=2.0), dict(cache=3),
                                    dict(do_sample=1), dict(generate=2.5), dict(seed=True)])
def test_a_session_or_api_ask_with_a_wrong_writing_setting_is_refused_before_loading(change: dict) -> None:
    from attn_tui.ask.model_request import check_generation

    with pytest.raises(ConfigError):
        check_generation(ModelAsk("smollm2", "the cat", **change))
    if "generate" not in change:  # an ask to write: refused by the writing source before it loads anything
        with pytest.raises(ConfigError):
            run(ModelAsk("no-such-model", "the cat", **dict(dict(generate=1), **change)))
