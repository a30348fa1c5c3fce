"""Training, greedy decoding, accuracy and checkpoints for the date model (CPU, seeded)."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Union

import torch
from torch import nn

from attn_tui.errors import InputError
from attn_tui.i18n import Msg
from attn_tui.io.files import write_atomic
from attn_tui.models.seq2seq import codec, dates
from attn_tui.models.seq2seq.net import NetConfig, Seq2Seq
from attn_tui.models.seq2seq.transformer import ARCH as TRANSFORMER
from attn_tui.models.seq2seq.transformer import DateTransformer, TransformerConfig

ATTENTIONS = ("additive", "general")
ARCHS = ("gru", TRANSFORMER)
SHIPPED = (*ATTENTIONS, TRANSFORMER)  # checkpoints/dates_<name>.pt
HELD_OUT_SIZE = 2000
TRAINING = {"gru": (4, 200), TRANSFORMER: (12, 300)}  # (epochs, steps per epoch) of the shipped checkpoints
DateModel = Union[Seq2Seq, DateTransformer]


@dataclass(frozen=True)
class Progress:
    """Reported after every step, so a caller can draw a progress bar."""

    step: int
    total: int
    loss: float
    accuracy: float | None  # held-out exact match, at the end of each epoch


def new_model(attention: str = "additive", arch: str = "gru") -> DateModel:
    if arch == TRANSFORMER:
        return DateTransformer(TransformerConfig(len(codec.IN_ITOS), len(codec.OUT_ITOS)))
    return Seq2Seq(NetConfig(len(codec.IN_ITOS), len(codec.OUT_ITOS), attention))


def train(attention: str = "additive", epochs: int = 8, steps_per_epoch: int = 300, batch_size: int = 64,
          seed: int = 0, lr: float = 3e-3, on_step: Callable[[Progress], None] | None = None,
          held_out_size: int = HELD_OUT_SIZE, arch: str = "gru") -> tuple[DateModel, float]:
    """Teacher-forced cross-entropy with Adam; returns the model and its held-out accuracy.

    Fresh examples every step (the generator is cheap), so the model never memorises
    surface strings; held-out dates are never drawn for training. Both architectures
    see the same seeded stream of examples and are measured on the same held-out dates.
    The transformer trains on one CPU thread: its result then does not depend on how
    many cores the machine has, and on a shared machine one thread is faster too.
    """
    threads = torch.get_num_threads()
    if arch == TRANSFORMER:
        torch.set_num_threads(1)
    try:
        return _fit(attention, epochs, steps_per_epoch, batch_size, seed, lr, on_step, held_out_size, arch)
    finally:
        torch.set_num_threads(threads)


def _fit(attention: str, epochs: int, steps_per_epoch: int, batch_size: int, seed: int, lr: float,
         on_step: Callable[[Progress], None] | None, held_out_size: int, arch: str) -> tuple[DateModel, float]:
    torch.manual_seed(seed)
    model = new_model(attention, arch)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=lr, total_steps=epochs * steps_per_epoch)
    loss_fn = nn.CrossEntropyLoss()
    rng = __import__("random").Random(seed)
    held_out = dates.dataset(held_out_size, seed + 1, held_out=True)
    total, accuracy = epochs * steps_per_epoch, 0.0
    for epoch in range(epochs):
        model.train()
        for i in range(steps_per_epoch):
            src, lengths, tgt = codec.batch([dates.example(rng) for _ in range(batch_size)])
            logits = model(src, lengths, tgt[:, :-1])  # (B, T, V)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            step = epoch * steps_per_epoch + i + 1
            last = i == steps_per_epoch - 1
            if last:
                accuracy = exact_match(model, held_out)
            if on_step:
                on_step(Progress(step, total, loss.item(), accuracy if last else None))
    return model, accuracy


@torch.no_grad()
def greedy(model: DateModel, texts: list[str]) -> list[str]:
    """Decode from <s> until </s> (or the length limit), always taking the likeliest character."""
    model.eval()
    src, lengths, _ = codec.batch([(t, "") for t in texts])
    if isinstance(model, DateTransformer):
        ids = model.greedy_ids(src, codec.OUT_STOI[dates.START], codec.OUT_STOI[dates.END], codec.MAX_OUTPUT)
        return [_text(row) for row in ids.tolist()]
    keys, state = model.encoder(src, lengths)
    mask = src != 0
    token = torch.full((len(texts),), codec.OUT_STOI[dates.START])
    out: list[list[str]] = [[] for _ in texts]
    done = torch.zeros(len(texts), dtype=torch.bool)
    for _ in range(codec.MAX_OUTPUT):
        logits, state, _ = model.decoder.step(token, state, keys, mask)
        token = logits.argmax(-1)
        for b, t in enumerate(token.tolist()):
            if not done[b]:
                if codec.OUT_ITOS[t] == dates.END:
                    done[b] = True
                else:
                    out[b].append(codec.OUT_ITOS[t])
        if done.all():
            break
    return ["".join(chars).replace(dates.PAD, "").replace(dates.START, "") for chars in out]


def _text(ids: list[int]) -> str:
    """Ids written after <s> → the characters before the first </s> (special tokens dropped)."""
    chars = []
    for i in ids:
        if codec.OUT_ITOS[i] == dates.END:
            break
        chars.append(codec.OUT_ITOS[i])
    return "".join(chars).replace(dates.PAD, "").replace(dates.START, "")


def exact_match(model: DateModel, pairs: list[tuple[str, str]], batch_size: int = 500) -> float:
    right = 0
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i:i + batch_size]
        right += sum(p == t for p, (_, t) in zip(greedy(model, [s for s, _ in chunk]), chunk))
    return right / len(pairs)


def save(model: DateModel, path: Path, accuracy: float | None = None) -> None:
    """Weights in float16 (half the size, no measurable loss) plus the config and vocabularies.

    Written beside `path` and renamed into place: a full disk keeps the checkpoint that was there."""
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    arch = TRANSFORMER if isinstance(model, DateTransformer) else "gru"
    checkpoint = {"config": model.cfg.to_dict(), "state": state, "in_vocab": codec.IN_ITOS,
                  "out_vocab": codec.OUT_ITOS, "held_out_accuracy": accuracy, "arch": arch}
    buffer = io.BytesIO()  # torch's own file writer reports a full disk as a RuntimeError: Python's says ENOSPC
    torch.save(checkpoint, buffer)
    write_atomic(path, lambda partial: partial.write_bytes(buffer.getbuffer()))


def load(source: Path | bytes) -> DateModel:
    data = torch.load(io.BytesIO(source) if isinstance(source, bytes) else source, weights_only=True)
    if data["in_vocab"] != codec.IN_ITOS or data["out_vocab"] != codec.OUT_ITOS:
        raise InputError(Msg("this checkpoint was trained with another alphabet than this version's"))
    model: DateModel = (DateTransformer(TransformerConfig(**data["config"])) if data.get("arch") == TRANSFORMER
                        else Seq2Seq(NetConfig(**data["config"])))
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in data["state"].items()})
    return model.eval()


def shipped_path(attention: str = "additive") -> Path:
    return Path(str(resources.files("attn_tui.models.seq2seq") / "checkpoints" / f"dates_{attention}.pt"))


def load_shipped(attention: str = "additive") -> DateModel:
    """A shipped checkpoint: the GRU with `additive` or `general` attention, or the `transformer`."""
    if attention not in SHIPPED:
        raise InputError(f"unknown attention {attention!r}; choose additive or general")
    return load(shipped_path(attention))
