"""Which errors mean "the database is unreachable" (a 503), not a bug (a 500)."""

from __future__ import annotations

import psycopg
from sqlalchemy import exc as sa_exc

from armada.eventstore.outages import is_database_unavailable


def test_driver_and_wrapped_connection_errors_are_outages() -> None:
    assert is_database_unavailable(psycopg.errors.AdminShutdown("terminating connection"))
    assert is_database_unavailable(
        sa_exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("refused"))
    )
    assert is_database_unavailable(ConnectionRefusedError())


def test_an_outage_hidden_in_the_context_of_a_later_error_counts() -> None:
    try:
        try:
            raise psycopg.errors.AdminShutdown("terminating connection")
        except psycopg.Error:
            raise RuntimeError("rollback failed") from None
    except RuntimeError as exc:
        assert not is_database_unavailable(exc)  # "from None" hides the cause on purpose
    try:
        try:
            raise psycopg.errors.AdminShutdown("terminating connection")
        except psycopg.Error as inner:
            raise RuntimeError("rollback failed") from inner
    except RuntimeError as exc:
        assert is_database_unavailable(exc)


def test_programming_errors_are_not_outages() -> None:
    assert not is_database_unavailable(ValueError("bad"))
    assert not is_database_unavailable(
        sa_exc.ProgrammingError("SELECT", {}, psycopg.ProgrammingError("syntax"))
    )
    assert not is_database_unavailable(sa_exc.IntegrityError("INSERT", {}, psycopg.IntegrityError("dup")))
