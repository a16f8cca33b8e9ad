"""Start-up failures in one sentence: ``armada serve`` and ``armada executor`` say what went
wrong (a port in use, a database out of reach, a setting that cannot work) and exit 2, with
no traceback unless ``--debug``."""

import errno
import socket
import ssl
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

#: The exit code of a service that could not start (also that of bad settings).
STARTUP_FAILED = 2

DebugOption = Annotated[
    bool, typer.Option("--debug", help="Show the traceback when start-up fails, not one line.")
]


class StartupError(Exception):
    """Why a service cannot start, as one sentence for its operator."""


@contextmanager
def startup_errors(debug: bool) -> Iterator[None]:
    """Turn a :class:`StartupError` raised inside into ``error: <sentence>`` and exit 2."""
    try:
        yield
    except StartupError as exc:
        if debug:
            traceback.print_exception(exc)
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(STARTUP_FAILED) from None


def check_port_free(host: str, port: int, what: str, hint: str = "") -> None:
    """Raise :class:`StartupError` if ``what`` could not listen on ``host:port`` (another
    process listens there, or the address is not this machine's), checked before serving so
    that it is said in one line, not in a traceback from deep inside the server."""
    if not port:
        return
    address = f"{host}:{port}"
    try:
        family, kind, proto, _, bound = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
            probe.bind(bound)
    except OSError as exc:
        raise listen_error(what, address, exc, hint) from exc


def listen_error(what: str, address: str, exc: OSError, hint: str = "") -> StartupError:
    """``what`` cannot listen on ``address``, as :class:`StartupError`."""
    why = "in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
    return StartupError(f"cannot listen for {what} on {address} ({why}){hint}")


def check_tls_files(cert: str, key: str) -> None:
    """Raise :class:`StartupError` if the certificate and key cannot be loaded."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key or None)
    except (OSError, ssl.SSLError) as exc:
        why = exc.strerror or str(exc)
        raise StartupError(f"cannot load the TLS certificate {cert} and key {key or cert}: {why}") from exc


def check_ca_file(path: str) -> None:
    """Raise :class:`StartupError` if the CA bundle cannot be loaded."""
    try:
        ssl.create_default_context(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise StartupError(f"cannot load the CA bundle {path}: {exc.strerror or exc}") from exc
