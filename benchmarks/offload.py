"""A model bigger than --max-memory: peak resident memory and time of `attn-tui stages` on a random-weight Llama,
loaded whole and with its layers offloaded to disk, each in a fresh process; ratios printed.

    python benchmarks/offload.py [LAYERS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = "the cat sat on the mat and looked at the door"
PEAK = ("import sys; from attn_tui.cli import main; sys.stdout = open(sys.argv[1], 'w'); "
        "code = main(['stages', '--model', sys.argv[2], '--text', sys.argv[3], '--layer', sys.argv[4], "
        "'--stage', 'weights', '--format', 'json'] + sys.argv[5:]); sys.stdout.close(); "
        "sys.stderr.write(str(next(int(line.split()[1]) for line in open('/proc/self/status') "
        "if line.startswith('VmHWM')) // 1024))")


def _model(into: Path, layers: int) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.sources.tiny_models import SMALL, tiny

    config = dict(SMALL, hidden_size=512, intermediate_size=2048, num_hidden_layers=layers, num_attention_heads=8,
                  num_key_value_heads=2)
    return tiny(into, "llama", config, name="llama-bench")


def _run(path: Path, layer: int, *extra: str) -> tuple[int, float]:
    """(peak RSS in MiB, seconds) of one `stages` run in a fresh process."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", PEAK, out.name, str(path), TEXT, str(layer), *extra],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
        return int(done.stderr.strip().splitlines()[-1]), time.perf_counter() - start


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    with tempfile.TemporaryDirectory() as folder:
        path = _model(Path(folder), layers)
        from attn_tui.sources.load_plan import load_plan

        plan = load_plan(path, 2**40, "bench")
        size = sum(p.stat().st_size for p in path.glob("*.safetensors"))
        budget = plan.tokenizer + plan.reserve + size // 3  # the embeddings and a few layers stay in memory
        whole_mib, whole_s = _run(path, layers - 1)
        off_mib, off_s = _run(path, layers - 1, "--max-memory", str(budget))
        print(f"random-weight Llama, {layers} layers, {size / 2**20:.0f} MiB of safetensors; "
              f"--max-memory {budget / 2**20:.0f} MiB; the last layer's weights")
        print(f"peak resident memory, offloaded vs whole: {off_mib / whole_mib:.2f}× ({off_mib} vs {whole_mib} MiB)")
        print(f"wall time, offloaded vs whole: {off_s / whole_s:.2f}× ({off_s:.1f} vs {whole_s:.1f} s)")


if __name__ == "__main__":
    main()
