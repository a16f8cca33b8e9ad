"""What user-supplied names and Kubernetes object metadata may hold.

Labels and annotations end up on pods and ingresses, where Kubernetes refuses anything
outside its own rules (``k8s.io/apimachinery`` ``IsQualifiedName``, ``IsValidLabelValue``,
the 256 KiB annotation total): a job that breaks them is refused at submit, not stored to
fail forever. Names a person reads (job set ids, client ids, owners) must be printable:
bidi overrides, zero-width and control characters let one tenant make another's ids look
like something else in a terminal or the UI. A failure raises :class:`InvalidRequest`
naming the field; details quote at most a short prefix of the offending text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from armada.model.errors import InvalidRequest

#: Kubernetes' ``TotalAnnotationSizeLimitB``: the UTF-8 bytes of every key and value.
MAX_ANNOTATIONS_BYTES = 256 * 1024
#: Name part of a qualified name, label values, DNS labels.
MAX_NAME_PART = 63
MAX_DNS_SUBDOMAIN = 253
MAX_QUALIFIED_NAME = MAX_DNS_SUBDOMAIN + 1 + MAX_NAME_PART
_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(?:\.{_LABEL})*"
_NAME_PART = re.compile(_NAME)
_DNS_LABEL = re.compile(_LABEL)
_DNS_SUBDOMAIN = re.compile(_SUBDOMAIN)
#: A qualified name of at most 63 characters in all: its parts are within their limits too.
_SHORT_QUALIFIED = re.compile(rf"(?:{_SUBDOMAIN}/)?{_NAME}")
#: UTF-8 takes at most this many bytes per character.
_MAX_UTF8 = 4
_QUOTED = 40


def shown(text: str) -> str:
    """``text`` quoted for an error detail: escaped, and cut short if long."""
    return repr(text[:_QUOTED]) + (f" ({len(text)} characters)" if len(text) > _QUOTED else "")


def check_printable(text: str, field: str) -> None:
    """Only printable characters: no control (C0, C1), format (bidi, zero-width) or line and
    paragraph separators, no spaces but U+0020 (Python's :meth:`str.isprintable`)."""
    if text.isprintable():
        return
    char = next(c for c in text if not c.isprintable())
    raise InvalidRequest(f"must be printable text; U+{ord(char):04X} is not", field=field)


def check_printable_names(names: Iterable[str], field: str) -> None:
    for index, name in enumerate(names):
        check_printable(name, f"{field}[{index}]")


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes qualified name (``[prefix/]name``), or ``None``."""
    if len(key) > MAX_QUALIFIED_NAME:
        return (
            f"{shown(key)} is longer than {MAX_QUALIFIED_NAME} characters (a prefix of at most "
            f"{MAX_DNS_SUBDOMAIN}, '/' and a name of at most {MAX_NAME_PART})"
        )
    return _short_key_problem(key)


@functools.lru_cache(maxsize=1024)
def _short_key_problem(key: str) -> str | None:
    """Cached (keys are short here): submissions check every key of every job, and jobs
    mostly share their keys."""
    if len(key) <= MAX_NAME_PART and _SHORT_QUALIFIED.fullmatch(key):
        return None  # the usual case, in one match
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix or "/" in prefix:
            return f"{shown(key)} has more than one '/' or an empty prefix"
        if len(prefix) > MAX_DNS_SUBDOMAIN or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return (
                f"the prefix of {shown(key)} must be a DNS subdomain of at most {MAX_DNS_SUBDOMAIN} "
                "characters: lower-case letters, digits, '-' and '.'"
            )
    if len(name) > MAX_NAME_PART or not _NAME_PART.fullmatch(name):
        return (
            f"the name of {shown(key)} must be 1 to {MAX_NAME_PART} letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def check_labels(labels: Mapping[str, str], field: str) -> None:
    """Kubernetes label rules: qualified-name keys, values of at most 63 name characters."""
    for key, value in labels.items():
        problem = qualified_name_problem(key)
        if problem is not None:
            raise InvalidRequest(f"label key {problem}", field=field)
        if value and (len(value) > MAX_NAME_PART or not _NAME_PART.fullmatch(value)):
            raise InvalidRequest(
                f"label value {shown(value)} must be empty or 1 to {MAX_NAME_PART} letters, digits, "
                "'-', '_' or '.', starting and ending with a letter or digit",
                field=f"{field}.{key}",
            )


def annotations_bytes(annotations: Mapping[str, str]) -> int:
    """What Kubernetes counts against :data:`MAX_ANNOTATIONS_BYTES`."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())


def check_annotations(annotations: Mapping[str, str], field: str, *, added: int = 0) -> None:
    """Kubernetes annotation rules: qualified-name keys (any case in the prefix), and keys and
    values together, with ``added`` bytes the object also gets, within 256 KiB."""
    chars = sum(map(len, annotations)) + sum(map(len, annotations.values()))
    size = added + (
        annotations_bytes(annotations) if chars * _MAX_UTF8 + added > MAX_ANNOTATIONS_BYTES else chars
    )
    if size > MAX_ANNOTATIONS_BYTES:
        extra = f" (with {added} bytes Armada adds)" if added else ""
        raise InvalidRequest(
            f"annotations total {size} bytes{extra}; Kubernetes' limit is {MAX_ANNOTATIONS_BYTES}",
            field=field,
        )
    for key in annotations:
        problem = qualified_name_problem(key.lower())
        if problem is not None:
            raise InvalidRequest(f"annotation key {problem}", field=field)


def check_dns_label(name: str, field: str) -> None:
    """A Kubernetes namespace name: 1 to 63 lower-case letters, digits or '-'."""
    if len(name) > MAX_NAME_PART or not _DNS_LABEL.fullmatch(name):
        raise InvalidRequest(
            f"{shown(name)} must be 1 to {MAX_NAME_PART} lower-case letters, digits or '-', "
            "starting and ending with a letter or digit",
            field=field,
        )
