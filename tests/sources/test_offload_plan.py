"""Where accelerate's device map puts each layer, and what the header says of it: plain data, no model loaded."""

from __future__ import annotations

import pytest

from attn_tui.i18n import set_language
from attn_tui.present.model_view import offload_note
from attn_tui.sources.offload import placement


@pytest.mark.parametrize("device_map,main,expected", [
    ({"embed_tokens": "cpu", "layers.0": "cpu", "layers.1": "disk", "layers.2": "disk", "norm": "disk"}, "cpu",
     ("", "disk", "disk")),
    ({"": "disk"}, "cpu", ("disk", "disk", "disk")),  # nothing fitted: the whole model on disk
    ({"": "cpu"}, "cpu", ("", "", "")),  # everything fitted after all
    # on a GPU, accelerate offloads to the CPU first, then to disk
    ({"embed_tokens": 0, "layers.0": 0, "layers.1": "cpu", "layers.2": "disk", "norm": "disk"}, "cuda",
     ("", "cpu", "disk")),
    # a layer split into its parts: where any part is on disk, the layer is
    ({"layers.0": "cpu", "layers.1.self_attn": "cpu", "layers.1.mlp": "disk", "layers.2": "disk"}, "cpu",
     ("", "disk", "disk")),
    ({"layers.10": "disk", "layers.1": "cpu"}, "cpu", ("", "", "")),  # layers.10 is not inside layers.1
])
def test_each_layer_is_placed_where_its_block_is(device_map: dict, main: str, expected: tuple) -> None:
    assert placement(device_map, "layers", 3, main) == expected


def test_placement_reads_any_family_s_list_of_layers() -> None:
    assert placement({"encoder.layer.0": "cpu", "encoder.layer.1": "disk"}, "encoder.layer", 2, "cpu") == ("", "disk")
    assert placement({"h.0": "cpu", "h.1": "disk"}, "h", 2, "cpu") == ("", "disk")


def test_the_header_names_the_offloaded_layers_in_both_languages() -> None:
    offloaded = ("", "cpu", "disk", "disk", "", "disk")
    assert offload_note(()) == offload_note(("", "")) == ""
    assert offload_note(offloaded) == "layer 1 offloaded to the CPU; layers 2–3, 5 offloaded to disk"
    assert offload_note(("", "", "disk", "disk", "disk", "disk")) == "layers 2–5 offloaded to disk"
    set_language("ko")
    try:
        assert offload_note(offloaded) == "층 1: CPU로 오프로드됨; 층 2–3, 5: 디스크로 오프로드됨"
    finally:
        set_language("en")


def test_the_plan_loads_whole_offloads_or_refuses_by_the_figures(tmp_path) -> None:
    import json

    from attn_tui.ask.budget import BudgetError
    from attn_tui.sources.load_plan import load_plan

    config = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8,
              "num_attention_heads": 8, "vocab_size": 1000, "max_position_embeddings": 64}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    with open(tmp_path / "model.safetensors", "wb") as weights:  # sparse: no disk is spent
        weights.truncate(8 * (4 * 1024**2 + 3 * 1024 * 4096) * 2 + 1024 * 1000 * 2)  # float16 on disk
    layer = 4 * (4 * 1024**2 + 3 * 1024 * 4096)  # 64 MiB in float32: the largest part (embeddings: 4 MiB)
    roomy = load_plan(tmp_path, 2 * 1024**3, "m")
    assert roomy.whole and roomy.largest == layer
    tight = load_plan(tmp_path, 256 * 1024**2, "m")
    assert not tight.whole and tight.room == 256 * 1024**2 - tight.tokenizer - tight.reserve
    with pytest.raises(BudgetError, match=r"even with its layers offloaded to disk \(one layer's weights 64.0 MB"):
        load_plan(tmp_path, 64 * 1024**2, "m")
