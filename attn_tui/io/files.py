"""Reading and writing what a user points at: size-capped reads of regular files, writes that replace whole.

A path on the command line may be a FIFO that never ends, a device that never stops
(`/dev/zero`), a directory, or a secret that is not a matrix at all. Each is refused
at once with a line that names the file, not what is inside it. Every file attn-tui
writes (exports, the screenshot, the session, a checkpoint) goes through `write_atomic`:
a full disk, an interrupt or a signal leaves the old file as it was and no partial file.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from attn_tui.errors import InputError
from attn_tui.i18n import N_, Msg

MAX_FILE_BYTES = 16 * 1024 * 1024  # a typed matrix, mask or target is never this large
QUOTE_LIMIT = 60  # characters of user input an error line may quote
_UNSAFE = re.compile("[\0\ud800-\udfff]")  # NUL, or a byte argv could not decode (surrogateescape), or a lone surrogate


def quoted(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text` as a quoted literal of at most about `limit` characters, cut with '…'."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)


def short_repr(value: object, limit: int = QUOTE_LIMIT // 2) -> str:
    """A Python value as `repr` shows it, cut with '…': for errors about a value of the wrong kind."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, N_("a directory")), (stat.S_ISFIFO, N_("a FIFO (named pipe)")),
                       (stat.S_ISCHR, N_("a character device")), (stat.S_ISBLK, N_("a block device")),
                       (stat.S_ISSOCK, N_("a socket"))):
        if test(mode):
            return name
    return N_("not a regular file")


