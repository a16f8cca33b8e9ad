"""The pieces of a fast CLI and a quiet dev mode that need no processes: which commands a
run builds, the dev defaults of the settings, the job printout's lines, plain-HTTP clients."""

from __future__ import annotations

import ssl

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from armada.cli.follow import notable
from armada.cli.main import COMMANDS, build, named_commands
from armada.client import ClientConfig
from armada.model import events as ev
from armada.services.job_printout import print_job_event
from armada.settings import load_settings
from tests.processes import ROOT


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["queue", "list"], {"queue"}),
        (["--token", "t", "submit", "jobs.yaml"], {"submit"}),
        (["--token", "queue", "submit", "jobs.yaml"], {"queue", "submit"}),  # a value named like one
        (["queue", "--help"], {"queue"}),
        (["--help"], None),
        (["--help", "queue"], None),
        ([], None),
        (["version"], None),
    ],
)
def test_a_run_builds_the_commands_it_names(argv: list[str], named: set[str] | None) -> None:
    assert named_commands(argv, {}) == named


def test_shell_completion_builds_every_command() -> None:
    assert named_commands(["queue"], {"_ARMADA_COMPLETE": "bash_complete"}) is None


def test_the_whole_cli_lists_every_command() -> None:
    import typer.main  # noqa: PLC0415

    names = set(typer.main.get_group(build()).commands)
    assert names == {*COMMANDS, "version"}


def test_dev_mode_turns_the_rate_limits_off_unless_configured() -> None:
    production = load_settings(env={}).scheduling
    assert (production.maximum_scheduling_rate, production.maximum_per_queue_scheduling_rate) == (100, 50)
    dev = load_settings(env={}, overrides={"server": {"dev": True}}).scheduling
    assert dev.maximum_per_queue_scheduling_rate >= 1_000_000
    assert dev.maximum_per_queue_scheduling_burst >= 1_000_000
    chosen = load_settings(
        env={"ARMADA_SERVER_DEV": "true", "ARMADA_SCHEDULING_MAXIMUM_PER_QUEUE_SCHEDULING_RATE": "5"}
    ).scheduling
    assert chosen.maximum_per_queue_scheduling_rate == 5
    assert chosen.maximum_scheduling_rate >= 1_000_000


def test_the_job_log_has_one_line_per_state_change_with_ids_and_reason() -> None:
    ids = {"queue": "q", "job_set_id": "s", "job_id": "j1"}
    with capture_logs() as logged:
        print_job_event(ev.JobQueued(**ids))
        print_job_event(ev.JobCancelling(**ids, reason="not this one"))  # not a state of its own
        print_job_event(ev.JobQueued(**ids, attempts=1))
        print_job_event(ev.JobCancelled(**ids, reason="bye"))
    line = {"job_id": "j1", "queue": "q", "job_set": "s", "log_level": "info"}
    assert logged == [
        {"event": "job queued", **line},
        {"event": "job queued", **line, "attempt": 2},
        {"event": "job cancelled", **line, "reason": "bye"},
    ]


def test_a_plain_http_client_loads_no_ca_bundle_and_would_trust_nobody() -> None:
    context = ClientConfig(armada_url="http://127.0.0.1:8080").httpx_options()["verify"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and not context.get_ca_certs()
    assert "verify" not in ClientConfig(armada_url="https://armada.example").httpx_options()


def test_watch_prints_where_a_jobs_ports_are_reached() -> None:
    info = ev.JobIngressInfo(job_id="j", ingress_addresses={9090: "web.example.com", 8080: "127.0.0.1:8080"})
    assert notable(info) == "job j exposes 8080 → 127.0.0.1:8080, 9090 → web.example.com"
    assert notable(ev.JobIngressInfo(job_id="j")) is None


def test_the_web_example_passes_the_dry_run() -> None:
    result = CliRunner().invoke(build(), ["submit", "--dry-run", str(ROOT / "examples" / "web-job.yaml")])
    assert result.exit_code == 0, result.output
    assert "1 job(s) for example/web look valid" in result.output
