"""How a model folder will be held under the memory budget: whole, or with layers offloaded; or refused.

Torch-free, so the command line can refuse a folder that cannot work even offloaded
before it starts the app or imports torch. Offloading is accelerate's (`device_map="auto"`
with `max_memory`): layers that do not fit stay on disk and are read into memory one at a
time while they run. What can never be offloaded is what one step holds at once: the
tokenizer, the run itself, and the largest single part (one layer, or the embeddings).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from attn_tui.ask.budget import BudgetError, Estimate, format_bytes
from attn_tui.i18n import N_, Msg
from attn_tui.io.files import quoted
from attn_tui.sources.folder import config_parts, config_sizes, load_estimate, weights_bytes

RESERVE_TOKENS = 128  # the run a load keeps room for: a sentence of this many tokens (a longer run is checked itself)


def run_parts(layers: int, heads: int, width: int, tokens: int) -> Estimate:
    """What one forward pass with every attention and hidden state returned will hold."""
    found = Estimate()
    found.add(N_("attention weights"), 2 * layers * heads * tokens * tokens)
    found.add(N_("hidden states"), 4 * (layers + 1) * tokens * width)
    found.add(N_("one head's stages"), 6 * tokens * tokens)
    return found


@dataclass(frozen=True)
class LoadPlan:
    """The budget's split for one load, in bytes."""

    limit: int
    weights: int  # all the weights, in float32 (an upper bound: what load_estimate says)
    tokenizer: int
    reserve: int  # a run of RESERVE_TOKENS tokens
    largest: int  # the largest part that must sit in memory whole: one layer or the embeddings

    @property
    def room(self) -> int:
        """What the weights may hold in memory; accelerate offloads the rest."""
        return max(0, self.limit - self.tokenizer - self.reserve)

    @property
    def whole(self) -> bool:
        """Every weight fits beside the tokenizer and the run: nothing is offloaded."""
        return self.weights <= self.room


def load_plan(folder: Path, limit: int, name: str) -> LoadPlan:
    """The plan for loading `folder` under `limit` bytes; BudgetError, one line with the figures, when it cannot
    work even with every layer offloaded to disk: one step would need more than the limit (the tokenizer, a run and
    the largest part at once), or config.json implies more weights than its files hold (they are read from there)."""
    needed = load_estimate(folder)
    embeddings, layers = config_parts(folder)
    layer = max(layers, default=0)  # the largest: a mixture of experts' layer holds every expert
    sizes = config_sizes(folder)
    reserve = run_parts(len(layers), sizes["heads"] or 0, sizes["width"] or 0, RESERVE_TOKENS).total
    weights, tokenizer = needed.parts.get("weights", 0), needed.parts.get("tokenizer", 0)
    part, largest = ((N_("the embeddings"), 4 * embeddings) if embeddings > layer
                     else (N_("one layer's weights"), 4 * layer))
    plan = LoadPlan(limit, weights, tokenizer, reserve, largest)
    if plan.whole:
        return plan
    what = Msg("loading {name}", name=quoted(name))
    if tokenizer >= weights:  # offloading moves weights, not the tokenizer: the figure that matters is its own
        needed.check(limit, what)
    at_once = largest + tokenizer + reserve
    if at_once > limit:
        raise BudgetError(Msg("{what} needs about {total} of memory even with its layers offloaded to disk ({part} "
                              "{size}, the tokenizer {tokenizer}, a run {run}); the limit is {limit}: raise "
                              "--max-memory", what=what, total=format_bytes(at_once), part=Msg(part),
                              size=format_bytes(largest), tokenizer=format_bytes(tokenizer),
                              run=format_bytes(reserve), limit=format_bytes(limit)))
    held = weights_bytes(folder) // 2  # the files' own bytes
    implied = embeddings + sum(layers)
    if implied > held:  # less than a byte a weight: the files cannot hold what is offloaded
        raise BudgetError(Msg("{what} would offload layers to disk, but config.json implies {n} weights and the "
                              "weight files hold {size}: the folder does not match its config", what=what,
                              n=f"{implied:,}", size=format_bytes(held)))
    return plan


def check_disk(plan: LoadPlan, folder: Path, offload: Path) -> None:
    """A checkpoint that is not safetensors is written out again where it is offloaded: that disk must hold it."""
    if any(p.suffix == ".safetensors" for p in folder.iterdir()):
        return  # accelerate reads offloaded safetensors weights where they are: nothing is written
    needed = max(0, plan.weights - plan.room)
    free = shutil.disk_usage(offload).free
    if needed > free:
        raise BudgetError(Msg("offloading {name}'s layers would write about {size} to {where}, which has {free} "
                              "free: free some disk or raise --max-memory", name=quoted(folder.name),
                              size=format_bytes(needed), where=quoted(str(offload)), free=format_bytes(free)))


def offload_root() -> Path:
    """Where offloaded weights are written: the user cache (ATTN_TUI_CACHE_DIR), not /tmp, which may be memory."""
    chosen = os.environ.get("ATTN_TUI_CACHE_DIR")
    if chosen:
        return Path(chosen) / "offload"
    import platformdirs

    return Path(platformdirs.user_cache_dir("attn-tui", appauthor=False)) / "offload"
