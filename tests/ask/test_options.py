"""The option schema is the one place a setting is declared: change a range there and every front end follows."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields, replace

import pytest

from attn_tui import api
from attn_tui.ask import options
from attn_tui.ask.footprint import ITEMSIZE, estimate
from attn_tui.ask.options import SETTINGS
from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk, XInput
from attn_tui.ask.variants import VARIANTS
from attn_tui.cli.parser import build_parser, parse
from attn_tui.errors import ConfigError
from attn_tui.io.session import SessionError
from attn_tui.io.session import parse as parse_session
from attn_tui.tui.widgets.setting_rows import parse_field

KINDS = {"int": int, "float": float, "bool": bool, "str": str, "int | None": int, "float | None": float}


def test_every_settings_field_has_exactly_one_schema_entry() -> None:
    """The dataclass and the shared schema name the same settings, in the same order, with the same type and default;
    every other setting is one variant's own, declared in its package and held in `own`."""
    shared = [f for f in fields(Settings) if f.name != "own"]
    assert [f.name for f in shared] == list(options.SHARED)
    assert set(SETTINGS) == set(options.SHARED) | set(options.VARIANT_OWN)
    assert tuple(o.name for v in VARIANTS.values() for o in v.own) == options.VARIANT_OWN
    for name in options.VARIANT_OWN:
        assert Settings().value(name) == SETTINGS[name].default
        assert Settings.of(**{name: SETTINGS[name].default}) == Settings()  # a default is no change
    for f in shared:
        option = SETTINGS[f.name]
        assert option.name == f.name
        assert KINDS[str(f.type)] is option.kind, f.name
        assert str(f.type).endswith("| None") == option.optional, f.name
        assert f.default is not MISSING and f.default == option.default, f.name


def test_every_setting_is_offered_by_the_cli_the_pane_and_the_api() -> None:
    stages = next(a for a in build_parser()._actions if a.dest == "command").choices["stages"]  # type: ignore[union-attr]
    flags = {flag for action in stages._actions for flag in action.option_strings}
    for option in SETTINGS.values():
        assert option.flag in flags
        assert option.label and option.row in ("select", "input", "checkbox")
        assert option.name in api.OPTIONS
        if option.kind is int:  # the pane words a low bound as "0 or more" or "at least 1", or in the option's words
            assert option.low in (0, 1) or option.pane_refusal, option.name
    assert set(ITEMSIZE) == set(SETTINGS["dtype"].choices or ())  # the budget knows the size of every dtype offered
    assert SETTINGS["variant"].choices == tuple(VARIANTS)  # the menu offers exactly the registry's variants
    for name in ("kv_heads", "rope_base", "tile"):  # one variant's knob: the registry says whose, the schema says own
        assert SETTINGS[name].situational and any(name in v.options for v in VARIANTS.values())


def _session(**settings: object) -> str:
    return json.dumps({"version": 1, "settings": settings})


def _cli_refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        parse(["stages", "--text", "a b c d e f g h", *argv])
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_one_changed_range_reaches_the_cli_the_pane_the_api_the_session_and_the_budget(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """At most 64 heads as shipped; the schema says 4 here, and all five refuse 5 and take 4."""
    for front in (lambda: parse(["stages", "--heads", "8"]), lambda: parse_field("heads", "8"),
                  lambda: api._checked({"heads": 8}), lambda: parse_session(_session(heads=8))):
        front()  # 8 heads are fine as shipped
    monkeypatch.setitem(SETTINGS, "heads", replace(SETTINGS["heads"], high=4))

    assert "must be between 1 and 4, got 5" in _cli_refusal(capsys, "--variant", "multihead", "--heads", "5")
    assert parse(["stages", "--heads", "4"]).heads == 4

    assert parse_field("heads", "5") == ("heads must be at most 4", None)
    assert parse_field("heads", "4") == ("", 4)

    with pytest.raises(ConfigError, match="heads=: must be between 1 and 4, got 5"):
        api.compute("a b c d e f g h", variant="multihead", heads=5)
    assert api._checked({"heads": 4})["heads"] == 4

    with pytest.raises(SessionError, match="settings.heads: must be between 1 and 4"):
        parse_session(_session(heads=5))
    assert parse_session(_session(heads=4)).settings.heads == 4

    sentence = SentenceInput("a b c d e f g h")
    with pytest.raises(ConfigError, match="--heads 5: attn-tui shows 1 to 4 heads"):
        estimate(VariantAsk(sentence, Settings(variant="multihead", heads=5)))
    assert estimate(VariantAsk(sentence, Settings(variant="multihead", heads=4))).total > 0


def test_a_changed_width_reaches_typed_matrices_too(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`dim`'s bound is also the widest X or Q a person may type: the budget and the API read it from the schema."""
    monkeypatch.setitem(SETTINGS, "dim", replace(SETTINGS["dim"], high=16))
    assert "must be between 1 and 16" in _cli_refusal(capsys, "--dim", "17")
    assert parse_field("dim", "17") == ("dim must be at most 16", None)
    assert parse_field("dim", "") == ("", None)  # the default size
    with pytest.raises(SessionError, match="settings.dim"):
        parse_session(_session(dim=17))
    with pytest.raises(ConfigError, match="X is 17 numbers wide; attn-tui shows widths up to 16"):
        estimate(VariantAsk(XInput([[0.0] * 17])))
    with pytest.raises(ConfigError, match="X is 17 numbers wide"):
        api.compute(x=[[0.0] * 17])
    assert estimate(VariantAsk(XInput([[0.0] * 16]))).total > 0


def test_a_saved_model_run_is_checked_against_the_schema_too() -> None:
    saved = {"version": 1, "model": {"name": "minilm", "text": "a b", "pad_to": 0}}
    with pytest.raises(SessionError, match="model.pad_to: must be between 1 and 100,000, got 0"):
        parse_session(json.dumps(saved))
    saved["model"]["pad_to"] = 4  # type: ignore[index]
    assert parse_session(json.dumps(saved)).model.pad_to == 4  # type: ignore[union-attr]


def test_a_float_setting_reads_alike_everywhere() -> None:
    """temperature: above 0 and finite, in the CLI's words through the schema, in the pane's own words."""
    option = options.setting("temperature")
    assert option.read("0.5") == 0.5
    for text in ("0", "-1", "inf", "nan"):
        with pytest.raises(options.OptionError, match="must be a positive finite number"):
            option.read(text)
        assert parse_field("temperature", text)[0] == "temperature must be a positive number"
    assert parse_field("rope_base", "1")[0] == "θ base must be a finite number above 1"
