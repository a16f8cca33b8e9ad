"""``armada executor``: serve one cluster.

The lease loop, the backends, logging and metrics are imported when the command runs, not
when the CLI starts: ``armada --help`` and the user commands must not pay for them.
"""

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from armada.cli.fleet import forget_executor, list_executors
from armada.cli.options import ConfigOption, settings_or_exit
from armada.cli.secret_files import secret_from
from armada.cli.startup import DebugOption, StartupError, check_ca_file, listen_error, startup_errors

if TYPE_CHECKING:
    from armada.executor.settings import BackendName, ExecutorSettings


def _given(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def settings_from_options(
    base: "ExecutorSettings | None" = None,
    *,
    server: str | None = None,
    cluster_id: str | None = None,
    pool: str | None = None,
    backend: "BackendName | None" = None,
    token: str | None = None,
    ca_cert: Path | None = None,
    kubeconfig: Path | None = None,
    process_cpu: str | None = None,
    process_memory: str | None = None,
    process_state_dir: Path | None = None,
    fake_nodes: int | None = None,
    fake_node_cpu: str | None = None,
    fake_node_memory: str | None = None,
    fake_nodes_file: Path | None = None,
    fake_speed: float | None = None,
) -> "ExecutorSettings":
    """Command-line options laid over ``base`` (the loaded settings, else the defaults); an
    option not given keeps it."""
    import msgspec  # noqa: PLC0415 (start-up time)

    from armada.executor.backends.fake import load_node_templates  # noqa: PLC0415
    from armada.executor.settings import ExecutorSettings  # noqa: PLC0415

    base = base or ExecutorSettings()
    replace = msgspec.structs.replace
    kubernetes = replace(base.kubernetes, **_given(kubeconfig=kubeconfig and str(kubeconfig)))
    process = replace(
        base.process,
        **_given(
            cpu=process_cpu, memory=process_memory, state_dir=process_state_dir and str(process_state_dir)
        ),
    )
    templates = load_node_templates(fake_nodes_file) if fake_nodes_file else None
    fake = replace(
        base.fake,
        **_given(
            nodes=fake_nodes,
            node_cpu=fake_node_cpu,
            node_memory=fake_node_memory,
            node_templates=templates,
            speed=fake_speed,
        ),
    )
    return replace(
        base,
        kubernetes=kubernetes,
        process=process,
        fake=fake,
        **_given(
            server_url=server,
            cluster_id=cluster_id,
            pool=pool,
            backend=backend,
            token=token,
            ca_cert=ca_cert and str(ca_cert),
        ),
    )


class Backend(StrEnum):
    """The cluster backends (``--backend``)."""

    kubernetes = "kubernetes"
    process = "process"
    fake = "fake"


def executor(
    ctx: typer.Context,
    *,
    server: Annotated[str | None, typer.Option(help="Base URL of the Armada server.")] = None,
    cluster_id: Annotated[
        str | None, typer.Option(help="Cluster id (also the executor id); unique per executor.")
    ] = None,
    backend: Annotated[Backend | None, typer.Option(help="Where jobs run.")] = None,
    config: ConfigOption = None,
    pool: Annotated[str | None, typer.Option(help="Pool of this cluster's nodes.")] = None,
    token: Annotated[
        str | None, typer.Option(help="Bearer token for the server.", envvar="ARMADA_TOKEN")
    ] = None,
    token_file: Annotated[
        str | None, typer.Option(help="Read the bearer token from this file ('-': stdin).")
    ] = None,
    ca_cert: Annotated[Path | None, typer.Option(help="CA bundle to verify the server's TLS.")] = None,
    kubeconfig: Annotated[Path | None, typer.Option(help="kubeconfig (default: in-cluster).")] = None,
    process_cpu: Annotated[
        str | None, typer.Option(help="process: CPU offered (default: host CPUs).")
    ] = None,
    process_memory: Annotated[
        str | None, typer.Option(help="process: memory offered (default: host RAM).")
    ] = None,
    process_state_dir: Annotated[Path | None, typer.Option(help="process: run state directory.")] = None,
    fake_nodes: Annotated[int | None, typer.Option(help="fake: number of identical nodes [5000].")] = None,
    fake_node_cpu: Annotated[str | None, typer.Option(help="fake: CPU per node [64].")] = None,
    fake_node_memory: Annotated[str | None, typer.Option(help="fake: memory per node [512Gi].")] = None,
    fake_nodes_file: Annotated[
        Path | None,
        typer.Option(help="fake: YAML node templates (count, allocatable, labels, taints)."),
    ] = None,
    fake_speed: Annotated[float | None, typer.Option(help="fake: simulated seconds per real second.")] = None,
    metrics_port: Annotated[
        int, typer.Option(help="Serve Prometheus metrics on this port at /metrics (0: off).")
    ] = 0,
    clusters: Annotated[
        int,
        typer.Option(
            min=1,
            help="Serve this many clusters from one process, ids <cluster-id>-0 ... (benchmarks of a "
            "fake fleet).",
        ),
    ] = 1,
    debug: DebugOption = False,
) -> None:
    """Run the executor of one cluster: lease jobs from the server and run them.

    Options not given come from ``--config`` and ``ARMADA_EXECUTOR_*`` variables.
    ``armada executor list`` lists the server's executors instead.
    """
    if ctx.invoked_subcommand is not None:
        return

    from prometheus_client import CollectorRegistry, start_http_server  # noqa: PLC0415

    from armada.client.errors import AccessRefused  # noqa: PLC0415
    from armada.executor.agent import REFUSED_HINT  # noqa: PLC0415
    from armada.executor.backend import BackendSetupError  # noqa: PLC0415
    from armada.executor.metrics import ExecutorMetrics  # noqa: PLC0415
    from armada.executor.runner import fleet_settings, run_executors  # noqa: PLC0415
    from armada.logging_setup import configure_logging  # noqa: PLC0415
    from armada.runtime import run_service, tune_for_service  # noqa: PLC0415

    loaded = settings_or_exit(config, {})
    configure_logging(loaded.logging)
    settings = settings_from_options(
        loaded.executor,
        server=server,
        cluster_id=cluster_id,
        pool=pool,
        backend=backend.value if backend is not None else None,
        token=secret_from(token, token_file, "token"),
        ca_cert=ca_cert,
        kubeconfig=kubeconfig,
        process_cpu=process_cpu,
        process_memory=process_memory,
        process_state_dir=process_state_dir,
        fake_nodes=fake_nodes,
        fake_node_cpu=fake_node_cpu,
        fake_node_memory=fake_node_memory,
        fake_nodes_file=fake_nodes_file,
        fake_speed=fake_speed,
    )
    fleet = fleet_settings(settings, clusters)
    for each in fleet:
        _exit_on_bad_cluster_id(each.cluster_id)
    spawns = settings.backend == "process"
    if spawns and (refusals := _process_refusals(ctx, settings, config, token_file)):
        for refusal in refusals:
            typer.echo(f"error: {refusal}", err=True)
        raise typer.Exit(2)
    tune_for_service()
    metrics_server = None
    metrics = None
    with startup_errors(debug):
        if settings.ca_cert:
            check_ca_file(settings.ca_cert)
        if metrics_port:
            registry = CollectorRegistry()
            metrics = ExecutorMetrics(registry)
            try:
                metrics_server, _ = start_http_server(metrics_port, registry=registry)
            except OSError as exc:
                hint = ": pick another --metrics-port"
                raise listen_error("metrics", f"port {metrics_port}", exc, hint) from exc
        try:
            run_service(run_executors(fleet, handle_signals=True, metrics=metrics), spawns_processes=spawns)
        except AccessRefused as exc:
            why = f"the server refuses executor {settings.cluster_id!r}: {exc}; {REFUSED_HINT}"
            raise StartupError(why) from exc
        except BackendSetupError as exc:
            raise StartupError(str(exc)) from exc
        finally:
            if metrics_server is not None:
                metrics_server.shutdown()


def _exit_on_bad_cluster_id(cluster_id: str) -> None:
    from armada.executor.settings import check_cluster_id  # noqa: PLC0415
    from armada.model.errors import InvalidRequest  # noqa: PLC0415

    try:
        check_cluster_id(cluster_id)
    except InvalidRequest as exc:
        typer.echo(f"error: {exc.field}: {exc}", err=True)
        raise typer.Exit(2) from None


def _process_refusals(
    ctx: typer.Context, settings: "ExecutorSettings", config: Path | None, token_file: str | None
) -> list[str]:
    """Why this process backend must not start (see
    :mod:`armada.executor.backends.process_isolation`); the settings and token files, and a
    ``--token`` on the command line, are what its jobs must not read."""
    from armada.executor.backends.process_isolation import process_refusals, url_host  # noqa: PLC0415

    private = [Path(name) for name in (config, token_file) if name is not None and name != "-"]
    source = ctx.get_parameter_source("token")  # typer's own copy of click's ParameterSource
    given = source is not None and source.name == "COMMANDLINE"
    exposed = {"--token": "ARMADA_TOKEN or --token-file"} if given else {}
    host = url_host(settings.server_url)
    return process_refusals(settings.process, settings.cluster_id, host, private, exposed)


#: ``armada executor [OPTIONS]`` runs an executor; ``list`` and ``forget`` ask the server.
app = typer.Typer(help="Run the executor of one cluster, or list executors.", no_args_is_help=False)
app.callback(invoke_without_command=True)(executor)
app.command("list")(list_executors)
app.command("forget")(forget_executor)
