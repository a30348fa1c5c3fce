"""The induction probe and the head roles of real models, against transformers' own `output_attentions`
read by an independent float64 loop (tests/sources/role_reference.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk
from attn_tui.cli import main
from attn_tui.errors import ConfigError
from attn_tui.sources import hf, run
from attn_tui.trace.model_stats import ROLE_NAMES
from attn_tui.trace.shown import Shown
from tests.sources.role_reference import loop_scores
from tests.sources.test_families import CONFIGS
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]


def _attentions(path: Path, ids: list[int], text: str | None = None) -> tuple[torch.Tensor, ...]:
    """transformers' own eager weights over exactly these ids (or the tokenizer's whole encoding of `text`, token
    type ids and all): one (heads, N, N) per layer."""
    import transformers

    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    inputs = ({"input_ids": torch.tensor([ids])} if text is None
              else transformers.AutoTokenizer.from_pretrained(path)(text, return_tensors="pt"))
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    return tuple(a[0].double() for a in out.attentions)


def _check_roles(shown: Shown, attentions: tuple[torch.Tensor, ...], ids: list[int], first: int) -> None:
    assert shown.stats is not None
    roles = shown.stats.roles
    assert len(roles) == len(attentions) * attentions[0].shape[0]
    for found in roles:
        expected = loop_scores(attentions[found.layer][found.head].tolist(), ids, first)
        for name in ROLE_NAMES:
            assert found.scores[name] == pytest.approx(expected[name], abs=1e-4), (found.layer, found.head, name)


@pytest.mark.parametrize("model_type", ["bert", "gpt2", "llama"])
def test_role_scores_of_a_text_equal_the_loop_on_output_attentions(tmp_path: Path, model_type: str) -> None:
    path = tiny(tmp_path, model_type, CONFIGS[model_type])
    shown = run(ModelAsk(str(path), TEXT))
    ids = list(shown.trace.meta.token_ids)  # type: ignore[union-attr]
    import transformers

    assert ids == transformers.AutoTokenizer.from_pretrained(path)(TEXT)["input_ids"]  # the ids fed, carried
    _check_roles(shown, _attentions(path, ids, TEXT), ids, 0)


@pytest.mark.parametrize("model_type", ["bert", "llama"])
def test_role_scores_of_the_probe_equal_the_loop_on_its_repeated_half(tmp_path: Path, model_type: str) -> None:
    path = tiny(tmp_path, model_type, CONFIGS[model_type])
    shown = run(ModelAsk(str(path), "", probe="induction", probe_length=10, probe_seed=5))
    meta = shown.trace.meta
    ids = list(meta.token_ids)  # type: ignore[union-attr]
    assert meta.scored_from == len(ids) - 10 and meta.probe == "induction"  # type: ignore[union-attr]
    _check_roles(shown, _attentions(path, ids), ids, meta.scored_from)  # type: ignore[union-attr]


def test_the_probe_is_a_seeded_uniform_draw_repeated_after_the_tokenizers_prefix(tmp_path: Path) -> None:
    loaded = hf.load(str(tiny(tmp_path, "bert", CONFIGS["bert"])))
    special = set(loaded.tokenizer.all_special_ids)
    first = hf.run(loaded, "", probe=("induction", 12, 3))
    ids = list(first.ids)
    assert ids[0] == loaded.tokenizer.cls_token_id and len(ids) == 25  # BERT puts [CLS] before any text
    drawn = ids[1:13]
    assert ids[13:] == drawn and not special & set(drawn) and all(0 <= t < 30522 for t in drawn)
    assert len(set(drawn)) > 6  # drawn from the whole vocabulary, not a few ids
    assert list(hf.run(loaded, "", probe=("induction", 12, 3)).ids) == ids  # seeded: the same ids again
    assert list(hf.run(loaded, "", probe=("induction", 12, 4)).ids) != ids
    assert first.tokens == tuple(first.tokens[:1] + first.tokens[13:] + first.tokens[13:])  # fed as ids, not text
    with pytest.raises(ConfigError, match="more than the 64"):
        hf.run(loaded, "", probe=("induction", 40, 0))


def test_heads_prints_every_heads_roles_in_json_and_a_table(tmp_path: Path, capsys) -> None:
    folder = str(tiny(tmp_path, "llama", CONFIGS["llama"]))
    assert main(["heads", "--model", folder, "--probe", "induction", "--probe-length", "8", "--probe-seed", "2",
                 "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"stats", "rollout", "windows", "tokens"} <= set(document)  # the keys it had, kept
    assert len(document["roles"]) == 2 * 4 and document["probe"] == "induction"
    assert len(document["tokens"]) == 17  # [CLS] + 8 + 8
    assert [(r["layer"], r["head"]) for r in document["roles"][:2]] == [(0, 0), (0, 1)]
    assert set(document["roles"][0]["scores"]) == set(ROLE_NAMES)
    assert document["roles"][0]["moved"] > 0 and len(document["rollout_moved"]) == 17
    assert main(["heads", "--model", folder, "--text", TEXT]) == 0
    out = capsys.readouterr().out
    assert "each head's strongest role and its score" in out and "brd = broad" in out


@pytest.mark.parametrize("argv", [
    ["heads", "--model", "M", "--probe", "induction", "--text", "a b"],
    ["heads", "--model", "M", "--probe-length", "8", "--text", "a b"],
    ["heads", "--model", "M"],
    ["heads", "--model", "M", "--probe", "copying"],
    ["heads", "--model", "M", "--probe", "induction", "--probe-length", "0"],
    ["stages", "--text", "a b", "--probe", "induction"],
    ["stages", "--model", "minilm", "--text", "a b", "--probe", "induction"],
    ["stages", "--model", "smollm2", "--probe", "induction", "--generate", "2"],
    ["--model", "minilm", "--probe", "induction", "--text", "a b"],
    ["--model", "minilm", "--probe", "induction", "--generate", "2"],
])
def test_a_probe_asked_wrongly_is_one_line_and_exit_2(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err and len(err.splitlines()) <= 2


SMOLLM2_INDUCTION = {(17, 3), (17, 4), (17, 5), (18, 6), (18, 7), (23, 2), (23, 7)}  # found with probe 32, seed 0


def test_smollm2_roles_equal_the_loop_and_its_induction_heads_score_over_half(smollm2) -> None:
    from attn_tui.present.role_table import role_table

    text = "The quick brown fox jumps over the lazy dog. The quick brown fox"
    shown = run(ModelAsk("smollm2", text, device="cpu"))
    ids = list(shown.trace.meta.token_ids)  # type: ignore[union-attr]
    with torch.no_grad():
        out = smollm2.model(input_ids=torch.tensor([ids]), output_attentions=True)
    _check_roles(shown, tuple(a[0].double() for a in out.attentions), ids, 0)
    probed = run(ModelAsk("smollm2", "", device="cpu", probe="induction", probe_length=32, probe_seed=0))
    assert probed.stats is not None
    table = role_table(probed.stats.roles, 30, 9, "induction")
    assert table is not None
    named = {(c.layer, c.head) for c in table.cells if c.role == "induction"}
    assert named == SMOLLM2_INDUCTION
    for roles in probed.stats.roles:
        if (roles.layer, roles.head) in named:
            assert roles.scores["induction"] > 0.5
    for seed in (1, 2):  # another draw names the strongest of them again, each over half
        other = run(ModelAsk("smollm2", "", device="cpu", probe="induction", probe_length=32, probe_seed=seed))
        assert other.stats is not None
        scores = {(r.layer, r.head): r.scores["induction"] for r in other.stats.roles}
        assert all(scores[head] > 0.5 for head in ((17, 3), (17, 4), (17, 5), (18, 6))), seed
