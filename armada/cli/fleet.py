"""Operators' commands on the fleet: cordon executors and nodes, list executors, and
preempt or cancel everything matching on a queue, an executor or a node."""

from collections.abc import Callable
from typing import Annotated

import typer

from armada.cli.connection import ContextOption, JsonOption, UrlOption, connect, print_json

settings_app = typer.Typer(
    help="Cordon and uncordon executors (upstream's executor settings).", no_args_is_help=True
)
node_app = typer.Typer(help="Cordon and uncordon nodes.", no_args_is_help=True)

ExecutorArgument = Annotated[str, typer.Argument(help="Executor (cluster) id.")]
NodeArgument = Annotated[str, typer.Argument(help="Node name.")]
QueueArgument = Annotated[str, typer.Argument(help="Queue name.")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why (shown in Lookout, reports and lists).")]
NodeExecutorOption = Annotated[
    str, typer.Option("--executor", help="The node's executor (needed when several have such a node).")
]
QueuesOption = Annotated[
    list[str] | None, typer.Option("--queue", help="Only this queue's jobs (repeatable).")
]
ClassesOption = Annotated[
    list[str] | None, typer.Option("--priority-class", help="Only jobs of this priority class (repeatable).")
]
PoolsOption = Annotated[
    list[str] | None, typer.Option("--pool", help="Only jobs running in this pool (repeatable).")
]
StatesOption = Annotated[
    list[str] | None, typer.Option("--state", help="Only jobs in this state (repeatable), e.g. QUEUED.")
]


@settings_app.command("cordon")
def cordon_executor(
    name: ExecutorArgument, reason: ReasonOption = "", url: UrlOption = None, context: ContextOption = None
) -> None:
    """Give an executor no new leases; its running jobs go on."""
    with connect(url, context) as client:
        client.cordon_executor(name, reason)
    typer.echo(f"cordoned executor {name}")


@settings_app.command("uncordon")
def uncordon_executor(name: ExecutorArgument, url: UrlOption = None, context: ContextOption = None) -> None:
    """Lease to a cordoned executor again."""
    with connect(url, context) as client:
        client.cordon_executor(name, cordoned=False)
    typer.echo(f"uncordoned executor {name}")


@node_app.command("cordon")
def cordon_node(
    name: NodeArgument,
    executor: NodeExecutorOption = "",
    reason: ReasonOption = "",
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Place nothing new on a node; its executor cordons it in the cluster."""
    with connect(url, context) as client:
        client.cordon_node(name, executor, reason)
    typer.echo(f"cordoned node {name}")


@node_app.command("uncordon")
def uncordon_node(
    name: NodeArgument,
    executor: NodeExecutorOption = "",
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Undo ``armada node cordon``."""
    with connect(url, context) as client:
        client.cordon_node(name, executor, cordoned=False)
    typer.echo(f"uncordoned node {name}")


def list_executors(as_json: JsonOption = False, url: UrlOption = None, context: ContextOption = None) -> None:
    """Executors: pool, last seen, cordon and reason, nodes and running jobs."""
    with connect(url, context) as client:
        executors = client.list_executors()
    if as_json:
        print_json(executors)
        return
    for executor in executors:
        seen = executor.last_seen.isoformat(timespec="seconds") if executor.last_seen else "never"
        cordon = f"  CORDONED: {executor.cordon_reason or '(no reason)'}" if executor.cordoned else ""
        typer.echo(
            f"{executor.name}  pool={executor.pool or '-'}  nodes={len(executor.nodes)}  "
            f"running={executor.running_jobs}  last seen {seen}{cordon}"
        )
        for node in executor.nodes:
            if node.cordoned:
                typer.echo(f"  node {node.name} cordoned: {node.cordon_reason or '(no reason)'}")


def forget_executor(name: ExecutorArgument, url: UrlOption = None, context: ContextOption = None) -> None:
    """Forget a vanished executor and its nodes: its jobs are requeued now, once."""
    with connect(url, context) as client:
        client.forget_executor(name)
    typer.echo(f"forgot executor {name}")


def _done(verb: str, ids: list[str]) -> None:
    typer.echo(f"{verb} requested for {len(ids)} job(s)")


def cancel_queue(
    name: QueueArgument,
    priority_class: ClassesOption = None,
    pool: PoolsOption = None,
    state: StatesOption = None,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Cancel a queue's unfinished jobs (or those matching the filters)."""
    with connect(url, context) as client:
        states = [s.upper() for s in state or []]
        ids = client.cancel_on_queue(name, priority_class or [], pool or [], states)
    _done("cancellation", ids)


def preempt_queue(
    name: QueueArgument,
    priority_class: ClassesOption = None,
    pool: PoolsOption = None,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Preempt a queue's running jobs of preemptible classes."""
    with connect(url, context) as client:
        ids = client.preempt_on_queue(name, priority_class or [], pool or [])
    _done("preemption", ids)


def _on_executor(
    verb: str,
    executor: str,
    node: str,
    queues: list[str] | None,
    classes: list[str] | None,
    url: str | None,
    context: str | None,
) -> None:
    with connect(url, context) as client:
        act = client.preempt_on_executor if verb == "preempt" else client.cancel_on_executor
        ids = act(executor, node=node, queues=queues or [], priority_classes=classes or [])
    _done("preemption" if verb == "preempt" else "cancellation", ids)


def _jobs(verb: str) -> str:
    return "Preempt the preemptible jobs" if verb == "preempt" else "Cancel the jobs"


def executor_command(verb: str) -> Callable[..., None]:
    """``armada cancel|preempt executor NAME``."""

    def command(
        name: ExecutorArgument,
        queue: QueuesOption = None,
        priority_class: ClassesOption = None,
        url: UrlOption = None,
        context: ContextOption = None,
    ) -> None:
        _on_executor(verb, name, "", queue, priority_class, url, context)

    command.__doc__ = (
        f"{verb.capitalize()} the {'preemptible ' if verb == 'preempt' else ''}jobs running on an executor."
    )
    return command


def node_command(verb: str) -> Callable[..., None]:
    """``armada cancel|preempt node NAME [--executor E]``."""

    def command(
        name: NodeArgument,
        executor: NodeExecutorOption = "",
        queue: QueuesOption = None,
        priority_class: ClassesOption = None,
        url: UrlOption = None,
        context: ContextOption = None,
    ) -> None:
        _on_executor(verb, executor, name, queue, priority_class, url, context)

    command.__doc__ = (
        f"{verb.capitalize()} the {'preemptible ' if verb == 'preempt' else ''}jobs running on one node."
    )
    return command
