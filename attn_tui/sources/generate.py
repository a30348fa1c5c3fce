"""A causal model writing token by token: each step's attention, its key/value cache and its sampler, as stages.

The model runs as transformers runs it in `generate`: the prompt once (step 0, the prefill), then one token a
step against its `DynamicCache`. Each step's stages are traced by the ONE shared layer tracer from the inputs
the model's layers read at that step (the cached rows and the new one), for the new rows only as queries and
every position so far as keys, so step t's `weights` row is the model's own attention of its t-th fed token;
the tests check it against one full causal forward over prompt + written (the cache oracle). After the last
layer the sampler's stages (sampler.py) choose the token; each layer's cache, as transformers holds it, is a
stage per key/value head. The trace grows a step at a time (trace/growing.py) for whoever watches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from attn_tui.ask.budget import Estimate, memory_limit
from attn_tui.ask.model_request import cache_window, check_generation, check_prompt, kept_positions
from attn_tui.ask.settings import ModelAsk
from attn_tui.attention.attend import WEIGHTS_FORMULA
from attn_tui.attention.variants.gqa.compute import kv_map
from attn_tui.attention.variants.rope.compute import rotate
from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, Msg
from attn_tui.sources.cache_stage import held, record_cache
from attn_tui.sources.families import family_named
from attn_tui.sources.families.shared.tracer import record_layer
from attn_tui.sources.families.spec import LayerSpec
from attn_tui.sources.lazy_steps import StepStages, record_prompt_rows
from attn_tui.sources.model_run import LoadedModel, ModelRun, non_finite, prompt_ids
from attn_tui.sources.sampler import SHOWN, Draw, Sampler
from attn_tui.sources.step_rows import LayerRows, rotary_table
from attn_tui.sources.unembed import output_embedding as output_embedding
from attn_tui.trace.growing import Publisher
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.meta import GenerationRun
from attn_tui.trace.ops import Place, Softmax
from attn_tui.trace.stage import Axis, Stage, Trace
from attn_tui.trace.steps import generated_token

OnStep = Callable[[Trace], None]


def draw_of(ask: ModelAsk) -> Draw:
    return Draw(ask.do_sample, ask.temperature, ask.top_k, ask.top_p, ask.seed)


def generation_estimate(loaded: LoadedModel, prompt: int, count: int) -> Estimate:
    """What writing `count` tokens after a `prompt`-token text keeps: every step's stages of every layer and
    head (queries, the keys and values of every position, their rotations and norms, the score rows), each
    step's input rows, the cache as each step held it, the sampler's columns."""
    cfg = loaded.model.config
    heads, layers = loaded.heads, loaded.layers
    d_h = int(getattr(cfg, "head_dim", None) or loaded.width // heads)
    kv = int(getattr(cfg, "num_key_value_heads", None) or heads)
    total = prompt + count  # keys of the last step
    keys = sum(prompt + t for t in range(count))  # Σ over the steps of the keys each one reads
    rows = prompt * prompt + sum(prompt + t for t in range(1, count))  # Σ of query rows × keys
    found = Estimate()
    found.add(N_("keys and values of every step"), layers * keys * d_h * (2 * kv + 3 * heads))
    found.add(N_("score rows of every step"), layers * heads * 5 * rows)
    found.add(N_("each step's layer inputs"), 2 * layers * keys * loaded.width)
    found.add(N_("the key/value cache of every step"), 2 * layers * keys * kv * d_h)
    found.add(N_("the model's own step"), 2 * layers * heads * total * total)
    found.add(N_("the sampler"), count * SHOWN * (loaded.width + 8) + 4 * int(cfg.vocab_size))
    return found


def _stops(model: Any) -> set[int]:
    """The ids that end a text: the generation config's end-of-text ids, else the config's."""
    found = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if found is None:
        found = getattr(model.config, "eos_token_id", None)
    return set(found if isinstance(found, list) else [] if found is None else [found])


def generate_trace(loaded: LoadedModel, ask: ModelAsk, unembed: torch.Tensor, max_memory: int | None = None,
                   on_step: OnStep | None = None) -> Trace:
    """Write `ask.generate` tokens after `ask.text`, every step traced; `on_step` is handed each step's trace."""
    return Generator(loaded, ask, unembed).write(ask.generate, max_memory, on_step)


