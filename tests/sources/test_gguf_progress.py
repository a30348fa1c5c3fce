"""Converting a GGUF file reports each tensor transformers de-quantises, so the app's bar moves with the work."""

from __future__ import annotations

import inspect

import pytest

from attn_tui.i18n import Msg
from attn_tui.sources.gguf_cache import tensors_reported
from attn_tui.sources.progress import Progress, listening


def test_each_tensor_de_quantised_is_reported_and_the_bar_is_put_back() -> None:
    gguf_utils = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    # transformers walks the file's tensors under this module's own tqdm: the hook is where the work is counted
    assert "tqdm(reader.tensors" in inspect.getsource(gguf_utils.load_gguf_checkpoint)
    bar = gguf_utils.tqdm
    heard: list[Progress] = []
    what = Msg("converting {name} (once): de-quantising its tensors", name="m")
    with listening(heard.append), tensors_reported(what):
        walked = list(gguf_utils.tqdm(["t0", "t1", "t2"], desc="Converting and de-quantizing GGUF tensors..."))
    assert walked == ["t0", "t1", "t2"]
    assert [(p.done, p.total) for p in heard] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert {str(p.what) for p in heard} == {"converting m (once): de-quantising its tensors"}
    assert gguf_utils.tqdm is bar
