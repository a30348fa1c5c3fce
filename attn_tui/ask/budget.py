"""One memory budget, checked before any tensor exists: what a request will allocate, against a limit.

Torch-free, so the CLI can refuse a request that would exhaust the machine before it
spends seconds importing torch, and so the app can say why in its first frame. The
limit is a fraction of the memory this process may really use (what the system has
available, capped by cgroup and rlimit ceilings) unless the user sets one.
"""

from __future__ import annotations

import math
import os
import re
import resource
from dataclasses import dataclass, field
from pathlib import Path

from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, Msg

DEFAULT_FRACTION = 0.4  # of the memory available when the request is made
FALLBACK_LIMIT = 2 * 1024**3  # when nothing about the machine can be read
JSON_BYTES_PER_NUMBER = 24  # "-0.12345678901234567", plus separators
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgtp]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


class BudgetError(ConfigError):
    """A request that would allocate more than the memory limit; says both figures."""


def format_bytes(n: float) -> str:
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def parse_size(text: str, what: str = "--max-memory") -> int:
    """'512M', '2G', '1.5GB', '4096' (bytes) → bytes; an error a person can read otherwise."""
    match = _SIZE.match(text)
    if match is None or len(match.group(1)) > 20:
        raise ConfigError(Msg("{what} expects a size such as 512M or 2G, not {text}", what=what, text=repr(text[:30])))
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not 1024**2 <= value <= 2**60:
        raise ConfigError(Msg("{what} must be between 1M and 1024P", what=what))
    return int(value)


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """Bytes left under a cgroup v2 memory limit (a container), or None when there is none."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


def _rlimit_room() -> int | None:
    """Address space left under RLIMIT_AS / RLIMIT_DATA (e.g. `ulimit -v`), or None when unlimited."""
    rooms = []
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        soft, _ = resource.getrlimit(getattr(resource, name))
        if soft != resource.RLIM_INFINITY:
            rooms.append(soft - _vm_size())
    return max(0, min(rooms)) if rooms else None


def _vm_size() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def default_limit() -> int:
    """A fraction of the memory this process can really use now."""
    available = [room for room in (_meminfo_available(), _cgroup_room(), _rlimit_room()) if room is not None]
    if not available:
        return FALLBACK_LIMIT
    return int(min(available) * DEFAULT_FRACTION)


def memory_limit(override: int | float | str | None = None) -> int:
    """`--max-memory` when given (or ATTN_TUI_MAX_MEMORY), else the default fraction.

    The override may come from the Python API too: a size text ('2G') or a number of bytes, checked alike.
    """
    if isinstance(override, str):
        return parse_size(override, "max_memory")
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, (int, float)) or not math.isfinite(override):
            raise ConfigError(Msg("{what} expects a size such as 512M or 2G, not {text}", what="max_memory",
                                  text=repr(str(override)[:30])))
        if not 1024**2 <= override <= 2**60:
            raise ConfigError(Msg("{what} must be between 1M and 1024P", what="max_memory"))
        return int(override)
    env = os.environ.get("ATTN_TUI_MAX_MEMORY")
    return parse_size(env, "ATTN_TUI_MAX_MEMORY") if env else default_limit()


@dataclass
class Estimate:
    """Bytes a request will allocate, by part, so a refusal can name the largest."""

    parts: dict[str, int] = field(default_factory=dict)

    def add(self, part: str, numbers: int, itemsize: int = 4) -> None:
        self.parts[part] = self.parts.get(part, 0) + numbers * itemsize

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def largest(self) -> tuple[str, int]:
        return max(self.parts.items(), key=lambda item: item[1]) if self.parts else (N_("nothing"), 0)

    def check(self, limit: int, what: str | Msg) -> None:
        """Raise BudgetError when the total is over `limit`, naming the figure, the part and the limit."""
        if self.total > limit:
            part, size = self.largest()
            raise BudgetError(Msg("{what} would need about {total} of memory (the largest part, {part}, {size}); the "
                                  "limit is {limit}: shorten the input, lower the sizes, or raise --max-memory",
                                  what=what, total=format_bytes(self.total), part=Msg(part), size=format_bytes(size),
                                  limit=format_bytes(limit)))


def json_numbers(estimate: Estimate, numbers: int) -> None:
    """The JSON text of `numbers` printed values, as the output will be written."""
    estimate.add(N_("JSON text"), numbers, JSON_BYTES_PER_NUMBER)
