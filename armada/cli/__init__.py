"""The ``armada`` command line (Typer): server, executor, user and operator commands.

Every command pays the CLI's start-up, so (``bench/cli_startup.py``,
``tests/e2e/test_cli_startup.py``): command modules import their heavy dependencies inside
the command, and do not use ``from __future__ import annotations`` — Typer would compile
every annotation string of every command on every run — so a type known only to the type
checker is quoted.
"""
