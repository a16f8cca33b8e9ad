"""When the process backend refuses to start (issue 34): a server off loopback without
``allowRemoteSubmitters``, a ``runAsUser`` that cannot be used, or one that could read the
files the server keeps private."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from armada.executor.backends.process_isolation import process_refusals, readable_by, resolve_run_as
from armada.executor.settings import ProcessSettings

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="runAsUser needs root")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]"])
def test_loopback_needs_no_acknowledgement(host: str) -> None:
    assert process_refusals(ProcessSettings(), "t", host, []) == []


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "armada.example.com", ""])
def test_off_loopback_needs_the_acknowledgement(host: str) -> None:
    [refusal] = process_refusals(ProcessSettings(), "t", host, [])
    assert "executor.process.allowRemoteSubmitters" in refusal and "not on loopback" in refusal
    assert process_refusals(ProcessSettings(allow_remote_submitters=True), "t", host, []) == []


@pytest.mark.parametrize(
    ("user", "says"),
    [("no-such-user-armada", "no user 'no-such-user-armada'"), ("root", "names root"), ("0", "names root")],
)
def test_an_unusable_run_as_user_is_refused(user: str, says: str) -> None:
    [refusal] = process_refusals(ProcessSettings(run_as_user=user), "t", "127.0.0.1", [])
    assert refusal.startswith("executor.process.runAsUser") and says in refusal


@pytest.fixture
def passable() -> Iterator[Path]:
    """A directory anyone may pass through (pytest's own are 0700)."""
    with tempfile.TemporaryDirectory() as name:
        Path(name).chmod(0o711)
        yield Path(name)


@as_root
def test_private_files_the_run_as_user_could_read_are_refused(passable: Path) -> None:
    settings, nobody = ProcessSettings(run_as_user="nobody"), resolve_run_as("nobody")
    assert nobody is not None
    public, private, hidden = passable / "public.yaml", passable / "private.yaml", passable / "hidden"
    for path in (public, private):
        path.write_text("auth: {}\n")
    public.chmod(0o644)
    private.chmod(0o600)
    hidden.mkdir(mode=0o700)
    (hidden / "in.yaml").write_text("auth: {}\n")
    (hidden / "in.yaml").chmod(0o644)
    assert [readable_by(p, nobody) for p in (public, private, hidden / "in.yaml")] == [True, False, False]
    paths = [public, private, hidden / "in.yaml", passable / "absent.db"]
    [refusal] = process_refusals(settings, "t", "127.0.0.1", paths)
    assert refusal.startswith(f"{public} is readable by executor.process.runAsUser 'nobody'")
    assert f"chmod 600 {public}" in refusal


@as_root
def test_a_state_directory_of_another_user_is_refused(passable: Path) -> None:
    """``/tmp/armada-dev-<port>`` is a name anyone may take first."""
    settings = ProcessSettings(state_dir=str(passable / "state"))
    assert process_refusals(settings, "t", "127.0.0.1", []) == []
    (passable / "state").mkdir()
    os.chown(passable / "state", 65534, 65534)
    [refusal] = process_refusals(settings, "t", "127.0.0.1", [])
    assert refusal == (
        f"{passable / 'state'} belongs to another user: choose another executor.process.stateDir"
    )
    (passable / "mine").mkdir()
    (passable / "link").symlink_to(passable / "mine")
    os.lchown(passable / "link", 65534, 65534)
    assert process_refusals(ProcessSettings(state_dir=str(passable / "link")), "t", "127.0.0.1", []) != []
