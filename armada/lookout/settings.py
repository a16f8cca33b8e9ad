"""The ``lookout`` settings area: the job drawer's command and link templates, saved views' limits."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from armada.lookout.templates import parse
from armada.model.settings_area import SettingsArea

_NAME = Meta(min_length=1, max_length=64, description="Title shown in the job drawer.")


class CommandTemplate(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """A shell command shown, with a copy button, in the job drawer (upstream's ``commandSpecs``)."""

    name: Annotated[str, _NAME]
    template: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=4096,
            description="The command, with `{{ field }}` placeholders: each value is shell-quoted.",
        ),
    ]
    description: Annotated[str, Meta(max_length=1024, description="Plain text shown above the command.")] = ""

    def __post_init__(self) -> None:
        parse(self.template, link=False)


class LinkTemplate(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """A link shown in the job drawer, e.g. to a dashboard of the job's pod."""

    name: Annotated[str, _NAME]
    template: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=4096,
            description="The URL: `http://` or `https://` and a host, then text and `{{ field }}` "
            "placeholders, each value percent-encoded.",
        ),
    ]

    def __post_init__(self) -> None:
        parse(self.template, link=True)


class LookoutSettings(SettingsArea):
    """The Lookout web UI: templates in the job drawer and the limits of saved views.

    Template fields: `jobId`, `queue`, `jobSet`, `owner`, `namespace`, `priorityClass`,
    `state`, `podName`, and, once the job has run, `runId`, `cluster`, `node` (its latest
    run's); `annotations.<key>` is an annotation's value (empty when the job has none).
    A template naming another field is refused at start-up."""

    commands: Annotated[
        list[CommandTemplate],
        Meta(description="Commands in the job drawer: `[{name, template, description}]`."),
    ] = []
    links: Annotated[
        list[LinkTemplate],
        Meta(description="Links in the job drawer: `[{name, template}]`."),
    ] = []
    saved_views_per_user: Annotated[
        int, Meta(ge=1, le=10_000, description="Saved views one user may keep; more are refused (400).")
    ] = 100
    saved_view_bytes: Annotated[
        int,
        Meta(
            ge=1024,
            le=1_048_576,
            description="Largest state of one saved view, as JSON; larger ones are refused (413).",
        ),
    ] = 16_384
