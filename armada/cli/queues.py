"""``armada queue``: create, update, delete, get, list, cordon and uncordon queues."""

from typing import TYPE_CHECKING, Annotated

import typer

from armada.cli.connection import ContextOption, JsonOption, UrlOption, connect, fail, print_items, print_json

if TYPE_CHECKING:  # loaded by the commands that build one (start-up time)
    from armada.model.queues import Queue

app = typer.Typer(help="Manage queues (create one before submitting to it).", no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(help="Queue name.")]
FactorOption = Annotated[
    float | None,
    typer.Option("--priority-factor", help="Weight of the queue's fair share: 2 gets twice the share of 1."),
]
OwnersOption = Annotated[
    list[str] | None, typer.Option("--owner", help="User owning the queue (repeatable).")
]
GroupsOption = Annotated[
    list[str] | None, typer.Option("--group-owner", help="Group owning the queue (repeatable).")
]
LabelsOption = Annotated[list[str] | None, typer.Option("--label", help="KEY=VALUE label (repeatable).")]
RetryPoliciesOption = Annotated[
    str | None,
    typer.Option(
        "--retry-policies", help="Retry policies by name, comma-separated, first applies ('' for none)."
    ),
]


def _labels(pairs: list[str] | None) -> dict[str, str] | None:
    if pairs is None:
        return None
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(f"--label must be KEY=VALUE, got {pair!r}", 2)
        labels[key] = value
    return labels


def _changes(
    factor: float | None,
    owners: list[str] | None,
    groups: list[str] | None,
    labels: list[str] | None,
    retry_policies: str | None = None,
) -> dict[str, object]:
    changes = {
        "priority_factor": factor,
        "user_owners": owners,
        "group_owners": groups,
        "labels": _labels(labels),
        "retry_policies": None
        if retry_policies is None
        else [name.strip() for name in retry_policies.split(",") if name.strip()],
    }
    return {key: value for key, value in changes.items() if value is not None}


@app.command("create")
def create(
    name: NameArgument,
    *,
    priority_factor: FactorOption = None,
    owner: OwnersOption = None,
    group_owner: GroupsOption = None,
    label: LabelsOption = None,
    retry_policies: RetryPoliciesOption = None,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Create a queue."""
    import msgspec  # noqa: PLC0415

    from armada.model.queues import Queue  # noqa: PLC0415

    changes = _changes(priority_factor, owner, group_owner, label, retry_policies)
    queue = msgspec.structs.replace(Queue(name=name), **changes)
    with connect(url, context) as client:
        client.create_queue(queue)
    typer.echo(f"created queue {name}")


@app.command("update")
def update(
    name: NameArgument,
    *,
    priority_factor: FactorOption = None,
    owner: OwnersOption = None,
    group_owner: GroupsOption = None,
    label: LabelsOption = None,
    retry_policies: RetryPoliciesOption = None,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Change the given settings of a queue; the others stay as they are."""
    import msgspec  # noqa: PLC0415

    with connect(url, context) as client:
        queue = client.get_queue(name)
        changes = _changes(priority_factor, owner, group_owner, label, retry_policies)
        client.update_queue(msgspec.structs.replace(queue, **changes))
    typer.echo(f"updated queue {name}")


@app.command("delete")
def delete(name: NameArgument, url: UrlOption = None, context: ContextOption = None) -> None:
    """Delete a queue that has no unfinished jobs."""
    with connect(url, context) as client:
        client.delete_queue(name)
    typer.echo(f"deleted queue {name}")


def _describe(queue: "Queue") -> str:
    flags = " (cordoned)" if queue.cordoned else ""
    owners = ",".join(queue.user_owners + [f"group:{g}" for g in queue.group_owners]) or "-"
    return f"{queue.name}\tpriorityFactor={queue.priority_factor:g}\towners={owners}{flags}"


@app.command("get")
def get(
    name: NameArgument, json: JsonOption = False, url: UrlOption = None, context: ContextOption = None
) -> None:
    """Show a queue."""
    with connect(url, context) as client:
        queue = client.get_queue(name)
    print_json(queue) if json else typer.echo(_describe(queue))


@app.command("list")
def list_(json: JsonOption = False, url: UrlOption = None, context: ContextOption = None) -> None:
    """List every queue."""
    with connect(url, context) as client:
        queues = client.list_queues()
    print_items(queues, _describe, json=json)


@app.command("cordon")
def cordon(name: NameArgument, url: UrlOption = None, context: ContextOption = None) -> None:
    """Stop a queue accepting and scheduling jobs."""
    with connect(url, context) as client:
        client.cordon_queue(name, True)
    typer.echo(f"cordoned queue {name}")


@app.command("uncordon")
def uncordon(name: NameArgument, url: UrlOption = None, context: ContextOption = None) -> None:
    """Let a cordoned queue accept and schedule jobs again."""
    with connect(url, context) as client:
        client.cordon_queue(name, False)
    typer.echo(f"uncordoned queue {name}")