class Generator:
    """One text being written: the model's cache, the inputs every layer read so far, the sampler's generator
    and the trace, kept between calls so that writing one more token costs one step, not all of them again.

    A call that is stopped (its `on_step` raises) leaves the writer whole: a step's stages, its token and the
    state the next step reads are all in place before the step is published. One call at a time (`lock`)."""

    def __init__(self, loaded: LoadedModel, ask: ModelAsk, unembed: torch.Tensor) -> None:
        from transformers import DynamicCache

        from attn_tui.sources.hf import readable_token

        if not loaded.causal:
            raise ConfigError(Msg("{model} reads its text both ways (an encoder): only a causal model writes",
                                  model=loaded.name))
        self.loaded, self.family = loaded, family_named(loaded.family)
        model, tok = loaded.model, loaded.tokenizer
        cfg = model.config
        self.prompt_ids = prompt_ids(loaded, ask.text)
        self.device = loaded.runs_on
        self.text_of: Callable[[int], str] = lambda i: readable_token(tok, tok.convert_ids_to_tokens([i])[0])
        self.tokens = [self.text_of(i) for i in self.prompt_ids]
        special_ids = set(tok.all_special_ids)
        self.special = tuple(n for n, i in enumerate(self.prompt_ids) if i in special_ids)
        kv_heads = self.family.kv_heads(cfg)
        self.grouped = kv_heads > 0
        draw = draw_of(ask)
        self.meta = GenerationRun(model=loaded.name, family=loaded.family, layers=loaded.layers, heads=loaded.heads,
                                  scale=0.0, causal=True, special_tokens=self.special, kv_heads=kv_heads,
                                  kv_map=kv_map(loaded.heads, kv_heads) if kv_heads else (),
                                  rope_base=self.family.rope_base(cfg), prompt_tokens=tuple(self.tokens),
                                  prompt_ids=tuple(self.prompt_ids), do_sample=draw.do_sample,
                                  temperature=draw.temperature, top_k=draw.top_k, top_p=draw.top_p, seed=draw.seed,
                                  cache=ask.cache, layer_heads=self.family.layer_heads(cfg), offloaded=loaded.offloaded)
        self.trace = Trace(self.meta, tuple(self.tokens), tuple(self.tokens), str(self.device),
                           str(unembed.dtype).replace("torch.", ""))
        self.sampler = Sampler(draw, unembed, getattr(cfg, "final_logit_softcapping", None), self.text_of)
        self.cache = DynamicCache(config=cfg)
        self.inputs: list[list[torch.Tensor]] = [[] for _ in range(loaded.layers)]  # per layer: each step's rows
        self.ids = list(self.prompt_ids)
        self.fed = torch.tensor([self.prompt_ids], device=self.device)  # (1, q): what the next step feeds
        self.written: list[int] = []
        self.stops = _stops(model)
        self.stopped = False
        self.lock = threading.Lock()
        self.window = cache_window(ask.cache)  # StreamingLLM's (W, S), or None: every token stays
        self.raw: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = [([], []) for _ in range(loaded.layers)]
        self.rows = [LayerRows() for _ in range(loaded.layers)]  # each layer's keys so far, for a step's weights
        self.tables: dict[int, tuple[torch.Tensor, torch.Tensor, int] | None] = {}  # per layer: rotary cos, sin
        parts = [self.family.own_layer(model, layer) for layer in range(loaded.layers)]
        self.own = [None if part is None else part.stepper(loaded, layer) for layer, part in enumerate(parts)]
        self.later = StepStages(loaded, self.family, self.grouped, self.tokens, self.special, self.inputs, self.own)
        if self.window is None:  # StreamingLLM's steps read moved keys: they are traced whole as they are made
            self.trace.step_filler = self.later
        else:
            self._check_streaming()

    @property
    def steps(self) -> int:
        return len(self.written)

    @torch.no_grad()
    def write(self, count: int, max_memory: int | None = None, on_step: OnStep | None = None) -> Trace:
        """Write until `count` tokens are written (or the model ends its text); the trace so far, as a copy."""
        loaded = self.loaded
        prompt = len(self.prompt_ids)
        if prompt + count > loaded.positions:
            raise ConfigError(Msg("the text's {p} tokens and {n} to write are more than {model} reads ({positions} "
                                  "tokens)", p=prompt, n=count, model=loaded.name, positions=loaded.positions))
        generation_estimate(loaded, prompt, count).check(memory_limit(max_memory), Msg(
            "writing {n} tokens with {model}", n=count, model=loaded.name))
        with self.lock:
            publisher = Publisher(self.trace, on_step)
            while self.steps < count and not self.stopped:
                self._step(publisher)
            return self.trace.copy()

    def _kept(self, n: int) -> list[int]:
        """The positions a step sees: all of them, or StreamingLLM's first S and last W (the newest among them)."""
        return kept_positions(n, self.window)

    def _step(self, publisher: Publisher) -> None:
        if self.window is None:
            self._step_lazily(publisher)
        else:
            self._step_whole(publisher)

    def _step_lazily(self, publisher: Publisher) -> None:
        """One step with the whole cache: the model's step, then every layer's weights rows at once (step_rows.py);
        the prefill traces every stage, a later step the rest of a layer only when a view asks (lazy_steps.py)."""
        loaded, trace, tokens, t = self.loaded, self.trace, self.tokens, self.steps
        queries, n = self.fed.shape[1], len(self.ids)
        out = self._forward(t)
        states = tuple(out.hidden_states[layer][0] for layer in range(loaded.layers))  # each (q, d): a layer's input
        for layer in range(loaded.layers):
            self.inputs[layer].append(states[layer])
        new = ModelRun.of_inputs(loaded, tuple(tokens[n - queries:n]), (), states, torch.ones(1, 1))
        axes = (Axis("query", tuple(tokens[n - queries:n])), Axis("key", tuple(tokens[:n])))
        masks: dict[int | None, MaskSpec] = {}
        labels = tuple(f"{p}:{token}" for p, token in enumerate(tokens[:n]))
        for layer in range(loaded.layers):
            own = self.own[layer]
            with loaded.in_memory(layer):
                if own is not None:  # a latent or a recurrent state: the layer keeps its own cache
                    found = own.step(trace, states[layer], n - queries, labels, t)
                else:
                    spec = self.family.layer(new, layer)  # the new rows, normed as the layer norms them
                    found = self.rows[layer].weights(spec, n - queries, self._table(layer, n))  # (H, q, n)
            if found is None or t == 0:
                continue
            weights = found  # (H, q, n)
            for h in range(loaded.heads):
                at = Place("weights", layer, h, t)
                trace.stages[at] = Stage(at, weights[h], WEIGHTS_FORMULA, axes, Softmax(at.at("masked")))
            window = trace.geometry[layer].window
            if window not in masks:
                masks[window] = MaskSpec((n, n), True, window=window)  # every query so far, as the rows stack
            trace.layer_masks[layer] = masks[window]
        self.later.kept([None if self.own[layer] is not None else held(self.cache, layer)
                         for layer in range(loaded.layers)], n, queries)
        if t == 0:  # the prompt: every stage of every layer now, as a forward pass's trace holds them
            view = ModelRun.of_inputs(loaded, tuple(tokens), self.special, states,
                                      torch.ones(n, n, dtype=torch.bool, device=self.device).tril())
            for layer in range(loaded.layers):
                own = self.own[layer]
                if own is not None:
                    with loaded.in_memory(layer):
                        scale = own.record(trace, view, 0, n)
                    if scale is not None:
                        self.meta = replace(self.meta, scale=scale)
                    if Place("weights", layer, 0, 0) in trace.stages:
                        record_prompt_rows(trace, layer, loaded.heads)
                    continue
                with loaded.in_memory(layer):
                    spec = self.family.layer(view, layer)
                    record_layer(trace, spec, layer, view, self.grouped, step=0)
                    for part in self.family.after_heads:
                        part.record(trace, spec, layer, view, 0, n)
                record_prompt_rows(trace, layer, loaded.heads)
                cache = self.later.held[0][layer]
                if cache is not None:
                    record_cache(trace, cache, layer, 0, spec.window, labels, loaded.heads)
                self.meta = replace(self.meta, scale=spec.scale)  # the last layer's, as a forward pass's trace says
        self._choose(publisher, out, t, n, queries)

    def _table(self, layer: int, n: int) -> tuple[torch.Tensor, torch.Tensor, int] | None:
        """The layer's rotary cos and sin over positions 0… (at least n of them), from the family's own spec of
        the layer over that many positions; None where the layer does not rotate."""
        table = self.tables.get(layer)
        if layer not in self.tables or (table is not None and table[0].shape[0] < n):
            length = min(max(2 * n, 64), max(self.loaded.positions, n))
            blank = torch.zeros(length, self.loaded.width, device=self.device, dtype=self.inputs[layer][0].dtype)
            run = ModelRun.of_inputs(self.loaded, ("",) * length, (), (blank,) * self.loaded.layers, torch.ones(1, 1))
            with self.loaded.in_memory(layer):
                spec = self.family.layer(run, layer)
            table = None if spec.rotary is None else rotary_table(spec.rotary, length, spec.head_dim, blank.dtype,
                                                                  blank.device)
            self.tables[layer] = table
        return table

    def _step_whole(self, publisher: Publisher) -> None:
        """One step of a StreamingLLM writing: its keys move in the cache each step, so every stage is traced now."""
        loaded, trace, tokens, t = self.loaded, self.trace, self.tokens, self.steps
        queries, n = self.fed.shape[1], len(self.ids)
        kept = self._kept(n) if t else list(range(n))  # the prompt is read whole; the window holds from step 1
        m = len(kept)
        if t:
            self.cache = self._window_cache(kept[:-1])
            at = torch.tensor([m - 1], device=self.device)  # the new token's position in the cache
            out = self._forward(t, position_ids=at[None], cache_position=at)
        else:
            out = self._forward(t)
        for layer in range(loaded.layers):
            self.inputs[layer].append(out.hidden_states[layer][0])  # (q, d): what layer `layer` read at this step
        index = torch.tensor(kept, device=self.device)
        view = ModelRun.of_inputs(loaded, tuple(tokens[p] for p in kept),
                                  tuple(i for i, p in enumerate(kept) if p in self.special),
                                  tuple(torch.cat(rows)[index] for rows in self.inputs),
                                  torch.ones(m, m, dtype=torch.bool, device=self.device).tril())
        labels = tuple(f"{p}:{tokens[p]}" for p in kept)
        for layer in range(loaded.layers):
            with loaded.in_memory(layer):
                spec = self.family.layer(view, layer)
                record_layer(trace, spec, layer, view, self.grouped, step=t, queries=queries)
            if self.window is not None:
                self._keep_raw(layer, t, queries, spec)
            record_cache(trace, held(self.cache, layer), layer, t, spec.window, labels, loaded.heads, n - m)
        if t == 0:
            self.meta = replace(self.meta, scale=spec.scale)  # the last layer's, as a forward pass's trace says
        self._choose(publisher, out, t, n, queries)

    def _forward(self, t: int, **positions: Any) -> Any:
        """Step t's forward pass over the token(s) fed, under the hooks' lock; refused, naming where, when it goes
        NaN or infinite (its stages would be NaN, and its token argmax's pick from NaN)."""
        with self.loaded.running():
            out = self.loaded.model(input_ids=self.fed, cache=self.cache, use_cache=True, output_hidden_states=True,
                                    **positions)
        found = non_finite(self.loaded, tuple(h[0] for h in out.hidden_states), ())  # each (q, d)
        if found:
            raise ConfigError(Msg("writing step {t}: {why}", t=t, why=found[0]))
        return out

    def _choose(self, publisher: Publisher, out: Any, t: int, n: int, queries: int) -> None:
        """The sampler's stages and the step's token; the step published."""
        loaded, trace, tokens = self.loaded, self.trace, self.tokens
        token = self.sampler.step(trace, t, out.last_hidden_state[0, -1], torch.tensor([self.ids], device=self.device),
                                  tokens[-1])
        self.written.append(token)
        self.ids.append(token)
        tokens.append(self.text_of(token))
        self.stopped = token in self.stops
        self.fed = torch.tensor([[token]], device=self.device)
        prompt = len(self.prompt_ids)
        self.meta = _so_far(self.meta, self.written, tokens[prompt:], loaded.tokenizer, self.stopped)
        trace.meta = self.meta
        trace.query_tokens = trace.key_tokens = tuple(tokens[:n])  # every position that has queried so far
        publisher.step(generated_token(t, tokens[-1], tuple(tokens[n - queries:n])), self.meta, tuple(tokens[:n]))

    def _keep_raw(self, layer: int, t: int, queries: int, spec: LayerSpec) -> None:
        """The step's new keys before their rotation, and values, per key/value head: what StreamingLLM turns
        again at the positions they hold in the cache each later step."""
        name = "key_norm" if spec.k_norm is not None else "key"
        groups = kv_map(spec.heads, spec.kv_heads)
        first = [groups.index(g) for g in range(spec.kv_heads)]  # a query head of each key/value head
        keys, values = self.raw[layer]
        keys.append(torch.stack([self.trace.stages[Place(name, layer, h, t)].tensor[-queries:] for h in first]))
        values.append(torch.stack([self.trace.stages[Place("value", layer, h, t)].tensor[-queries:] for h in first]))

    def _check_streaming(self) -> None:
        """StreamingLLM turns each kept key again at its place in the cache: refused at once, in one line, for a
        model whose layers do not all turn every dimension of a head rotate-half (a partial or interleaved
        rotation, or absolute positions added to the input), or that caches a latent or a state."""
        if any(own is not None for own in self.own):
            raise ConfigError(Msg("--cache window:W,sinks:S evicts keys and values: {model} caches a latent or a "
                                  "recurrent state in some layers, not keys and values", model=self.loaded.name))
        blank = torch.zeros(2, self.loaded.width, device=self.device)
        run = ModelRun.of_inputs(self.loaded, ("", ""), (), (blank,) * self.loaded.layers, torch.ones(1, 1))
        for layer in range(self.loaded.layers):
            self._rotate_half(run, layer)

    def _rotate_half(self, run: ModelRun, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's rotary (cos, sin), each (N, d_h), as its family reads it over `run`'s positions; refused
        unless it turns every dimension of a head rotate-half, which is what StreamingLLM re-applies in the cache."""
        with self.loaded.in_memory(layer):
            rotary = self.family.layer(run, layer).rotary
        if rotary is None or rotary.cos is None or rotary.sin is None or rotary.fraction != 1 or rotary.interleaved:
            raise ConfigError(Msg("--cache window:W,sinks:S re-applies rotary positions in the cache: {model} has no "
                                  "rotate-half rotary embedding to re-apply", model=self.loaded.name))
        return rotary.cos, rotary.sin

    def _window_cache(self, held: list[int]) -> Any:
        """A DynamicCache holding the positions `held` (original positions), each key turned at the position it
        holds in the cache (0, 1, …), as StreamingLLM re-applies rotary positions after an eviction."""
        from transformers import DynamicCache

        cache = DynamicCache()
        index = torch.tensor(held, dtype=torch.long, device=self.device)  # (held,): none with no sink, a window of 1
        view = ModelRun.of_inputs(self.loaded, tuple(self.tokens[p] for p in held), (),
                                  tuple(torch.cat(rows)[index] for rows in self.inputs), torch.ones(1, 1))
        for layer in range(self.loaded.layers):
            cos, sin = self._rotate_half(view, layer)
            keys, values = (torch.cat(parts, dim=1)[:, index] for parts in self.raw[layer])  # (kv, held, d_h)
            cache.update(rotate(keys, cos, sin)[None], values[None], layer)
        return cache


def _so_far(meta: GenerationRun, written: list[int], shown: list[str], tok: Any, stopped: bool) -> GenerationRun:
    return replace(meta, generated_ids=tuple(written), generated_tokens=tuple(shown),
                   output=tok.decode(written, skip_special_tokens=True), stopped=stopped)


class GenerationSource:
    """A model asked to write (`generate` > 0): loaded once by its own source (a GGUF package's or a folder's),
    then written with step by step; the text being written is kept, so asking for one more token (the app's
    `n`) writes one step."""

    def __init__(self) -> None:
        self._generators: dict[tuple[object, ...], Generator] = {}

    def handles(self, ask: object) -> bool:
        from attn_tui.ask.models import DATE_MODELS

        return isinstance(ask, ModelAsk) and ask.generate > 0 and ask.name not in DATE_MODELS

    def trace(self, ask: object, max_memory: int | None = None) -> Trace:
        return self.trace_growing(ask, max_memory, None)

    def trace_growing(self, ask: object, max_memory: int | None, on_step: OnStep | None) -> Trace:
        assert isinstance(ask, ModelAsk)
        from attn_tui.ask.models import GGUF_MODELS

        check_generation(ask)  # an API caller or a session file may hand anything
        check_prompt(ask.text)
        if ask.name in GGUF_MODELS:
            from attn_tui.sources import gguf

            loaded, folder = gguf.loaded_model(ask.name, ask.device, max_memory), None
        else:
            from attn_tui.sources import transformer
            from attn_tui.sources.folder import resolve

            transformer.fresh(ask.name)
            loaded, folder = transformer.loaded_model(ask.name, ask.device, max_memory), Path(resolve(ask.name))
        key = (ask.name, ask.text, ask.device, draw_of(ask), ask.cache)
        generator = self._generators.get(key)
        if generator is None or generator.loaded is not loaded or generator.steps > ask.generate:
            generator = Generator(loaded, ask, output_embedding(loaded, folder))  # a shorter text is written afresh
            kept = list(self._generators.items())[-1:]  # two texts kept: compare mode's A and B write side by side
            self._generators = {**dict(kept), key: generator}
        return generator.write(ask.generate, max_memory, on_step)
