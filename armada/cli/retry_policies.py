"""``armada retry-policy``: create, update, get, list and delete retry policies.

Policy files are YAML or JSON in upstream's format (``apiVersion``/``kind`` are accepted),
so files written for ``armadactl create retry-policy -f`` work unchanged.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from armada.cli.connection import ContextOption, JsonOption, UrlOption, connect, fail, print_items, print_json

if TYPE_CHECKING:  # loaded by the commands that need one (start-up time)
    from armada.model.retry import RetryPolicy

app = typer.Typer(
    help="Manage retry policies (attach them to queues with --retry-policies).", no_args_is_help=True
)

NameArgument = Annotated[str, typer.Argument(help="Retry policy name.")]
FileOption = Annotated[Path, typer.Option("-f", "--file", help="Policy file (YAML or JSON).")]


def _read(path: Path) -> "RetryPolicy":
    import msgspec  # noqa: PLC0415
    import yaml  # noqa: PLC0415

    from armada.model.retry import RetryPolicy  # noqa: PLC0415

    try:
        data = yaml.safe_load(path.read_text())
        return msgspec.convert(data, RetryPolicy)
    except (OSError, yaml.YAMLError, msgspec.ValidationError) as exc:
        raise fail(f"{path}: {exc}", 2) from exc


@app.command("create")
def create(file: FileOption, url: UrlOption = None, context: ContextOption = None) -> None:
    """Create a retry policy from a file."""
    policy = _read(file)
    with connect(url, context) as client:
        client.create_retry_policy(policy)
    typer.echo(f"created retry policy {policy.name}")


@app.command("update")
def update(file: FileOption, url: UrlOption = None, context: ContextOption = None) -> None:
    """Replace a retry policy with the one in a file."""
    policy = _read(file)
    with connect(url, context) as client:
        client.update_retry_policy(policy)
    typer.echo(f"updated retry policy {policy.name}")


@app.command("delete")
def delete(name: NameArgument, url: UrlOption = None, context: ContextOption = None) -> None:
    """Delete a retry policy that no queue names."""
    with connect(url, context) as client:
        client.delete_retry_policy(name)
    typer.echo(f"deleted retry policy {name}")


def _describe(policy: "RetryPolicy") -> str:
    rules = "; ".join(
        f"{rule.action} on {rule.on_category}{'/' + rule.on_subcategory if rule.on_subcategory else ''}"
        for rule in policy.rules
    )
    limits = f"retryLimit={policy.retry_limit}\tdefaultAction={policy.default_action}"
    return f"{policy.name}\t{limits}\trules={rules or '-'}"


@app.command("get")
def get(
    name: NameArgument, json: JsonOption = False, url: UrlOption = None, context: ContextOption = None
) -> None:
    """Show a retry policy."""
    with connect(url, context) as client:
        policy = client.get_retry_policy(name)
    print_json(policy) if json else typer.echo(_describe(policy))


@app.command("list")
def list_(json: JsonOption = False, url: UrlOption = None, context: ContextOption = None) -> None:
    """List every retry policy."""
    with connect(url, context) as client:
        policies = client.list_retry_policies()
    print_items(policies, _describe, json=json)
