"""The user cache folder: files attn-tui can always make again (a joined GGUF file, a converted model copy).

platformdirs' user cache folder; ATTN_TUI_CACHE_DIR overrides it (the tests point it at a
temporary folder, as ATTN_TUI_STATE_DIR does for the session).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    chosen = os.environ.get("ATTN_TUI_CACHE_DIR")
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_cache_dir("attn-tui", appauthor=False))
