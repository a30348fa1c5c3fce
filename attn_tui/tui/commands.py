"""Command palette (ctrl+p): every action of the app, every stage, sample and variant by name, and every setting."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from attn_tui.ask.applies import applicable
from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import VariantAsk
from attn_tui.i18n import _, pgettext
from attn_tui.io.session import MENUS
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.screens.help import key_text
from attn_tui.tui.stage_picker import stage_commands
from attn_tui.tui.widgets.model_pane import GREYABLE, LABELS, MODELS

if TYPE_CHECKING:
    from attn_tui.tui.editing import Editing
    from attn_tui.tui.widgets.explorer import Explorer

Command = tuple[str, Callable[[], object], str]


class PaletteHost(Protocol):
    """What the palette reads and calls on the app: declared here, so the commands do not import the App that
    imports them (AttnApp provides every one)."""

    @property
    def variants(self) -> VariantAsk: ...

    @property
    def explorer(self) -> Explorer: ...

    @property
    def editing(self) -> Editing: ...

    async def run_action(self, action: str) -> bool: ...

    def action_jump(self, selector: str) -> None: ...


def setting_commands(app: PaletteHost) -> Iterator[Command]:
    """A command for each value of each setting, generated from the option schema and the menus' choices:
    a setting with choices offers each other choice, a switch its other state, a number its field to type in.
    Settings that change nothing for this variant on this input are left out, as the model pane greys them."""
    settings = app.variants.settings
    used = applicable(app.variants)
    for name, now in settings.as_dict().items():
        if name in GREYABLE and name not in used:
            continue
        label = pgettext("setting", LABELS[name])
        if name in MENUS:
            for value in MENUS[name]:
                if value != now:
                    yield (_("Set {setting}: {value}").format(setting=label, value=value),
                           partial(app.editing.set_setting, name, value), _("now {value}").format(value=now))
        elif isinstance(now, bool):
            yield (_("Set {setting}: {value}").format(setting=label, value=_("off") if now else _("on")),
                   partial(app.editing.set_setting, name, not now),
                   _("now {value}").format(value=_("on") if now else _("off")))
        else:
            yield (_("Type {setting}…").format(setting=label), partial(app.action_jump, f"#set-{name}"),
                   _("now {value}").format(value="—" if now is None else f"{now:g}" if isinstance(now, float)
                                           else now))


class AttnCommands(Provider):
    """Commands are built from the app's bindings, its settings and its current stages, so none go stale."""

    def _commands(self) -> list[Command]:
        app = cast("PaletteHost", self.app)
        found: list[Command] = []
        for binding in APP_BINDINGS:
            found.append((_(binding.description), partial(app.run_action, binding.action),
                          _("press {key}").format(key=key_text(binding.key))))
        for stage in stage_commands(app.explorer):
            found.append((_("Go to stage: {name}").format(name=stage.name), stage.callback, stage.help_text or ""))
        found.extend(setting_commands(app))
        for name, sample in load_samples().items():
            found.append((_("Load sample: {name}").format(name=name), partial(app.editing.load_sample, name),
                          _(sample.description)))
        for model in MODELS:
            found.append((_("Model: {model}").format(model=model), partial(app.editing.choose_model, model),
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
