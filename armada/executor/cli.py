"""``armada executor``: serve one cluster (registered on the main CLI app by the lead)."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from armada.cli.options import ConfigOption, settings_or_exit
from armada.executor.backends.fake import load_node_templates
from armada.executor.runner import run_executor
from armada.executor.settings import BackendName, ExecutorSettings
from armada.logs import configure_logging

_DEFAULTS = ExecutorSettings()


def settings_from_options(
    *,
    server: str,
    cluster_id: str,
    pool: str = _DEFAULTS.pool,
    backend: BackendName = _DEFAULTS.backend,
    token: str = "",
    ca_cert: Path | None = None,
    kubeconfig: Path | None = None,
    process_cpu: str = "",
    process_memory: str = "",
    process_state_dir: Path | None = None,
    fake_nodes: int = _DEFAULTS.fake.nodes,
    fake_node_cpu: str = _DEFAULTS.fake.node_cpu,
    fake_node_memory: str = _DEFAULTS.fake.node_memory,
    fake_nodes_file: Path | None = None,
    fake_speed: float = _DEFAULTS.fake.speed,
    base: ExecutorSettings = _DEFAULTS,
) -> ExecutorSettings:
    """Settings from command-line options laid over ``base`` (e.g. from the config file)."""
    kubernetes = base.kubernetes
    if kubeconfig is not None:
        kubernetes = msgspec.structs.replace(kubernetes, kubeconfig=str(kubeconfig))
    process = msgspec.structs.replace(
        base.process,
        cpu=process_cpu or base.process.cpu,
        memory=process_memory or base.process.memory,
        state_dir=str(process_state_dir) if process_state_dir else base.process.state_dir,
    )
    fake = msgspec.structs.replace(
        base.fake,
        nodes=fake_nodes,
        node_cpu=fake_node_cpu,
        node_memory=fake_node_memory,
        node_templates=load_node_templates(fake_nodes_file) if fake_nodes_file else base.fake.node_templates,
        speed=fake_speed,
    )
    return msgspec.structs.replace(
        base,
        server_url=server,
        cluster_id=cluster_id,
        pool=pool,
        backend=backend,
        token=token or base.token,
        ca_cert=str(ca_cert) if ca_cert else base.ca_cert,
        kubernetes=kubernetes,
        process=process,
        fake=fake,
    )


class Backend(StrEnum):
    """The cluster backends (``--backend``)."""

    kubernetes = "kubernetes"
    process = "process"
    fake = "fake"


def executor(
    *,
    server: Annotated[str | None, typer.Option(help="Base URL of the Armada server.")] = None,
    cluster_id: Annotated[
        str | None, typer.Option(help="Cluster id (also the executor id); unique per executor.")
    ] = None,
    config: ConfigOption = None,
    pool: Annotated[str, typer.Option(help="Pool of this cluster's nodes.")] = _DEFAULTS.pool,
    backend: Annotated[Backend, typer.Option(help="Where jobs run.")] = Backend.kubernetes,
    token: Annotated[str, typer.Option(help="Bearer token for the server.", envvar="ARMADA_TOKEN")] = "",
    ca_cert: Annotated[Path | None, typer.Option(help="CA bundle to verify the server's TLS.")] = None,
    kubeconfig: Annotated[Path | None, typer.Option(help="kubeconfig (default: in-cluster).")] = None,
    process_cpu: Annotated[str, typer.Option(help="process: CPU offered (default: host CPUs).")] = "",
    process_memory: Annotated[str, typer.Option(help="process: memory offered (default: host RAM).")] = "",
    process_state_dir: Annotated[Path | None, typer.Option(help="process: run state directory.")] = None,
    fake_nodes: Annotated[int, typer.Option(help="fake: number of identical nodes.")] = _DEFAULTS.fake.nodes,
    fake_node_cpu: Annotated[str, typer.Option(help="fake: CPU per node.")] = _DEFAULTS.fake.node_cpu,
    fake_node_memory: Annotated[
        str, typer.Option(help="fake: memory per node.")
    ] = _DEFAULTS.fake.node_memory,
    fake_nodes_file: Annotated[
        Path | None,
        typer.Option(help="fake: YAML node templates (count, allocatable, labels, taints)."),
    ] = None,
    fake_speed: Annotated[float, typer.Option(help="fake: simulated seconds per real second.")] = 1.0,
) -> None:
    """Run the executor of one cluster: lease jobs from the server and run them."""
    loaded = settings_or_exit(config, {})
    configure_logging(loaded.logging)
    settings = settings_from_options(
        base=loaded.executor,
        server=server or loaded.executor.server_url,
        cluster_id=cluster_id or loaded.executor.cluster_id,
        pool=pool,
        backend=backend.value,
        token=token,
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
    asyncio.run(run_executor(settings, handle_signals=True))
