"""How user commands reach the server, and how they report failures.

The server comes from ``--url``, else ``ARMADA_URL``, else the contexts file
(``~/.config/armada/config.yaml``; see :mod:`armada.client.config`). A refused request
prints the server's problem detail on one line and exits 1.

httpx, msgspec and the client load when a command connects, so that ``--help`` and the
server-side commands start without them.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from armada.client import ArmadaClient

T = TypeVar("T")

UrlOption = Annotated[
    str | None,
    typer.Option("--url", envvar="ARMADA_URL", help="Server URL (default: the contexts file, else :8080)."),
]
ContextOption = Annotated[
    str | None, typer.Option("--context", help="Context of ~/.config/armada/config.yaml to use.")
]
#: Options given before the command (``armada --ca-cert ca.pem queue list``), set by the
#: main callback on every invocation.
CONNECTION_OPTIONS: ContextVar[dict[str, str | None]] = ContextVar("armada_connection_options")
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` to stderr; return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@contextmanager
def connect(url: str | None, context: str | None) -> "Iterator[ArmadaClient]":
    """A client for the chosen server; API and connection errors become one-line exits."""
    from armada.client import ArmadaApiError, ArmadaClient, ConfigError, load_config  # noqa: PLC0415
    from armada.client.errors import ArmadaTransportError  # noqa: PLC0415 (start-up time)

    try:
        config = load_config(url, context, overrides=CONNECTION_OPTIONS.get({}))
    except ConfigError as exc:
        raise fail(str(exc), 2) from exc
    try:
        with ArmadaClient(config) as client:
            yield client
    except ArmadaApiError as exc:
        raise fail(str(exc)) from exc
    except ArmadaTransportError as exc:
        raise fail(f"cannot reach {config.armada_url}: {exc}") from exc


def print_json(value: Any) -> None:
    import msgspec  # noqa: PLC0415

    typer.echo(msgspec.json.format(msgspec.json.encode(value), indent=2))


def print_items(items: Sequence[T], describe: Callable[[T], str], *, json: bool) -> None:
    """A listing: one JSON document (``--json``), else one described line per item."""
    if json:
        print_json(items)
        return
    for item in items:
        typer.echo(describe(item))
