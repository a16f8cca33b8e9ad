"""Command and link templates of the job drawer: hostile job fields stay data.

A value is one shell word in a command (checked by letting a real POSIX shell split the
command), one percent-encoded piece in a link (checked by parsing the URL), and a template
naming an unknown field is refused when the settings load, naming the setting.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from armada.lookout.templates import JobValues, parse, render, shell_value, url_value
from armada.settings import SettingsError, load_settings

HOSTILE = [
    "'; rm -rf / #",
    '"$(touch pwned)"',
    "$(touch pwned)",
    "`touch pwned`",
    "a b\tc\nd",
    "javascript:alert(1)",
    "../../admin?x=1#frag",
    "@evil.example/",
    "{{ jobId }}",
    "",
    "ü ☃ \\ %2F",
]


def values(value: str, **fields: str) -> JobValues:
    base = {"jobId": "01JOB", "queue": value, "namespace": "ns", "owner": value, "cluster": "c1"}
    return JobValues.of(base | fields, {"team/tag": value})


@pytest.mark.parametrize("value", HOSTILE)
def test_a_command_gets_each_value_as_one_shell_word(value: str, tmp_path: Path) -> None:
    template = parse("printf '%s\\n' {{ queue }} {{annotations.team/tag}} {{ podName }}", link=False)
    command = render(template, values(value), shell_value)
    assert command is not None
    assert shlex.split(command)[2:] == [value, value, "armada-01job-0"]
    # A real shell runs it: it prints the values back and runs nothing they hold.
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout == f"{value}\n{value}\narmada-01job-0\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", HOSTILE)
def test_a_link_keeps_its_scheme_host_and_path_whatever_the_values(value: str) -> None:
    template = parse("https://grafana.example/d/jobs?var-queue={{ queue }}&var-owner={{owner}}#x", link=True)
    href = render(template, values(value), url_value)
    assert href is not None
    parts = urlsplit(href)
    where = (parts.scheme, parts.netloc, parts.path, parts.fragment)
    assert where == ("https", "grafana.example", "/d/jobs", "x")
    pairs = [pair.split("=", 1) for pair in parts.query.split("&")]
    assert [(key, unquote(encoded)) for key, encoded in pairs] == [("var-queue", value), ("var-owner", value)]


def test_run_fields_leave_a_template_out_until_the_job_has_run() -> None:
    template = parse("kubectl --context {{ cluster }} logs {{ podName }}", link=False)
    assert render(template, values("q", cluster=""), shell_value) is None
    assert render(template, values("q"), shell_value) == "kubectl --context c1 logs armada-01job-0"
    missing = parse("https://x.example/{{ annotations.none }}", link=True)
    assert render(missing, values("q"), url_value) == "https://x.example/"


@pytest.mark.parametrize(
    ("template", "link", "says"),
    [
        ("kubectl logs {{ podname }}", False, "unknown placeholder {{ podname }}"),
        ("echo {{ job.spec }}", False, "unknown placeholder"),
        ("echo {{ annotations. }}", False, "unknown placeholder"),
        ("echo {{ jobId", False, "not a placeholder"),
        ("echo }} {{queue}}", False, "not a placeholder"),
        ("javascript:alert({{ jobId }})", True, "must start with http:// or https://"),
        ("{{ queue }}/x", True, "must start with http:// or https://"),
        ("https://{{ cluster }}.example/", True, "must start with http:// or https://"),
        ("ftp://files.example/{{ jobId }}", True, "must start with http:// or https://"),
    ],
)
def test_bad_templates_are_refused(template: str, link: bool, says: str) -> None:
    with pytest.raises(ValueError, match=f".*{says.replace('{', '[{]').replace('}', '[}]')}"):
        parse(template, link=link)


def test_settings_with_an_unknown_placeholder_fail_to_load_naming_the_setting(tmp_path: Path) -> None:
    config = tmp_path / "armada.yaml"
    config.write_text(
        "lookout:\n  links:\n    - name: ok\n      template: https://ok.example/{{ jobId }}\n"
        "    - name: Grafana\n      template: https://g.example/?job={{ jobid }}\n"
    )
    with pytest.raises(SettingsError) as refused:
        load_settings(config, env={})
    message = str(refused.value)
    assert "\n" not in message
    assert "$.lookout.links[1]" in message and "{{ jobid }}" in message
