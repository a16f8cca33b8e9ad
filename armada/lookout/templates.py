"""Command and link templates of the job drawer: ``{{ field }}`` replaced by the job's values.

Job fields are whatever a submitter chose (annotations, job set names, owners), so a value
is never read as template syntax, markup or code: in a link it is percent-encoded whole
(it cannot add a path, a query or a scheme), in a command it is shell-quoted (it stays one
word, ``$(...)`` and quotes included). Links must start with a literal ``http://`` or
``https://`` and host, so no value decides where a link goes. The browser shows the
results as text and ``href`` only. A template naming a field this module does not know is
refused when the settings load, so a typo is found at start-up rather than in a drawer.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from typing import NamedTuple
from urllib.parse import quote

from armada.model.ids import pod_name

#: The fields a template may name, besides ``annotations.<key>``.
FIELDS = (
    "jobId",
    "queue",
    "jobSet",
    "owner",
    "namespace",
    "priorityClass",
    "state",
    "podName",
    "runId",
    "cluster",
    "node",
)
ANNOTATIONS = "annotations."
#: Fields a job has only once it has run: a template naming one is left out before that.
RUN_FIELDS = frozenset({"runId", "cluster", "node"})
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")
_ANNOTATION_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
#: A link's fixed start: the scheme and at least one character of the host.
_LINK_START = re.compile(r"https?://[^/?#{}\s]", re.IGNORECASE)


class Template(NamedTuple):
    """Literal text around each placeholder: ``len(texts) == len(names) + 1``."""

    texts: tuple[str, ...]
    names: tuple[str, ...]


def parse(template: str, *, link: bool) -> Template:
    """The template's parts; ``ValueError`` says what is wrong with it."""
    texts, names, at = [], [], 0
    for found in _PLACEHOLDER.finditer(template):
        texts.append(template[at : found.start()])
        names.append(_known(found[1]))
        at = found.end()
    texts.append(template[at:])
    for text in texts:
        if "{{" in text or "}}" in text:
            raise ValueError(
                f"template {template!r} has a '{{{{' or '}}}}' that is not a placeholder {{{{ field }}}}"
            )
    if link and not _LINK_START.match(texts[0]):
        raise ValueError(
            f"link template {template!r} must start with http:// or https:// and a host, not a field"
        )
    return Template(tuple(texts), tuple(names))


def _known(name: str) -> str:
    if name in FIELDS:
        return name
    if name.startswith(ANNOTATIONS) and _ANNOTATION_KEY.fullmatch(name[len(ANNOTATIONS) :]):
        return name
    raise ValueError(f"unknown placeholder {{{{ {name} }}}}; known: {', '.join(FIELDS)}, annotations.<key>")


class JobValues(NamedTuple):
    """What a template can say about one job (empty strings where the job has no value)."""

    fields: Mapping[str, str]
    annotations: Mapping[str, str]

    @classmethod
    def of(cls, fields: Mapping[str, str], annotations: Mapping[str, str]) -> JobValues:
        """Values from the job's own fields, adding those derived from them (``podName``)."""
        return cls({**fields, "podName": pod_name(fields.get("jobId", ""))}, annotations)


def _value(values: JobValues, name: str) -> str:
    if name.startswith(ANNOTATIONS):
        return values.annotations.get(name[len(ANNOTATIONS) :], "")
    return values.fields.get(name, "")


def render(template: Template, values: JobValues, escape: Callable[[str], str]) -> str | None:
    """The template filled in with escaped values; None while a run field it names is empty."""
    if any(name in RUN_FIELDS and not values.fields.get(name) for name in template.names):
        return None
    out = [template.texts[0]]
    for name, text in zip(template.names, template.texts[1:], strict=True):
        out += [escape(_value(values, name)), text]
    return "".join(out)


def url_value(value: str) -> str:
    """A value as one percent-encoded piece of a URL (``/``, ``?``, ``#``, ``:`` included)."""
    return quote(value, safe="")


def shell_value(value: str) -> str:
    """A value as one POSIX shell word, whatever it holds."""
    return shlex.quote(value)
