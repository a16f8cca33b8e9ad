"""``armada testsuite run``: run upstream-format YAML test cases against a server."""

from pathlib import Path
from typing import Annotated

import typer

from armada.cli.connection import ContextOption, UrlOption, fail

app = typer.Typer(help="Run test cases in upstream Armada's YAML format.", no_args_is_help=True)


@app.command("run")
def run(
    paths: Annotated[
        list[Path], typer.Argument(help="Case files, or directories of *.yaml cases.", exists=True)
    ],
    url: UrlOption = None,
    context: ContextOption = None,
    junit: Annotated[Path | None, typer.Option(help="Also write a JUnit XML report here.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Cases run at once.")] = 8,
) -> None:
    """Run every case; one line per case, then ``N passed, N failed``; exit 1 on any failure."""
    import asyncio  # noqa: PLC0415 (start-up time: the runner loads when it runs)

    from armada.client import ConfigError, load_config  # noqa: PLC0415
    from armada.testsuite.junit import write_junit  # noqa: PLC0415
    from armada.testsuite.spec import SpecError, case_files, load_case  # noqa: PLC0415
    from armada.testsuite.suite import run_cases, summary  # noqa: PLC0415

    try:
        config = load_config(url, context)
        cases = [load_case(path) for path in case_files(paths)]
    except (ConfigError, SpecError) as exc:
        raise fail(str(exc), 2) from exc
    results = asyncio.run(
        run_cases(cases, config, concurrency=concurrency, report=lambda result: typer.echo(result.line()))
    )
    typer.echo(summary(results))
    if junit is not None:
        write_junit(results, junit)
    if not all(result.passed for result in results):
        raise typer.Exit(1)
