"""A typed model path completed as a shell completes it: the next directory entry, read from a bounded listing.

Textual-free and synchronous (the suggester runs it in a thread, so a slow disk never holds the
event loop): it reads at most `limit` entries of one directory, so a folder of 100k files costs
the same as one of 2k, and it never walks deeper than the directory typed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import islice

LIMIT = 2000  # entries read from one directory: bounded, whatever the directory holds
MODEL_MARK = "config.json"  # a Hugging Face model folder holds one


@dataclass(frozen=True)
class Completion:
    """What the typed text completes to (None: nothing to add), and whether that path is a model folder."""

    suggestion: str | None
    model: bool


def is_model_folder(path: str) -> bool:
    """A folder that holds a config.json: what `--model` opens."""
    return os.path.isfile(os.path.join(os.path.expanduser(path), MODEL_MARK))


def complete(value: str, limit: int = LIMIT) -> Completion:
    """The completion of `value`: the typed text plus the rest of the first matching entry's name.

    Directories come before files and end with '/' (so the next completion goes inside); entries whose
    name starts with '.' only when the typed part does; `~` is read as the home folder and kept as typed.
    A value that already names a model folder is complete: nothing deeper is suggested.
    """
    if not value or "\x00" in value:
        return Completion(None, False)
    if value == "~":
        return Completion("~/", is_model_folder("~"))
    folder, slash, part = value.rpartition("/")
    directory = os.path.expanduser(folder + slash) if slash else "."
    if not part and is_model_folder(directory):
        return Completion(None, True)
    best: tuple[bool, str] | None = None  # (is a file, name): directories first, then by name
    try:
        with os.scandir(directory) as entries:
            for entry in islice(entries, limit):
                name = entry.name
                if not name.startswith(part) or (name.startswith(".") and not part.startswith(".")):
                    continue
                try:
                    is_file = not entry.is_dir()
                except OSError:
                    continue
                if name == part and is_file:
                    continue  # a file typed in full: nothing to add
                if best is None or (is_file, name) < best:
                    best = (is_file, name)
    except (OSError, ValueError):
        return Completion(None, False)
    if best is None:
        return Completion(None, False)
    is_file, name = best
    completed = folder + slash + name
    if is_file:
        return Completion(completed if completed != value else None, False)
    return Completion(completed + "/", is_model_folder(completed))
