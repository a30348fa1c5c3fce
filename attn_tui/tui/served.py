"""The app as `attn-tui serve` runs it for a visitor: a viewer that writes only into serve's folder and ends with serve.

`attn-tui serve` starts each visitor's app with ATTN_TUI_SERVED=1 and ATTN_TUI_EXPORT_DIR
set; this module is the one place the app reads them. A visitor is someone on a web page,
not the person who started serve: what they type must not name files on serve's machine.
So exports go only into serve's folder, and models are only the shipped ones (a typed
folder or cached id would be read from serve's disk). The child also must not outlive its
server: it asks Linux to kill it when serve dies, and a SIGTERM ends it even when its
event loop is stuck writing to a pipe nobody reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_tui.errors import InputError
from attn_tui.i18n import Msg

if TYPE_CHECKING:
    from attn_tui.ask.settings import Ask

SERVED_ENV = "ATTN_TUI_SERVED"
EXPORT_ENV = "ATTN_TUI_EXPORT_DIR"
PARENT_ENV = "ATTN_TUI_SERVE_PID"  # serve's process id: the parent this app must not outlive
TERM_GRACE = 1.0  # seconds a SIGTERM'd app has to end by itself before it is ended without ceremony
PR_SET_PDEATHSIG = 1


def served() -> bool:
    return os.environ.get(SERVED_ENV) == "1"


def export_folder() -> Path:
    """serve's folder for exports (the current folder outside serve)."""
    chosen = os.environ.get(EXPORT_ENV) if served() else None
    return Path(chosen) if chosen else Path.cwd()


def offered_folder() -> Path:
    """Where the export dialog offers to write: serve's folder as an empty relative path when served (a visitor
    types a file name and never learns where on serve's disk the folder is), the current folder otherwise."""
    return Path() if served() else export_folder()


def visible_path(path: Path) -> str:
    """A written path as a visitor may read it: relative to serve's folder when served, whole otherwise."""
    if not served():
        return str(path)
    try:
        return str(path.resolve().relative_to(export_folder().resolve()))
    except ValueError:
        return path.name


def inside_export_folder(path: Path) -> Path:
    """`path` (relative: to serve's folder) if it lies in serve's folder once links are followed; else refused."""
    if not served():
        return path
    if path.is_absolute() or ".." in path.parts or str(path).startswith("~"):  # it would not go where it reads
        raise InputError(Msg("this app is served: type a file name, or a path inside serve's export folder (no ~, .. "
                             "or /)"))
    folder = export_folder().resolve()
    whole = (folder / path).resolve()  # links are followed
    if whole == folder or not whole.is_relative_to(folder):
        raise InputError(Msg("this app is served: it writes only into serve's export folder; type a file name"))
    return whole


def check_ask(ask: Ask) -> None:
    """The app never runs a script (`attn-tui trace` records before the app opens and hands it the trace);
    served, a model ask names a shipped model (a folder or a cached id would be opened on serve's machine)."""
    from attn_tui.ask.models import MODEL_NAMES

    if ask.runs_code:
        raise InputError(Msg("the app shows recorded code; it does not run scripts: use `attn-tui trace FILE`"))

    model = ask.model
    if served() and model is not None and model.name not in MODEL_NAMES:
        raise InputError(Msg("this app is served: it opens only the shipped models ({names})",
                             names=", ".join(MODEL_NAMES)))


def offer_download(app: Any, path: Path) -> None:
    """Served in a browser: a file just exported also goes to the visitor's browser (serve's folder is on
    serve's machine, and the visitor may be on another). A folder of CSV files stays in serve's folder."""
    if served() and app.is_web and path.is_file():
        app.deliver_binary(path, save_filename=path.name, open_method="download")


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent ends (run in the child, before exec or at start)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def guard(app: Any) -> None:
    """Served: SIGTERM asks the app to exit and ends the process TERM_GRACE seconds later whatever it is doing.

    Installed once the driver runs, since Textual's web driver puts its own SIGTERM handler on the
    event loop, and a handler there never runs while the loop is blocked (a full pipe to serve)."""
    if not (served() and app.is_web):  # a test's headless app in served mode keeps the test runner's signals
        return
    die_with_parent()
    if str(os.getppid()) != os.environ.get(PARENT_ENV, str(os.getppid())):  # serve ended before the request
        os._exit(1)
    loop = asyncio.get_running_loop()

    def on_term(signum: int, _frame: object) -> None:
        timer = threading.Timer(TERM_GRACE, os._exit, (128 + signum,))
        timer.daemon = True
        timer.start()
        with contextlib.suppress(RuntimeError):  # the loop has already closed
            loop.call_soon_threadsafe(app.exit)

    for kind in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(kind, on_term)
