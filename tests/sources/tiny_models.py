"""Tiny random-weight models of any family, built offline with transformers and saved as a folder with a real
tokenizer beside it: what every family test (and the app's and compare's tests of a family) opens."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

TEXT = "the cat sat on the mat and looked at the door"
VOCAB = 30522  # the shipped MiniLM tokenizer's, copied beside each tiny model
ALTERNATE = ["sliding_attention", "full_attention"] * 2  # layers 0 and 2 slide, 1 and 3 see every earlier key
SMALL: dict[str, Any] = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=64)
ENCODERS = {"bert", "roberta", "xlm-roberta"}  # opened with AutoModel; the others with AutoModelForCausalLM


# The one registry of tiny configs: every family the app traces, as the tests build it (model_type → config).
# A family checked under several configurations lists them too (DEEPSEEK, QWEN3_NEXT), its first being its own.
WINDOW = 3  # shorter than TEXT's tokens, so every sliding layer's window hides keys
MULTIPLIER = 0.07  # Granite's attention_multiplier: far from 1/√8 ≈ 0.354, and no 1/√n of a whole n
TOKENS = dict(pad_token_id=0, bos_token_id=101, eos_token_id=102)  # inside the tiny vocabulary
LINEAR_KINDS = ["linear_attention", "full_attention"]  # Qwen3-Next's layers, alternating
LATENT: dict[str, Any] = dict(SMALL, num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=8, qk_nope_head_dim=8,
                              qk_rope_head_dim=4, v_head_dim=8, first_k_dense_replace=2)  # dense: no experts
DEEPSEEK: dict[str, dict[str, Any]] = {
    "interleaved": LATENT,
    # no low-rank query path, rotate-half, biases on the down-projections and o_proj, values wider than the keys'
    # no-position part, an MoE layer 1
    "plain_query": dict(LATENT, q_lora_rank=None, rope_interleave=False, attention_bias=True, kv_lora_rank=6,
                        v_head_dim=10, qk_rope_head_dim=6, first_k_dense_replace=1, n_routed_experts=4,
                        num_experts_per_tok=2, moe_intermediate_size=16, n_group=1, topk_group=1),
    # DeepSeek-V3's own rope: YaRN's frequencies and its mscale on the scores' factor
    "yarn": dict(LATENT, rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                          "rope_theta": 10000.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                          "beta_fast": 32.0, "beta_slow": 1.0}),
    # DeepSeek-V2: the same layer, its pairs turned as complex numbers (routed to this family)
    "v2": dict(LATENT, qk_rope_head_dim=6, head_dim=6),
}
QWEN3_NEXT: dict[str, dict[str, Any]] = {
    # two value heads per key head (transformers' repeat_interleave), a quarter of each head rotated, dense MLPs
    "dense": dict(SMALL, num_hidden_layers=4, layer_types=LINEAR_KINDS * 2, num_key_value_heads=2, head_dim=8,
                  linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=6,
                  linear_conv_kernel_dim=3, num_experts=0),
    # small experts, one value head per key head, half of each head rotated, a full layer first
    "experts": dict(SMALL, num_hidden_layers=3, layer_types=["full_attention", "linear_attention", "linear_attention"],
                    num_key_value_heads=1, head_dim=16, partial_rotary_factor=0.5, linear_num_value_heads=2,
                    linear_num_key_heads=2, linear_key_head_dim=4, linear_value_head_dim=8, linear_conv_kernel_dim=4,
                    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, decoder_sparse_step=1),
    # biased q/k/v/o (the gate's bias too), more value heads than attention heads, as the released model has
    "biased": dict(SMALL, num_hidden_layers=2, num_attention_heads=2, layer_types=LINEAR_KINDS, num_key_value_heads=1,
                   head_dim=8, attention_bias=True, linear_num_value_heads=6, linear_num_key_heads=3,
                   linear_key_head_dim=4, linear_value_head_dim=4, linear_conv_kernel_dim=2, num_experts=0),
}

CONFIGS: dict[str, dict[str, Any]] = {
    "bert": SMALL,
    "gpt2": dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64),
    "llama": dict(SMALL, num_key_value_heads=2),
    # layer 1 slides with a window of 3 (max_window_layers 1: transformers derives layer_types from it)
    "qwen2": dict(SMALL, num_key_value_heads=2, use_sliding_window=True, sliding_window=3, max_window_layers=1),
    "gemma2": dict(SMALL, num_hidden_layers=4, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
                   sliding_window=3, attn_logit_softcapping=2.0, layer_types=ALTERNATE),
    "gemma3_text": dict(SMALL, num_hidden_layers=4, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
                        sliding_window=3, layer_types=ALTERNATE),
    "mistral": dict(SMALL, num_key_value_heads=2, sliding_window=WINDOW),
    # layer 0 global, layer 1 slides (max_window_layers 1: transformers derives layer_types from it)
    "qwen3": dict(SMALL, num_key_value_heads=2, head_dim=8, use_sliding_window=True, sliding_window=WINDOW,
                  max_window_layers=1),
    # heads 16 wide over a width of 32 with 4 heads (not 32 / 4 = 8), one key/value head as Gemma 2B's
    "gemma": dict(SMALL, num_key_value_heads=1, head_dim=16),
    "granite": dict(SMALL, num_key_value_heads=2, attention_multiplier=MULTIPLIER, embedding_multiplier=3.0,
                    residual_multiplier=0.5),
    "starcoder2": dict(SMALL, num_key_value_heads=2, sliding_window=WINDOW, use_bias=True),
    # 4 query heads over 2 key/value heads, half of each head turned, a window of 3 on every layer
    "phi3": dict(SMALL, **TOKENS, num_key_value_heads=2, sliding_window=3,
                 rope_parameters=dict(rope_type="default", rope_theta=500.0, partial_rotary_factor=0.5)),
    # rotary_pct 0.5: 4 of each head's 8 dimensions turned, with its own base
    "gpt_neox": dict(SMALL, **TOKENS, rotary_pct=0.5, rotary_emb_base=500),
    "olmo2": dict(SMALL, **TOKENS, num_key_value_heads=2),
    "diffllama": dict(SMALL, num_hidden_layers=3, num_key_value_heads=2, head_dim=8),
    "deepseek_v3": DEEPSEEK["interleaved"],
    "deepseek_v2": DEEPSEEK["v2"],
    "qwen3_next": QWEN3_NEXT["dense"],
}


def tokenizer_files(into: Path) -> None:
    """The shipped MiniLM tokenizer's files, copied into a model folder; the test is skipped, saying why, where
    the MiniLM package is not installed (a machine with transformers but not `attn-tui[models]`)."""
    import pytest

    from attn_tui.sources import folder

    try:
        shipped = Path(folder.resolve("minilm"))
    except folder.ModelError as error:
        pytest.skip(str(error))
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (shipped / name).is_file():
            shutil.copy(shipped / name, into / name)


def tiny(tmp_path: Path, model_type: str, config: dict[str, Any], name: str | None = None) -> Path:
    """A tiny random model of `model_type`, saved as safetensors with a real tokenizer beside it.

    Weights are drawn wide (std 0.5, 1-D weights such as the q/k norms' too) so that every stage matters:
    a soft cap bends the scores, a norm's weight is not all ones.
    """
    import transformers

    made = transformers.AutoConfig.for_model(model_type, **config)
    torch.manual_seed(0)
    auto = transformers.AutoModel if model_type in ENCODERS else transformers.AutoModelForCausalLM
    model = auto.from_config(made, attn_implementation="eager")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5 if parameter.dim() > 1 else 0.3)
    path = tmp_path / (name or model_type)
    model.save_pretrained(path)
    tokenizer_files(path)
    return path


def reference(path: Path, text: str = TEXT) -> tuple[torch.Tensor, ...]:
    """transformers' own eager attention weights over `text`: one (heads, N, N) per layer."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(**tokenizer(text, return_tensors="pt"), output_attentions=True)
    return tuple(a[0] for a in out.attentions)
