"""The sampler after a model's last layer, as stages: logits of the likeliest tokens, temperature, the
top-k / top-p cut, the probabilities, the token chosen.

The cut is transformers' own (`TemperatureLogitsWarper`, `TopKLogitsWarper`, `TopPLogitsWarper`, applied in
the order `generate` applies them) over the whole vocabulary; a stage keeps the SHOWN columns (the 20
likeliest tokens, and the chosen one) so a step costs a few numbers, not the vocabulary. A draw is
`torch.multinomial` on a generator seeded once per generation: the same seed writes the same tokens, as
`torch.manual_seed(seed)` before transformers' `generate(do_sample=True)` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, Msg
from attn_tui.trace.ops import Chosen, Linear, Place, Scale, SoftCap, VocabCut, VocabSoftmax
from attn_tui.trace.stage import Axis, Stage, Trace

SHOWN = 20  # the likeliest tokens a sampler stage shows


@dataclass(frozen=True)
class Draw:
    """How each token is chosen: greedy, or drawn with these settings (transformers' names and defaults)."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0  # 0: every token
    top_p: float = 1.0  # 1: every token
    seed: int = 0

    @property
    def cuts(self) -> bool:
        return self.do_sample and (self.top_k > 0 or self.top_p < 1.0)


def warpers(draw: Draw) -> list[Any]:
    """transformers' logits warpers for a draw, in `generate`'s order (temperature, top-k, top-p)."""
    from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

    found: list[Any] = []
    if not draw.do_sample:
        return found
    if draw.top_k > 0:
        found.append(TopKLogitsWarper(draw.top_k))
    if draw.top_p < 1.0:
        found.append(TopPLogitsWarper(draw.top_p))
    return found


class Sampler:
    """Chooses each step's token and records the step's sampler stages."""

    def __init__(self, draw: Draw, unembed: torch.Tensor, cap: float | None, token_text: Any) -> None:
        self.draw, self.unembed, self.cap = draw, unembed, cap  # unembed (V, d): the output embedding
        self.token_text = token_text  # id → the token as shown
        self.generator = torch.Generator(device=unembed.device).manual_seed(draw.seed)
        self.cut = warpers(draw)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(V,) the model's logits for the last position's hidden state (d,), capped where the model caps."""
        logits = F.linear(hidden, self.unembed).float()
        return logits if self.cap is None else torch.tanh(logits / self.cap) * self.cap

    @torch.no_grad()
    def step(self, trace: Trace, t: int, hidden: torch.Tensor, ids: torch.Tensor, fed: str) -> int:
        """Choose step t's token from `hidden` (d,), the last layer's output at the fed position; record the
        sampler's stages; the token id comes back. `ids` (1, n): every id so far (what the warpers read)."""
        draw = self.draw
        logits = self.logits(hidden)  # (V,)
        tempered = logits / draw.temperature if draw.do_sample else logits  # TemperatureLogitsWarper's
        if not bool(torch.isfinite(tempered).all()) and bool(torch.isfinite(logits).all()):
            raise ConfigError(Msg("--temperature {t} is so small that the logits divided by it overflow {dtype}, "
                                  "and no token can be drawn from them: use a larger one, or greedy writing",
                                  t=f"{draw.temperature:g}", dtype=str(tempered.dtype).replace("torch.", "")))
        cut = tempered[None]
        for warper in self.cut:
            cut = warper(ids, cut)  # (1, V): −inf where dropped
        cut = cut[0]
        probs = torch.softmax(cut, dim=-1)  # (V,)
        if draw.do_sample:
            token = int(torch.multinomial(probs, 1, generator=self.generator))
        else:
            token = int(torch.argmax(logits))
        # (V,): ranks of the whole vocabulary, where a cut names them; else the likeliest few are all it shows
        order = torch.argsort(logits, descending=True) if draw.cuts else torch.topk(logits, SHOWN).indices
        shown = order[:SHOWN].tolist()
        if token not in shown:  # a draw may leave the likeliest 20: the written token is always shown
            shown[-1] = token
        self._record(trace, t, hidden, logits, tempered, cut, probs, order, shown, token, fed)
        return token

    def _record(self, trace: Trace, t: int, hidden: torch.Tensor, logits: torch.Tensor, tempered: torch.Tensor,
                cut: torch.Tensor, probs: torch.Tensor, order: torch.Tensor, shown: list[int], token: int,
                fed: str) -> None:
        draw = self.draw
        columns = torch.tensor(shown, device=logits.device)
        axes = (Axis("query", (fed,)), Axis("token", tuple(self.token_text(i) for i in shown)))
        h_name, w_name = f"h@t{t}", f"unembed@t{t}"
        trace.inputs[h_name] = hidden[None]  # (1, d)
        trace.params[w_name] = self.unembed[columns]  # (shown, d): the output embedding's rows of the shown tokens
        at = Place("logits", None, None, t)
        raw = F.linear(hidden[None], self.unembed[columns]).float()  # (1, shown)
        trace.add(Stage(at, raw, Msg("z = h·W_outᵀ: the last layer's output at the fed token times each token's "
                                     "output embedding; the {n} likeliest of {v} tokens", n=len(shown),
                                     v=f"{logits.shape[0]:,}"), axes, Linear(h_name, w_name)))
        last = at
        if self.cap is not None:
            last = at.at("capped")
            trace.add(Stage(last, logits[columns][None], Msg("z_cap = {cap}·tanh(z / {cap})   (the model's final "
                                                             "soft cap)", cap=f"{self.cap:g}"), axes,
                            SoftCap(at, self.cap)))
        if draw.do_sample:
            at_t = at.at("tempered")
            trace.add(Stage(at_t, tempered[columns][None], Msg("z / T   (T = {t}: below 1 sharpens, above 1 "
                                                               "flattens)", t=f"{draw.temperature:g}"), axes,
                            Scale(last, 1 / draw.temperature, N_("the temperature T divides every logit"))))
            last = at_t
        if draw.cuts:
            at_c = at.at("cut")
            rank = torch.empty_like(order)
            rank[order] = torch.arange(order.numel(), device=order.device)  # (V,): each token's rank
            after_k = tempered if draw.top_k == 0 else self.cut[0](None, tempered[None])[0]  # top-p reads this
            sorted_probs = torch.softmax(after_k[order], dim=-1)
            above = torch.cumsum(sorted_probs, 0) - sorted_probs  # (V,) by rank: the mass ranked above
            ranks = tuple(int(rank[i]) for i in shown)
            trace.add(Stage(at_c, cut[columns][None], Msg("keep the top-k {k} / top-p {p} tokens, −∞ for the rest "
                                                          "(transformers' warpers)", k=draw.top_k or "—",
                                                          p=f"{draw.top_p:g}"), axes,
                            VocabCut(last, draw.top_k, draw.top_p, ranks, tuple(float(above[r]) for r in ranks))))
            last = at_c
        whole = cut if draw.do_sample else logits
        at_p = at.at("probs")
        trace.add(Stage(at_p, probs[columns][None], Msg("p = softmax over the whole vocabulary ({v} tokens)",
                                                        v=f"{whole.shape[0]:,}"), axes,
                        VocabSoftmax(last, float(torch.logsumexp(whole.double(), 0)), whole.shape[0])))
        column = shown.index(token)
        chosen = torch.zeros(1, len(shown))
        chosen[0, column] = 1.0
        how = (Msg("drawn from p with seed {seed}", seed=draw.seed) if draw.do_sample
               else Msg("greedy: the largest probability"))
        trace.add(Stage(at.at("chosen"), chosen, Msg("the token written: {how}", how=how), axes,
                        Chosen(at_p, column, draw.do_sample, draw.seed)))
