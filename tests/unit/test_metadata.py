"""The shared checker of names and Kubernetes metadata (``armada.model.metadata``), and how
submission validation applies it (issue 34, findings 6 and 9)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from armada.model import metadata
from armada.model.errors import InvalidRequest
from armada.model.jobs import JOB_SET_ANNOTATION, OWNER_ANNOTATION
from armada.model.metadata import (
    MAX_ANNOTATIONS_BYTES,
    check_annotations,
    check_dns_label,
    check_labels,
    check_printable,
    qualified_name_problem,
)
from armada.model.wire.jobs import JobSubmitRequest
from armada.services.validation import SubmissionRules, validate_submission
from armada.settings import Settings

ALNUM = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
INNER = st.sampled_from("abcXYZ019-_.")
DNS_ALNUM = st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789")


@st.composite
def name_parts(draw: st.DrawFn, alnum: st.SearchStrategy[str] = ALNUM, inner: Any = INNER) -> str:
    """1 to 63 characters, alphanumeric at both ends."""
    middle = draw(st.lists(inner, max_size=61))
    ends = draw(st.lists(alnum, min_size=1, max_size=2))
    return ends[0] + "".join(middle) + ends[-1] if len(ends) == 2 else ends[0]


@st.composite
def prefixes(draw: st.DrawFn) -> str:
    labels = draw(st.lists(name_parts(DNS_ALNUM, st.sampled_from("abc09-")), min_size=1, max_size=3))
    return ".".join(labels)


@given(st.one_of(name_parts(), st.builds(lambda p, n: f"{p}/{n}", prefixes(), name_parts())))
def test_qualified_names_pass(key: str) -> None:
    assert qualified_name_problem(key) is None
    check_labels({key: ""}, "labels")
    check_annotations({key: "any text"}, "annotations")


@given(name_parts(), st.characters(blacklist_categories=("Cs",)).filter(lambda c: c not in "-_./"))
def test_a_character_outside_the_name_set_fails(name: str, char: str) -> None:
    if char.isascii() and char.isalnum():
        return
    assert qualified_name_problem(name[:31] + char + name[:31]) is not None


@pytest.mark.parametrize(
    "key",
    [
        "",
        "k" * 64,
        "-a",
        "a-",
        "a b",
        "/a",
        "a/",
        "a/b/c",
        "Example.com/a",
        "exa_mple.com/a",
        "-x.com/a",
        ("p" * 63 + ".") * 3 + "p" * 62 + "/a",  # a 254-character prefix
        "k" * 5000,
    ],
)
def test_bad_qualified_names(key: str) -> None:
    problem = qualified_name_problem(key)
    assert problem is not None
    assert len(problem) < 300  # a long key is quoted by its start only


def test_boundaries() -> None:
    assert qualified_name_problem("k" * 63) is None
    assert qualified_name_problem(("p" * 63 + ".") * 3 + "p" * 61 + "/a") is None  # 253 characters
    check_labels({"k": "v" * 63, "e": ""}, "labels")
    with pytest.raises(InvalidRequest) as long_value:
        check_labels({"k": "v" * 64}, "labels")
    assert long_value.value.field == "labels.k"
    # Annotation keys are compared lower-cased, as Kubernetes does; label keys are not.
    check_annotations({"Example.COM/Key": "v"}, "annotations")
    with pytest.raises(InvalidRequest):
        check_labels({"Example.COM/Key": "v"}, "labels")


def test_annotations_count_utf8_bytes_of_keys_and_values_with_what_is_added() -> None:
    room = MAX_ANNOTATIONS_BYTES - len("k")
    check_annotations({"k": "x" * room}, "annotations")
    check_annotations({"k": "é" * (room // 2)}, "annotations")
    for over in ({"k": "x" * (room + 1)}, {"k": "é" * (room // 2 + 1)}):
        with pytest.raises(InvalidRequest) as refused:
            check_annotations(over, "annotations")
        assert refused.value.field == "annotations"
    check_annotations({"k": "x" * (room - 10)}, "annotations", added=10)
    with pytest.raises(InvalidRequest):
        check_annotations({"k": "x" * (room - 10)}, "annotations", added=11)


@pytest.mark.parametrize(
    "char",
    [
        "\u202e",
        "\u202a",
        "\u2066",
        "\u2069",
        "\u0085",
        "\u009b",
        "\u200b",
        "\u200d",
        "\ufeff",
        "\u2028",
        "\x1b",
    ],
)
def test_invisible_and_control_characters_are_refused(char: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_printable(f"job{char}set", "jobSetId")
    assert (refused.value.field, f"U+{ord(char):04X}" in refused.value.detail) == ("jobSetId", True)


@given(
    st.text(
        st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs")) | st.just(" ")
    )
)
def test_visible_text_is_printable(text: str) -> None:
    check_printable(text, "f")


@given(st.text(), st.characters(whitelist_categories=("Cc", "Cf", "Zl", "Zp")))
def test_format_and_control_characters_anywhere_are_refused(text: str, char: str) -> None:
    with pytest.raises(InvalidRequest):
        check_printable(text + char + text, "f")


@pytest.mark.parametrize("name", ["Default", "a_b", "a.b", "-a", "a-", "n" * 64, ""])
def test_namespaces_are_dns_labels(name: str) -> None:
    with pytest.raises(InvalidRequest):
        check_dns_label(name, "namespace")


@pytest.mark.parametrize("name", ["default", "team-a1", "n" * 63, "0"])
def test_dns_labels_pass(name: str) -> None:
    check_dns_label(name, "namespace")


def _request(job_set: str = "s", **item: Any) -> JobSubmitRequest:
    body = {"namespace": "default", "podSpec": _pod(), **item}
    return msgspec.convert({"queue": "q", "jobSetId": job_set, "jobRequestItems": [body]}, JobSubmitRequest)


def _pod() -> dict[str, Any]:
    resources = {"cpu": "1", "memory": "1Gi"}
    return {"containers": [{"name": "c", "resources": {"requests": resources, "limits": resources}}]}


RULES = SubmissionRules.from_settings(Settings())


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (_request(namespace="Default"), "jobRequestItems[0].namespace"),
        (_request(namespace="a_b"), "jobRequestItems[0].namespace"),
        (_request(labels={"k" * 64: "v"}), "jobRequestItems[0].labels"),
        (_request(requiredNodeLabels={"gpu": "a b"}), "jobRequestItems[0].requiredNodeLabels.gpu"),
        (_request(clientId="c\u2067"), "jobRequestItems[0].clientId"),
        (_request("s\u202e"), "jobSetId"),
        (_request(externalJobUri="u" * MAX_ANNOTATIONS_BYTES), "jobRequestItems[0].annotations"),
    ],
    ids=["namespace case", "namespace underscore", "label key", "node label", "client id", "job set", "uri"],
)
def test_validation_names_the_field(request_: JobSubmitRequest, field: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        validate_submission(request_, RULES)
    assert refused.value.field == field


def test_the_pods_own_annotations_count_with_the_owner() -> None:
    added = len(JOB_SET_ANNOTATION) + len("s") + len(OWNER_ANNOTATION)
    room = MAX_ANNOTATIONS_BYTES - added - len("k")
    validate_submission(_request(annotations={"k": "x" * room}), RULES)
    with pytest.raises(InvalidRequest):
        validate_submission(_request(annotations={"k": "x" * room}), RULES, owner="alice")
    validate_submission(_request(annotations={"k": "x" * (room - 5)}), RULES, owner="alice")


def test_long_keys_are_refused_without_being_remembered() -> None:
    before = metadata._short_key_problem.cache_info().currsize
    for size in (318, 5000, 1_000_000):
        assert "longer than 317" in (qualified_name_problem("k" * size) or "")
    assert metadata._short_key_problem.cache_info().currsize == before
