"""Any Hugging Face model as it runs by default (sdpa), recorded: every layer and head by its module path,
the weights eager attention returns, the mask the kernel was given told by its reasons, and the kernel's
output beside A·V recomputed."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("transformers")

import transformers

import attn_tui
from attn_tui.trace.stage import Trace
from tests.cli.test_cli import run_cli
from tests.sources.tiny_models import CONFIGS as FAMILIES
from tests.sources.tiny_models import SMALL, TEXT, VOCAB, reference, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

CONFIGS: dict[str, dict[str, Any]] = {
    "llama": FAMILIES["llama"],  # grouped kv heads: 4 query heads share 2
    "gpt2": FAMILIES["gpt2"],
    # layers 0 and 2 slide; SDPA gets scale=32^-½, not the 1/√head_dim a kernel would take by default
    "gemma3_text": dict(FAMILIES["gemma3_text"], query_pre_attn_scalar=32),
    "bert": FAMILIES["bert"],
}
PATHS = {"llama": "model.layers.{i}.self_attn", "gpt2": "transformer.h.{i}.attn",
         "gemma3_text": "model.layers.{i}.self_attn", "bert": "encoder.layer.{i}.attention.self"}
GAP = re.compile(r"differs from it by at most (\S+)")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {family: tiny(tmp_path_factory.mktemp(family), family, config) for family, config in CONFIGS.items()}


def load(path: Path, family: str) -> tuple[Any, Any]:
    """The model as a user's script opens it: no attn_implementation named, so transformers picks sdpa."""
    auto = transformers.AutoModel if family == "bert" else transformers.AutoModelForCausalLM
    model = auto.from_pretrained(path).eval()
    assert model.config._attn_implementation == "sdpa"
    return transformers.AutoTokenizer.from_pretrained(path), model


def weights_of(trace: Trace, module: str, heads: int, step: int | None = None) -> torch.Tensor:
    return torch.stack([trace.tensor("weights", head=h, module=module, step=step) for h in range(heads)])


def gaps(trace: Trace) -> list[float]:
    """The kernel-vs-recomputed difference each output stage says."""
    found = [GAP.search(str(stage.formula)) for stage in trace if stage.name == "output"]
    assert found and all(found)
    return [float(m.group(1)) for m in found if m]


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_every_layer_and_head_equals_eager_output_attentions(models: dict[str, Path], family: str) -> None:
    tokenizer, model = load(models[family], family)
    with torch.no_grad(), attn_tui.record() as rec:
        model(**tokenizer(TEXT, return_tensors="pt"))
    trace = rec.trace
    eager = reference(models[family])  # transformers' own eager attention, output_attentions=True
    assert trace.meta.modules == tuple(PATHS[family].format(i=i) for i in range(len(eager)))
    for module, expected in zip(trace.meta.modules, eager):
        torch.testing.assert_close(weights_of(trace, module, expected.shape[0]), expected, atol=1e-5, rtol=0)
    assert max(gaps(trace)) <= 1e-5
    assert not [w for w in trace.warnings if "kernel" in str(w)]


def test_a_compiled_model_is_recorded_under_its_own_paths_with_its_eager_weights(models: dict[str, Path]) -> None:
    """torch.compile(model) runs as written while the recording runs (recorder/hooks/eager.py): every layer is seen, and
    named by its path in the model, not in the compiled wrapper (`_orig_mod.model.layers.0.self_attn`)."""
    tokenizer, model = load(models["llama"], "llama")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    with torch.no_grad(), attn_tui.record() as rec:
        compiled(**tokenizer(TEXT, return_tensors="pt"))
    trace = rec.trace
    eager = reference(models["llama"])
    assert trace.meta.modules == tuple(PATHS["llama"].format(i=i) for i in range(len(eager)))
    for module, expected in zip(trace.meta.modules, eager):
        torch.testing.assert_close(weights_of(trace, module, expected.shape[0]), expected, atol=1e-5, rtol=0)


def test_a_model_that_folds_heads_into_the_batch_keeps_its_heads(tmp_path: Path) -> None:
    """bloom runs its own eager attention by default and multiplies probs.view(B * H, L, S) by the values: each
    recorded (batch item, head) is that item's head, equal to output_attentions."""
    path = tiny(tmp_path, "bloom", dict(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4))
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    batch = tokenizer([TEXT, TEXT[::-1]], return_tensors="pt", padding=True, return_token_type_ids=False)
    with torch.no_grad():
        expected = model(**batch, output_attentions=True).attentions
        with attn_tui.record() as rec:
            model(**batch)
    trace = rec.trace
    assert trace.heads == 4
    assert trace.meta.modules == ("transformer.h.0.self_attention", "transformer.h.1.self_attention")
    for module, layer in zip(trace.meta.modules, expected):
        for b in range(2):
            torch.testing.assert_close(weights_of(trace, module, 4, step=b), layer[b], atol=1e-6, rtol=0)


