"""Command palette (ctrl+p): every action of the app, every stage, sample and variant by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from attn_tui.core.samples import load_samples
from attn_tui.core.settings import VARIANT_NAMES
from attn_tui.i18n import _
from attn_tui.tui.screens.help import key_text
from attn_tui.tui.widgets.model_pane import MODELS

if TYPE_CHECKING:
    from attn_tui.tui.app import AttnApp


class AttnCommands(Provider):
    """Commands are built from the app's bindings plus its current stages, so none go stale."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app = cast("AttnApp", self.app)
        found: list[tuple[str, Callable[[], object], str]] = []
        for binding in app.palette_bindings():
            found.append((_(binding.description), partial(app.run_action, binding.action),
                          _("key: {key}").format(key=key_text(binding.key))))
        for n, (name, title) in enumerate(zip(app.stage_names(), app.explorer.stage_titles())):
            found.append((_("Go to stage: {name}").format(name=title if title == name else f"{title} ({name})"),
                          partial(app.go_to_stage, n), _("stage {n}").format(n=n + 1)))
        for name, sample in load_samples().items():
            found.append((_("Load sample: {name}").format(name=name), partial(app.load_sample, name),
                          _(sample.description)))
        for variant in VARIANT_NAMES:
            found.append((_("Variant: {variant}").format(variant=variant), partial(app.set_variant, variant),
                          _("recompute")))
        for model in MODELS:
            found.append((_("Model: {model}").format(model=model), partial(app.choose_model, model),
                          _("run a real or trained model")))
        return found

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
