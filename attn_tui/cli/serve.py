"""`attn-tui serve`: the app in a web browser through textual-serve (the `web` extra).

Each browser that opens the page gets its own app, run as `python -m attn_tui` in a
child process (serve_visitor), behind a gate (serve_gate) that lets in only serve's own
address, pages of its own origin and holders of the run's token, which the printed URL
carries. The server listens on 127.0.0.1 unless told otherwise; on any other address it
says, before it starts, that whoever can reach the address and holds the token can use it.
"""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.io.files import quoted
from attn_tui.present.text import printable

INSTALL_HINT = "pip install 'attn-tui[web]'"


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


def dotted_quad(host: str) -> str:
    """An IPv4 address in a legacy spelling (`127.1`, `0x7f.1`, `2130706433`) as a browser writes it in the
    Host header (`127.0.0.1`): the gate lets in only the names serve prints, and the printed URL must open."""
    import re
    import socket

    if not re.fullmatch(r"[0-9a-fA-FxX.]+", host):  # inet_aton takes `127.0.0.1 junk` too
        return host
    try:
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return host


def _lower(reason: str | Msg) -> str:
    text = str(reason)
    return text[:1].lower() + text[1:]


def serve(host: str, port: int, public_url: str | None = None, debug: bool = False, *, max_sessions: int = 4,
          idle_minutes: float = 30.0, export_dir: str = "attn-tui-exports") -> int:
    try:
        from attn_tui.cli.serve_server import GuardedServer
    except ImportError:
        raise ConfigError(Msg("attn-tui serve needs textual-serve: {hint}", hint=INSTALL_HINT)) from None
    if not host.strip():
        raise ConfigError(Msg("--host is empty: give an address such as 127.0.0.1"))
    check_address(host, port)  # before any line is printed: a bad address is the one line, not the third
    host = dotted_quad(host)
    if public_url is not None:
        check_public_url(public_url)
    exports = export_folder(export_dir)
    host, public_url = printable(host), None if public_url is None else printable(public_url)
    if not is_loopback(host):
        print(str(Msg("warning: serving on {host}: anyone who can reach this address on port {port} and holds the "
                      "token can use the app; 127.0.0.1 keeps it to this machine", host=host, port=port)),
              file=sys.stderr)
    from attn_tui.cli.serve_gate import TOKEN, gate_for, new_secret

    secret = new_secret()
    url = f"{(public_url or f'http://{_bracket(host)}:{port}').rstrip('/')}/?{TOKEN}={secret}"
    print(str(Msg("serving attn-tui on {url} (ctrl+c stops)", url=url)), file=sys.stderr)
    print(str(Msg("exports go to {folder}; at most {n} visitors; a visitor idle {minutes} minutes is ended",
                  folder=printable(str(exports)), n=max_sessions, minutes=f"{idle_minutes:g}")),
          file=sys.stderr, flush=True)
    server = GuardedServer(host=host, port=port, gate=gate_for(host, port, public_url, secret), export_dir=exports,
                           max_sessions=max_sessions, idle_timeout=idle_minutes * 60, public_url=public_url)
    server.serve(debug=debug)
    return 0


def check_public_url(url: str) -> None:
    """An http(s) address with a host: the page's scripts, styles and websocket are fetched from it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (read for its check: a port that is not a number raises)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(Msg("--public-url {url} is not an address such as https://example.org/attn",
                              url=quoted(printable(url))))


def export_folder(name: str) -> Path:
    """serve's one folder for visitors' exports, made now (its parent must exist), as an absolute path."""
    from attn_tui.io.files import check_text, writable_folder

    check_text(name, "--export-dir")
    if not name.strip():
        raise ConfigError(Msg("--export-dir is empty: name a folder"))
    folder = writable_folder(Path(name).expanduser(), Msg("the exports"))
    folder.mkdir(exist_ok=True)
    return folder.resolve()


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