def regular_file(path: str | Path, what: str | Msg) -> Path:
    """`path` if it names an existing regular file; an InputError naming the problem otherwise."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(Msg("cannot read {what}: no file {path}", what=what, path=quoted(str(path)))) from None
    except OSError as exc:
        raise InputError(Msg("cannot read {what} from {path}: {reason}", what=what, path=quoted(str(path)),
                             reason=exc.strerror or exc)) from None
    if not stat.S_ISREG(mode):
        raise InputError(Msg("cannot read {what} from {path}: it is {kind}, not a file", what=what,
                             path=quoted(str(path)), kind=Msg(_kind(mode))))
    return Path(path)


def _read_capped(stream: IO[bytes], limit: int, what: str | Msg, where: str | Msg) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputError(Msg("{what} from {where} is larger than {mb} MB; attn-tui reads at most that much",
                             what=what, where=where, mb=limit // (1024 * 1024)))
    return data


def _decode(data: bytes, what: str | Msg, where: str | Msg) -> str:
    if b"\0" in data:
        raise InputError(Msg("{what} from {where} is binary (it holds NUL bytes), not text", what=what, where=where))
    try:
        return data.decode("utf-8-sig")  # a byte-order mark some editors write is not part of the text
    except UnicodeDecodeError:
        raise InputError(Msg("{what} from {where} is not UTF-8 text", what=what, where=where)) from None


def read_text(path: str | Path, what: str | Msg, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes.

    Opened with O_NONBLOCK after the type check, so even a file swapped for a FIFO in
    between cannot block; read with a cap, so even a file that grows cannot exhaust memory.
    """
    regular_file(path, what)
    where = quoted(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                raise InputError(Msg("cannot read {what} from {path}: it is {kind}, not a file", what=what,
                                     path=where, kind=Msg(_kind(os.fstat(stream.fileno()).st_mode))))
            data = _read_capped(stream, limit, what, where)
    except OSError as exc:
        raise InputError(Msg("cannot read {what} from {path}: {reason}", what=what, path=where,
                             reason=exc.strerror or exc)) from None
    return _decode(data, what, where)


def read_stdin(what: str | Msg, limit: int = MAX_FILE_BYTES) -> str:
    """Standard input as UTF-8 text, with the same cap as a file."""
    where = Msg("standard input")
    return _decode(_read_capped(sys.stdin.buffer, limit, what, where), what, where)


def _mode_for_writing(target: Path, what: str | Msg) -> int | None:
    """The file mode of what is at `target` now (None: nothing), or the error a person reads instead."""
    try:
        return os.stat(target).st_mode
    except FileNotFoundError:
        return None
    except ValueError:  # a NUL in the path: no file system takes one
        raise InputError(Msg("cannot write {what} to {path}: {reason}", what=what, path=quoted(str(target)),
                             reason=Msg("{what} holds a NUL character", what=Msg("the path")))) from None
    except OSError as exc:
        raise InputError(Msg("cannot write {what} to {path}: {reason}", what=what, path=quoted(str(target)),
                             reason=exc.strerror or exc)) from None


def writable_file(path: str | Path, what: str | Msg) -> Path:
    """`path` if a file may be written there: absent, or a regular file, in an existing directory."""
    target = Path(path)
    mode = _mode_for_writing(target, what)
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(Msg("cannot write {what} to {path}: it is {kind}, not a file", what=what,
                             path=quoted(str(path)), kind=Msg(_kind(mode))))
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(Msg("cannot write {what} to {path}: no directory {parent}", what=what,
                             path=quoted(str(path)), parent=quoted(str(parent))))
    if not os.access(parent, os.W_OK) or (mode is not None and not os.access(target, os.W_OK)):
        raise InputError(Msg("cannot write {what} to {path}: permission denied", what=what, path=quoted(str(path))))
    return target


def writable_folder(path: str | Path, what: str | Msg) -> Path:
    """`path` if files may be written into it: an existing directory, or a new one in an existing directory."""
    target = Path(path)
    mode = _mode_for_writing(target, what)
    if mode is None:
        return writable_file(target, what)  # made later: its parent must exist and take it
    if not stat.S_ISDIR(mode):
        kind = Msg("a file") if stat.S_ISREG(mode) else Msg(_kind(mode))
        raise InputError(Msg("cannot write {what} to {path}: it is {kind}, and several files need a folder",
                             what=what, path=quoted(str(path)), kind=kind))
    if not os.access(target, os.W_OK | os.X_OK):
        raise InputError(Msg("cannot write {what} to {path}: permission denied", what=what, path=quoted(str(path))))
    return target


def check_text(text: str, what: str | Msg) -> str:
    """Refuse text that holds undecodable bytes (argv decoded with surrogateescape), lone surrogates or NULs."""
    if not isinstance(text, str):
        raise InputError(Msg("{name} must be {kind}, not {value}", name=what, kind=Msg(N_("text")),
                             value=short_repr(text)))
    bad = _UNSAFE.search(text)
    if bad is not None:
        if bad.group(0) == "\0":
            raise InputError(Msg("{what} holds a NUL character", what=what))
        raise InputError(Msg("{what} holds bytes that are not valid UTF-8", what=what))
    return text


_PARTIALS: set[Path] = set()  # files (or scratch folders) being written now, in any thread: see `remove_partials`
_PARTIALS_LOCK = threading.Lock()


@contextlib.contextmanager
def partial(path: Path) -> Iterator[Path]:
    """Mark `path`, a file or scratch folder being written, for `remove_partials` while the block runs."""
    with _PARTIALS_LOCK:
        _PARTIALS.add(path)
    try:
        yield path
    finally:
        with _PARTIALS_LOCK:
            _PARTIALS.discard(path)


def write_atomic(path: Path, write: Callable[[Path], object], mode: int = 0o666) -> None:
    """Call `write` on a new file beside `path`, then rename it into place.

    A failure anywhere (a full disk, KeyboardInterrupt, a signal's SystemExit) removes
    the partial file and leaves whatever was at `path` before; a process that ends while
    another thread writes removes it through `remove_partials`. The rename is atomic on
    one file system, so a reader sees the old file or the new one, never a mix. The new
    file has `mode` less the umask, as open() would give it (0o600: for the owner only).
    """
    temporary = path.with_name(f".{path.name[:100]}.{os.getpid()}.{secrets.token_hex(4)}.part")
    # Marked before it exists and created inside the `try`: a signal the moment the file appears still removes it.
    with partial(temporary):
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
            write(temporary)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def write_text_atomic(path: Path, text: str, mode: int = 0o666) -> None:
    """`text` as UTF-8 at `path`, through `write_atomic`."""
    write_atomic(path, lambda temporary: temporary.write_text(text, encoding="utf-8", newline=""), mode)


def remove_partials() -> list[Path]:
    """Remove the files and scratch folders being written now (the process is ending under them); those removed.

    The writer's thread may still be running: its writes go to an unlinked file, and its
    rename then fails, so the old file stays."""
    with _PARTIALS_LOCK:
        partials, removed = sorted(_PARTIALS), []
    for path in partials:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed
