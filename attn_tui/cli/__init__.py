"""The `attn-tui` command: the app by default, `stages` headless, `samples` to list inputs.

Nothing heavy is imported at module level: `attn-tui` must paint its first screen before
torch has loaded, and a bad input is refused before torch is imported at all. `main` is
the one boundary where every failure, ours or a dependency's, becomes one line and exit 2.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Sequence

from attn_tui.cli.parser import fail, parse
from attn_tui.errors import AttnError, describe

QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false",
             "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
             "TQDM_DISABLE": "1"}  # read when tqdm is imported: the GGUF de-quantising bar would garble the app


ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # a closed terminal sends SIGHUP


def _end_cleanly(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP unwind the stack like an interrupt (exit 128 + the signal), so every `finally` runs:
    a file being written is removed, the one it was to replace stays."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    for number in ENDING_SIGNALS if threading.current_thread() is threading.main_thread() else ():
        if signal.getsignal(number) is signal.SIG_DFL:  # not where a caller (a test, an embedding app) set its own
            signal.signal(number, _end_cleanly)
    args = parse(sys.argv[1:] if argv is None else argv)
    debug = bool(args.debug) or os.environ.get("ATTN_TUI_DEBUG", "").lower() in ("1", "true", "yes")
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    from attn_tui.cli.commands import COMMANDS

    with warnings.catch_warnings():
        if not debug:  # a library's warning would be a second line on stderr
            warnings.simplefilter("ignore")
        try:
            return COMMANDS[args.command](args)
        except AttnError as exc:
            if debug:
                traceback.print_exc()
            fail(str(exc))
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, and keep Python from complaining at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except Exception as exc:
            if debug:
                traceback.print_exc()
            fail(describe(exc))
    return 0
