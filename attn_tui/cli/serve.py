"""`attn-tui serve`: the app in a web browser through textual-serve (the `web` extra).

Each browser that opens the page gets its own app, run as `python -m attn_tui` in a
child process. The server listens on 127.0.0.1 unless told otherwise; on any other
address it says, before it starts, that whoever can reach the address can use the app.
"""

from __future__ import annotations

import ipaddress
import shlex
import sys

from attn_tui.core.errors import ConfigError
from attn_tui.core.files import quoted
from attn_tui.i18n import Msg
from attn_tui.present.text import printable

INSTALL_HINT = "pip install 'attn-tui[web]'"


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def app_command() -> str:
    """The command each visitor's app runs as (this very Python, so the same install)."""
    return f"{shlex.quote(sys.executable)} -m attn_tui"


def check_address(host: str, port: int) -> None:
    """Resolve `host` and bind `port` on it once, as the server will (address reuse included), then let go."""
    import socket

    where = quoted(host)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else Msg("not a host name or address")
        raise ConfigError(Msg("cannot serve on {host}: {reason}", host=where, reason=_lower(reason))) from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(Msg("cannot serve on {host} port {port}: {reason}", host=where, port=port,
                                  reason=_lower(exc.strerror or str(exc)))) from None


def _lower(reason: str | Msg) -> str:
    text = str(reason)
    return text[:1].lower() + text[1:]


def serve(host: str, port: int, public_url: str | None = None, debug: bool = False) -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        raise ConfigError(Msg("attn-tui serve needs textual-serve: {hint}", hint=INSTALL_HINT)) from None
    if not host.strip():
        raise ConfigError(Msg("--host is empty: give an address such as 127.0.0.1"))
    check_address(host, port)  # before any line is printed: a bad address is the one line, not the third
    host, public_url = printable(host), None if public_url is None else printable(public_url)
    if not is_loopback(host):
        print(str(Msg("warning: serving on {host}: anyone who can reach this address on port {port} can use the app "
                      "(and the Python it runs); 127.0.0.1 keeps it to this machine", host=host, port=port)),
              file=sys.stderr)
    url = public_url or f"http://{host}:{port}"
    print(str(Msg("serving attn-tui on {url} (ctrl+c stops)", url=url)), file=sys.stderr, flush=True)
    server = Server(app_command(), host=host, port=port, title="attn-tui", public_url=public_url)
    server.serve(debug=debug)
    return 0
