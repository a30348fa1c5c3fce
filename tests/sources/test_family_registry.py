"""A family is one module: the registry finds it, and every fact the folder check, the estimate, offloading and the
`moved` stage read is declared in it.

The last test writes a family no one has shipped (Mixtral's attention, read by Mistral's layer reader) into a folder
of its own, puts that folder beside the shipped adapters, and traces a tiny Mixtral whose every head equals
transformers' own `output_attentions`, without a line of attn-tui changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attn_tui.sources.families import families, family_for, routing, supported_types
from tests.limits import limit

ROOT = Path(__file__).resolve().parents[2]


def test_each_model_type_is_read_by_one_family_which_declares_it() -> None:
    assert routing()["qwen2"] == "llama" and routing()["gemma3_text"] == "gemma3" and "gemma3" not in routing()
    assert routing()["roberta"] == routing()["xlm-roberta"] == "bert"
    assert supported_types() == sorted(routing())
    assert family_for("t5") is None
    for family in families().values():  # the facts a family declares, each where the family says
        assert family.blocks and family.output and family.unembedding and family.mlp_matrices in (2, 3), family.name
    assert families()["gpt2"].sizes["width"] == "n_embd" and families()["gpt_neox"].unembedding == "embed_out.weight"
    assert [name for name, family in families().items() if family.gated_query] == ["qwen3_next"]


TOY = '''
    """Mixtral: Mistral's attention layer over a mixture-of-experts MLP."""

    from attn_tui.sources.families import llama, mistral
    from attn_tui.sources.families.spec import Family

    FAMILY = Family("toy_mixtral", causal=True, layer=mistral.layer, kv_heads=llama.kv_heads,
                    rope_base=llama.rope_base, model_types=("mixtral",))
'''

CHECK = '''
import json, sys
from pathlib import Path
import attn_tui.sources.families as shipped
shipped.__path__.append(sys.argv[1])  # the folder holding the new module, beside the shipped adapters

import torch
from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import folder, run
from tests.sources.tiny_models import SMALL, TEXT, TOKENS, reference, tiny

path = tiny(Path(sys.argv[2]), "mixtral", dict(SMALL, num_key_value_heads=2, num_local_experts=4,
                                               num_experts_per_tok=2, sliding_window=3, **TOKENS))
trace = run(ModelAsk(str(path), TEXT)).trace
expected = reference(path)
apart = max((trace.tensor("weights", layer, head) - weights[head]).abs().max().item()
            for layer, weights in enumerate(expected) for head in range(trace.heads))
print(json.dumps({"family": trace.meta.family, "checked": folder.check_folder(path), "apart": apart,
                  "layers": trace.layers, "moved": "moved" in trace.names()}))
'''


def traced_with(tmp_path: Path, module: str, source: str, check: str) -> dict[str, object]:
    """Put `module` (its `source`) in a folder beside the shipped adapters and run `check` in a fresh process (the
    registry is read once per process); what `check` printed last, as JSON."""
    adapters = tmp_path / "adapters"
    adapters.mkdir()
    (adapters / f"{module}.py").write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", check, str(adapters), str(tmp_path)], capture_output=True,
                            text=True, timeout=limit(300), check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    found: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
def test_a_new_family_is_its_module_and_nothing_else(tmp_path: Path) -> None:
    found = traced_with(tmp_path, "toy_mixtral", TOY, CHECK)
    assert found["family"] == "toy_mixtral" and found["checked"] == "mixtral" and found["layers"] == 2
    assert found["apart"] < 1e-5  # every layer's and head's weights equal transformers' eager output_attentions
    assert found["moved"]  # W_O found where the family says (the default, self_attn.o_proj)


CAPABLE = '''
    """Mistral's attention with a capability the tracer does not have: each head's share on the first token, a stage
    after the heads, at the prompt and at every written step."""

    from attn_tui.i18n import Msg
    from attn_tui.sources.families import llama, mistral
    from attn_tui.sources.families.spec import AfterHeads, Family


    def first_token_share(trace, spec, layer, run_, step, queries):
        from attn_tui.trace.ops import Given, Place
        from attn_tui.trace.stage import Axis, Stage

        for head in range(spec.heads):
            weights = trace.stages[Place("weights", layer, head, step)]
            trace.add(Stage(weights.place.at("sink_mass"), weights.tensor[:, :1], Msg("A[:, 0]"),
                            (weights.axes[0], Axis("key", weights.axes[1].labels[:1])), Given(Msg("A[:, 0]"))))


    FAMILY = Family("toy_capable", causal=True, layer=mistral.layer, kv_heads=llama.kv_heads,
                    rope_base=llama.rope_base, model_types=("mixtral",),
                    after_heads=(AfterHeads("first-token share", first_token_share),))
'''

CHECK_CAPABLE = '''
import json, sys
from pathlib import Path
import attn_tui.sources.families as shipped
shipped.__path__.append(sys.argv[1])

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from tests.sources.tiny_models import SMALL, TEXT, TOKENS, reference, tiny

path = tiny(Path(sys.argv[2]), "mixtral", dict(SMALL, num_key_value_heads=2, num_local_experts=4,
                                               num_experts_per_tok=2, **TOKENS))
trace = run(ModelAsk(str(path), TEXT)).trace
expected = reference(path)
apart = max((trace.tensor("sink_mass", layer, head)[:, 0] - weights[head][:, 0]).abs().max().item()
            for layer, weights in enumerate(expected) for head in range(trace.heads))
written = run(ModelAsk(str(path), TEXT, generate=2)).trace
written.fill_step(1, 1)
at_step = written.tensor("sink_mass", 1, 0, step=1)[:, 0] - written.tensor("weights", 1, 0, step=1)[:, 0]
print(json.dumps({"family": trace.meta.family, "apart": apart, "at_step": at_step.abs().max().item()}))
'''


@pytest.mark.slow
def test_a_family_with_a_new_capability_is_its_module_and_nothing_else(tmp_path: Path) -> None:
    found = traced_with(tmp_path, "toy_capable", CAPABLE, CHECK_CAPABLE)
    assert found["family"] == "toy_capable"
    assert found["apart"] < 1e-5  # the part's stage at every layer and head is transformers' own first column
    assert found["at_step"] == 0  # and the part runs at a written step, beside the step's own weights
