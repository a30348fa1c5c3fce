"""attn-tui on a GPU, as ratios to what torch and transformers do there; asserts nothing, skipped without CUDA.

    python benchmarks/gpu.py

1. scaled_dot's whole trace against SDPA on the same Q, K, V, from 256 to 16 384 tokens.
2. A model writing 64 tokens with every stage kept, against transformers' own `generate` with
   `output_attentions=True`, per token: a Llama of SmolLM2-135M's shape (30 layers, 9 query heads over 3
   key/value heads, width 576) with random weights, since the shipped weights stay off the GPU machine.
3. Recording a 12-layer Llama's default (sdpa) forward, and building its trace, against the plain forward.

GPU times are wall-clock seconds after `torch.cuda.synchronize()`, the median of several runs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPT = "The capital of France is Paris, and the capital of Korea is"
SMOLLM2_SHAPE = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                     num_key_value_heads=3, max_position_embeddings=2048, rope_theta=100000.0, tie_word_embeddings=True)


DEVICE = "cuda"


def sync() -> None:
    if DEVICE != "cpu":
        torch.cuda.synchronize()


def median_s(fn: Callable[[], Any], repeat: int = 5) -> float:
    fn()  # warm-up: kernels chosen, memory pooled
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scaled_dot() -> None:
    from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
    from attn_tui.attention.engine import compute

    print("\nscaled_dot on CUDA, d = 64: compute() / SDPA on the same Q, K, V")
    print(f"{'tokens':>7} {'compute ms':>11} {'SDPA ms':>9} {'ratio':>7}")
    for n in (256, 1024, 4096, 16384):
        request = VariantAsk(SentenceInput(" ".join(f"w{i % 97}" for i in range(n))),
                          Settings(variant="scaled_dot", dim=64, device=DEVICE))
        trace = compute(request)
        q, k, v = (trace.tensor(name) for name in ("query", "key", "value"))
        ours = median_s(lambda request=request: compute(request), 3)
        sdpa = median_s(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q[None], k[None], v[None]))
        print(f"{n:>7} {ours * 1e3:>11.1f} {sdpa * 1e3:>9.2f} {ours / sdpa:>7.1f}")


def _folder(root: Path) -> Path:
    import transformers

    from tests.sources.tiny_models import VOCAB, tokenizer_files

    config = transformers.LlamaConfig(vocab_size=VOCAB, **SMOLLM2_SHAPE)  # type: ignore[arg-type]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    path = root / "smollm2-shape"
    model.save_pretrained(path)
    tokenizer_files(path)
    return path


def generate(count: int = 64) -> None:
    import transformers

    from attn_tui.ask.settings import ModelAsk
    from attn_tui.sources import hf
    from attn_tui.sources.generate import Generator, output_embedding

    with tempfile.TemporaryDirectory() as root:
        path = _folder(Path(root))
        loaded = hf.load(str(path), DEVICE)
        for holder in (loaded.model.config, getattr(loaded.model, "generation_config", None)):
            if holder is not None:
                holder.eos_token_id = None  # random weights: write all `count` tokens, both sides
        lm = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager",
                                                               trust_remote_code=False).to(DEVICE).eval()
        lm.generation_config.eos_token_id = None
        ids = loaded.tokenizer(PROMPT, return_tensors="pt")["input_ids"].to(DEVICE)
        ask = ModelAsk(str(path), PROMPT, generate=count, device=DEVICE)
        unembed = output_embedding(loaded, path)

        def theirs() -> Any:
            with torch.no_grad():
                return lm.generate(ids, max_new_tokens=count, min_new_tokens=count, do_sample=False,
                                   output_attentions=True, return_dict_in_generate=True, pad_token_id=0)

        def ours() -> Any:
            return Generator(loaded, ask, unembed).write(count)

        their_s, our_s = median_s(theirs, 3) / count, median_s(ours, 3) / count
        trace, out = ours(), theirs()
        written = list(trace.meta.generated_ids)
        same = written == out.sequences[0, ids.shape[1]:ids.shape[1] + len(written)].tolist()
    print(f"\nA SmolLM2-135M-shaped Llama (random weights) on CUDA writing {count} tokens after a "
          f"{ids.shape[1]}-token prompt (median of 3, per token)")
    print(f"{'transformers ms':>16} {'attn-tui ms':>12} {'ratio':>6} {'stages kept':>12} {'same ids':>9}")
    print(f"{their_s * 1e3:>16.1f} {our_s * 1e3:>12.1f} {our_s / their_s:>6.2f} {len(trace):>12,} {same!s:>9}")


def recorder() -> None:
    import transformers

    import attn_tui

    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=12,
                                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).to(DEVICE).eval()
    print(f"\nA 12-layer Llama on CUDA, 8 heads, as it runs by default ({model.config._attn_implementation}): "
          "recorded / plain, built / plain")
    print(f"{'tokens':>7} {'plain ms':>9} {'recorded':>9} {'ratio':>6} {'build ms':>9} {'ratio':>6}")
    for n in (128, 512, 2048):
        ids = torch.randint(0, 1000, (1, n), device=DEVICE)

        def plain(ids: torch.Tensor = ids) -> None:
            with torch.no_grad():
                model(ids)

        def recorded(ids: torch.Tensor = ids) -> Any:
            with torch.no_grad(), attn_tui.record() as rec:
                model(ids)
            return rec

        base, taken, build = median_s(plain), median_s(recorded), _build_s(recorded)
        print(f"{n:>7} {base * 1e3:>9.1f} {taken * 1e3:>9.1f} {taken / base:>6.2f} {build * 1e3:>9.1f} "
              f"{build / base:>6.2f}")


def _build_s(recorded: Callable[[], Any], repeat: int = 3) -> float:
    """The median time from a finished recording to its trace (each time a fresh recording: a trace is kept)."""
    times = []
    for _ in range(repeat):
        rec = recorded()
        sync()
        start = time.perf_counter()
        _ = rec.trace
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    if not torch.cuda.is_available():
        print("\ncuda: skipped (torch sees no GPU)")
        return
    print(f"{torch.cuda.get_device_name()} · torch {torch.__version__}")
    for section in (scaled_dot, generate, recorder):
        try:
            section()
        except Exception as error:  # one section failing must not hide the others' figures
            print(f"\n{section.__name__}: failed: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
