"""Built-in probes: token ids drawn with a model's own tokenizer and fed to it as they are, never re-tokenised.

The induction probe (Olsson et al. 2022, "In-context Learning and Induction Heads"; TransformerLens's
`detect_head` tests use the same input): `length` token ids drawn uniformly, with a seeded generator,
from the model's vocabulary without its special tokens, then the same ids again. In the second half
an induction head attends from each token to the token after that token's first occurrence. The tokens
a tokenizer puts before any text (a BOS, BERT's [CLS]) come first, as a sentence would have them.
"""

from __future__ import annotations

from typing import Any

import torch

from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg


def prefix_ids(tokenizer: Any) -> list[int]:
    """The special ids the tokenizer puts before any text (a BOS, a [CLS]); [] when it puts none."""
    with_specials = tokenizer("a", add_special_tokens=True)["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    special = set(tokenizer.all_special_ids)
    lead: list[int] = []
    for token in with_specials[:max(len(with_specials) - len(plain), 0)]:
        if token not in special:
            break
        lead.append(token)
    return lead


def drawable(tokenizer: Any, vocab_size: int) -> torch.Tensor:
    """(V,) the ids a probe may draw: every id the model embeds and the tokenizer knows, but its special tokens."""
    size = min(len(tokenizer), vocab_size)
    keep = torch.ones(size, dtype=torch.bool)
    special = [t for t in tokenizer.all_special_ids if 0 <= t < size]
    keep[special] = False
    return keep.nonzero().flatten()


def induction_ids(tokenizer: Any, vocab_size: int, length: int, seed: int, positions: int) -> list[int]:
    """prefix + r + r, r `length` ids drawn uniformly (with replacement) with generator seed `seed`."""
    lead = prefix_ids(tokenizer)
    total = len(lead) + 2 * length
    if total > positions:
        raise ConfigError(Msg("--probe-length {n}: the probe is {total} tokens, more than the {positions} the "
                              "model reads", n=length, total=total, positions=positions))
    pool = drawable(tokenizer, vocab_size)  # (V,)
    if len(pool) < 2:
        raise ConfigError(Msg("the model's vocabulary has too few ordinary tokens to draw a probe from"))
    generator = torch.Generator().manual_seed(seed)
    drawn = pool[torch.randint(len(pool), (length,), generator=generator)].tolist()
    return lead + drawn + drawn


def probe_ids(kind: str, tokenizer: Any, vocab_size: int, length: int, seed: int, positions: int) -> list[int]:
    """The ids of the probe named `kind` (ask.options.PROBE_NAMES)."""
    if kind != "induction":
        raise ConfigError(Msg("unknown probe {name}; choose one of {names}", name=repr(kind[:30]), names="induction"))
    return induction_ids(tokenizer, vocab_size, length, seed, positions)
