"""The date-normalising seq2seq model: accuracy, alignment, training, checkpoints, traces, CLI."""

from __future__ import annotations

import json
import random

import pytest
import torch

from attn_tui.cli import main
from attn_tui.errors import InputError
from attn_tui.models.seq2seq import dates
from attn_tui.models.seq2seq.train import exact_match, greedy, load, load_shipped, save, train
from attn_tui.sources.dates import decode_trace


@pytest.fixture(scope="module", params=["additive", "general"])
def shipped(request):
    return load_shipped(request.param)


@pytest.mark.slow
def test_shipped_checkpoint_held_out_accuracy_at_least_98_percent(shipped) -> None:
    held_out = dates.dataset(2000, seed=20261122, held_out=True)
    assert all(dates.is_held_out(__import__("datetime").date.fromisoformat(t)) for _, t in held_out)
    assert exact_match(shipped, held_out) >= 0.98


@pytest.mark.parametrize("text,iso", [
    ("22 November 2026", "2026-11-22"), ("Nov 22, 2026", "2026-11-22"), ("november 22nd 2026", "2026-11-22"),
    ("Sunday, 22 Nov 2026", "2026-11-22"), ("11/22/2026", "2026-11-22"), ("2026년 11월 22일", "2026-11-22"),
    ("26년 11월 22일 일요일", "2026-11-22"), ("3 March 1901", "1901-03-03"),
])
def test_examples_from_the_issue(shipped, text: str, iso: str) -> None:
    assert greedy(shipped, [text]) == [iso]


@pytest.mark.slow
def test_year_characters_attend_to_the_input_year(shipped) -> None:
    """Over held-out dates, the four output year characters look mostly at the input's year."""
    rng = random.Random(7)
    per_date = []
    for _ in range(40):
        d = dates.random_date(rng, held_out=True)
        text = rng.choice((f"{d.day} {dates.MONTHS[d.month - 1]} {d.year}",
                           f"{dates.MONTHS[d.month - 1][:3]} {d.day}, {d.year}"))
        alignment = decode_trace(shipped, text).tensor("alignment")  # (T, S)
        per_date.append(float(alignment[:4, len(text) - 4:].sum(-1).mean()))
    assert sum(per_date) / len(per_date) > 0.85
    assert sum(share > 0.5 for share in per_date) >= 0.9 * len(per_date)


STEP_STAGES = {
    "additive": ("query", "key", "query_proj", "key_proj", "energy", "scores", "masked", "weights", "context"),
    "general": ("query", "key", "query_proj", "scores", "masked", "weights", "context"),
}


def test_trace_stages_are_the_networks_own_arithmetic(shipped) -> None:
    trace = decode_trace(shipped, "Sunday, 22 Nov 2026")
    kind = shipped.cfg.attention
    steps = trace.meta.steps
    assert trace.meta.output == "2026-11-22" and steps == 11  # ten characters and </s>
    for t in range(steps):
        names = [s.name for s in trace if s.step == t]
        assert tuple(names) == STEP_STAGES[kind]
        keys, weights = trace.tensor("key", step=t), trace.tensor("weights", step=t)
        assert torch.allclose(weights.sum(-1), torch.ones(1))
        assert torch.allclose(trace.tensor("context", step=t), weights @ keys, atol=1e-6)
        attn = shipped.decoder.attention
        query = trace.tensor("query", step=t)
        if kind == "additive":
            energy = torch.tanh(attn.W_a(query)[:, None] + attn.U_a(keys)[None])
            assert torch.allclose(trace.tensor("energy", step=t), energy, atol=1e-6)
            assert torch.allclose(trace.tensor("scores", step=t), attn.v_a(energy).squeeze(-1), atol=1e-5)
        else:
            assert torch.allclose(trace.tensor("scores", step=t), attn.W_a(query) @ keys.T, atol=1e-5)
        assert torch.equal(trace.tensor("alignment")[t], weights[0])
        # The shared tail's weights are the network's own softmax, step by step.
        own = attn(query, keys[None], torch.ones(1, keys.shape[0], dtype=torch.bool)).weights
        assert torch.allclose(weights, own, atol=1e-6)
    assert trace.query_tokens[-1] == "</s>" and trace.key_tokens[7] == "␣"


def test_teacher_forcing_feeds_the_target(shipped) -> None:
    free = decode_trace(shipped, "22 November 2026")
    forced = decode_trace(shipped, "22 November 2026", target="1999-01-01", teacher_forcing=True)
    assert forced.meta.steps == 11 and forced.meta.teacher_forcing
    assert not torch.allclose(free.tensor("alignment"), forced.tensor("alignment"))
    with pytest.raises(InputError, match="needs a target"):
        decode_trace(shipped, "22 November 2026", teacher_forcing=True)


@pytest.mark.slow
def test_short_training_lowers_loss_and_checkpoints_round_trip(tmp_path) -> None:
    losses: list[float] = []
    model, _ = train("additive", epochs=1, steps_per_epoch=40, held_out_size=20,
                     on_step=lambda p: losses.append(p.loss))
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5
    path = tmp_path / "m.pt"
    save(model, path)
    again = load(path)
    for (name, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a.half().float(), b), name
    texts = [s for s, _ in dates.dataset(20, seed=3)]
    assert greedy(load(path.read_bytes()), texts) == greedy(again, texts)


@pytest.mark.slow
def test_training_is_reproducible_from_its_seed() -> None:
    a, _ = train("general", epochs=1, steps_per_epoch=3, held_out_size=5, seed=4)
    b, _ = train("general", epochs=1, steps_per_epoch=3, held_out_size=5, seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_cli_json_has_output_and_per_step_stages(capsys) -> None:
    assert main(["stages", "--model", "seq2seq-dates", "--text", "2026년 11월 22일", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["output"] == "2026-11-22"
    assert doc["tokens"]["key"][:4] == list("2026")
    weights = [s for s in doc["stages"] if s["name"] == "weights"]
    assert [s["step"] for s in weights] == list(range(11))
    assert doc["stages"][-1]["name"] == "alignment" and doc["stages"][-1]["step"] is None


@pytest.mark.parametrize("text,fragment", [("   ", "the date is empty"), ("22 Nov 2026 €", "column 13"),
                                           ("x" * 50, "at most 40")])
def test_cli_bad_dates_exit_2(capsys, text: str, fragment: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--model", "seq2seq-dates", "--text", text])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_train_command_writes_a_checkpoint(tmp_path, capsys) -> None:
    out = tmp_path / "tiny.pt"
    assert main(["train-seq2seq", "--epochs", "1", "--steps", "5", "--out", str(out)]) == 0
    assert out.exists() and "held-out exact match" in capsys.readouterr().out
    assert out.stat().st_size < 5 * 2**20
