"""Which settings change anything for a request: the CLI refuses the others, the app greys them out.

Torch-free, so the command line can refuse `--heads` for `dot` before torch loads and the
app can grey out a control the moment the variant changes.
"""

from __future__ import annotations

from attn_tui.ask.options import SETTINGS, VARIANT_OWN
from attn_tui.ask.settings import SLIDING_MASKS, VariantAsk
from attn_tui.ask.variants import VARIANTS
from attn_tui.i18n import Msg

ALWAYS = frozenset(name for name, option in SETTINGS.items() if option.always)  # never greyed out, never refused


def applicable(request: VariantAsk) -> frozenset[str]:
    """The names of the settings (and `head`) that make a difference to this variant on this input."""
    s, source = request.settings, request.source
    variant = VARIANTS[s.variant]
    typed = source.typed
    found = set(ALWAYS)
    if variant.has_heads:
        found |= {"heads", "head"}
    found |= set(variant.options)  # what it reads (heads, rope_base) and declares (gqa's kv_heads, flash's tile)
    if s.mask in SLIDING_MASKS:
        found.add("window")
    if source.embedded or variant.uses_hidden:
        found.add("dim")
    if not typed:
        found.add("positional")
        if not variant.takes_x:
            found.add("projection")
    learned_projection = not typed and not variant.takes_x and s.projection == "learned"
    if learned_projection:
        found.add("bias")
    if source.embedded or variant.learned or learned_projection or s.qk_norm != "none" or s.gate:
        found.add("seed")
    if s.mask != "none" or request.custom_mask is not None:
        found.add("mask_fill")
    if request.custom_mask is not None:  # the kinds (causal, padding) have no typed 1s to read either way
        found.add("mask_means")
    if "padding" in s.mask:
        found.add("pad_keys")
    if variant.score_based:  # a soft cap and a QK-norm act on q·k; the gate reads the token vectors X
        found |= {"softcap", "qk_norm"} | (set() if typed else {"gate"})
    return frozenset(found)


def not_applying(request: VariantAsk, given: set[str]) -> list[Msg]:
    """Why each of the `given` settings changes nothing here (empty when all of them apply)."""
    s = request.settings
    typed = request.source.typed
    variant = VARIANTS[s.variant]
    several = ", ".join(name for name, v in VARIANTS.items() if v.has_heads)
    reasons = {
        "heads": Msg("--heads does not apply to {variant}: it has one head (several: {several})", variant=s.variant,
                     several=several),
        "head": Msg("--head does not apply to {variant}: it has one head (several: {several}, or --model)",
                    variant=s.variant, several=several),
        "dim": Msg("--dim does not apply to {variant} on typed matrices: their width is what was typed (--dim sets "
                   "the width of a sentence's embedding, or the hidden size of {hidden})", variant=s.variant,
                   hidden=", ".join(name for name, v in VARIANTS.items() if v.uses_hidden)),
        "positional": Msg("--positional does not apply to typed Q, K, V: positions are added to token vectors (give "
                          "--text or --x)"),
        "projection": (Msg("--projection does not apply to typed Q, K, V: they are already the projections")
                       if typed or not variant.takes_x else
                       Msg("--projection does not apply to {variant}: it learns its own fused projection",
                           variant=s.variant)),
        "bias": Msg("--bias does not apply to {variant} here: it is added by a learned projection of a sentence or "
                    "X (--projection learned), or by a variant whose own layers have one (additive)",
                    variant=s.variant),
        "seed": Msg("--seed does not apply to {variant} here: nothing is learned or seeded", variant=s.variant),
        "mask_fill": Msg("--mask-fill does not apply without a mask: add --mask or --mask-file"),
        "mask_means": Msg("--mask-means does not apply without a custom mask: add --mask-file (it says what the "
                          "file's 1s mean)"),
        "pad_keys": Msg("--pad-keys needs a padding mask (--mask padding or causal+padding), not {mask}",
                        mask=repr(s.mask)),
        "window": Msg("--window needs a sliding mask (--mask sliding or sliding+padding), not {mask}",
                      mask=repr(s.mask)),
        **{name: Msg("{option} does not apply to {variant}: it belongs to {owners}",
                     option=SETTINGS[name].flag, variant=s.variant,
                     owners=", ".join(n for n, v in VARIANTS.items() if name in v.options))
           for name in VARIANT_OWN},
        **{name: Msg("{option} does not apply to {variant}: it acts on the scores q·k of {owners}",
                     option=SETTINGS[name].flag, variant=s.variant,
                     owners=", ".join(n for n, v in VARIANTS.items() if v.score_based))
           for name in ("softcap", "qk_norm")},
        "gate": (Msg("--gate does not apply to typed Q, K, V: the gate σ(X·W_g) is computed from the token vectors "
                     "(give --text or --x)") if typed and variant.score_based else
                 Msg("--gate does not apply to {variant}: it gates each head's weighted sum in {owners}",
                     variant=s.variant, owners=", ".join(n for n, v in VARIANTS.items() if v.score_based))),
    }
    if variant.unscored:  # the variant's own words for why nothing acts on its scores
        reasons |= {name: Msg(variant.unscored, option=SETTINGS[name].flag) for name in ("softcap", "qk_norm", "gate")}
    found = applicable(request)
    return [reasons[name] for name in sorted(given - found, key=list(reasons).index) if name in reasons]