def test_gemma2s_soft_cap_is_a_stage_of_its_own(tmp_path: Path) -> None:
    """gemma2 runs eager by default and caps its scores, cap·tanh(s / cap), between the scale and the mask: the cap
    is its own stage, each cell of it what the formula gives (the inspector agrees), the weights eager's own."""
    from tests.sources.recorder.test_parity import every_cell_matches

    config = dict(SMALL, head_dim=8, num_key_value_heads=2, attn_logit_softcapping=2.0, query_pre_attn_scalar=8,
                  final_logit_softcapping=None)
    path = tiny(tmp_path, "gemma2", config)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    with torch.no_grad(), attn_tui.record() as rec:
        model(**tokenizer(TEXT, return_tensors="pt"))
    trace = rec.trace
    eager = reference(path)
    for module, expected in zip(trace.meta.modules, eager, strict=True):
        torch.testing.assert_close(weights_of(trace, module, expected.shape[0]), expected, atol=1e-5, rtol=0)
        names = [s.name for s in trace if s.place.module == module and s.place.head in (None, 0)]
        assert names.index("scaled") < names.index("capped") < names.index("masked")
        for h in range(expected.shape[0]):
            scaled = trace.tensor("scaled", head=h, module=module).double()
            torch.testing.assert_close(trace.tensor("capped", head=h, module=module).double(),
                                       2.0 * torch.tanh(scaled / 2.0), atol=1e-6, rtol=0)
    assert "2·tanh(scaled / 2)" in str(trace.stage("capped", head=0, module=trace.meta.modules[0]).formula)
    every_cell_matches(trace)


def test_the_kernels_mask_is_told_by_its_reasons(models: dict[str, Path]) -> None:
    tokenizer, model = load(models["gemma3_text"], "gemma3_text")
    with torch.no_grad(), attn_tui.record() as rec:
        model(**tokenizer(TEXT, return_tensors="pt"))
    trace = rec.trace
    assert trace.stage("scaled", head=0, module=trace.meta.modules[0]).op.factor == pytest.approx(32 ** -0.5)
    for i, module in enumerate(trace.meta.modules):
        spec = trace.stage("masked", head=0, module=module).op.mask
        assert spec is not None and spec.causal and spec.window == (3 if i % 2 == 0 else None)
        said = " ".join(str(r) for r in spec.reasons(5, 0))
        assert ("sliding window" in said) == (i % 2 == 0) and "future key" not in said
        assert "future key" in " ".join(str(r) for r in spec.reasons(0, 5))
        assert torch.equal(spec.allowed, trace.tensor("weights", head=0, module=module) > 0)


def test_a_padded_batch_names_its_padding_keys_and_matches_eager_on_real_rows(models: dict[str, Path]) -> None:
    tokenizer, model = load(models["bert"], "bert")
    batch = tokenizer([TEXT, "the cat sat"], return_tensors="pt", padding=True)
    with torch.no_grad(), attn_tui.record() as rec:
        model(**batch)
    trace = rec.trace
    eager_model = transformers.AutoModel.from_pretrained(models["bert"], attn_implementation="eager").eval()
    with torch.no_grad():
        eager = eager_model(**batch, output_attentions=True).attentions
    real = int(batch["attention_mask"][1].sum())
    for module, expected in zip(trace.meta.modules, eager):
        torch.testing.assert_close(weights_of(trace, module, 4, step=0), expected[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(weights_of(trace, module, 4, step=1)[:, :real], expected[1][:, :real],
                                   atol=1e-5, rtol=0)
        spec = trace.stage("masked", head=0, module=module, step=1).op.mask
        assert spec is not None and not spec.causal
        assert spec.padding is not None and spec.padding.nonzero().flatten().tolist() == list(range(real,
                                                                                                    len(spec.padding)))
        assert [str(r) for r in spec.reasons(0, real)] == [f"<pad> key: key {real} is padding"]


SCRIPT = textwrap.dedent('''
    import sys
    import torch
    import transformers

    path = sys.argv[1]
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    with torch.no_grad():
        out = model(**tokenizer("the cat sat on the mat", return_tensors="pt"))
    print("logits", tuple(out.logits.shape))
''')


@pytest.mark.parametrize("family", ["llama", "gemma3_text"])
def test_a_users_script_run_by_attn_tui_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              models: dict[str, Path], family: str) -> None:
    script = tmp_path / "mine.py"
    script.write_text(SCRIPT, encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(script), str(models[family]))
    assert code == 0, err
    assert "logits" in err
    doc = json.loads(out)
    eager = reference(models[family], "the cat sat on the mat")
    assert doc["modules"] == [PATHS[family].format(i=i) for i in range(len(eager))]
    for i, expected in enumerate(eager):
        module = PATHS[family].format(i=i)
        got = {s["head"]: torch.tensor(s["data"]) for s in doc["stages"]
               if s["name"] == "weights" and s["module"] == module}
        torch.testing.assert_close(torch.stack([got[h] for h in range(len(got))]), expected.float(), atol=1e-5,
                                   rtol=0)
    said = [GAP.search(s["formula"]) for s in doc["stages"] if s["name"] == "output"]
    assert said and all(m and float(m.group(1)) <= 1e-5 for m in said)
