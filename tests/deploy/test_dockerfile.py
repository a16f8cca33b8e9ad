"""The Dockerfile, checked statically (no container engine here): stages, the wheel it
installs, non-root user, entrypoint and default command, health check, and that everything
it copies exists."""

from __future__ import annotations

import json
import re
import tomllib

from tests.processes import ROOT

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def stages() -> list[list[tuple[str, str]]]:
    split: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            split.append([])
        if split:
            split[-1].append((keyword, rest))
    return split


def test_multi_stage_on_a_slim_base() -> None:
    built = stages()
    assert len(built) >= 2
    for stage in built:
        base = stage[0][1].split()[0]
        assert re.fullmatch(r"python:3\.1[1-9]-slim", base), base
    names = [stage[0][1].split()[-1] for stage in built if " AS " in stage[0][1].upper()]
    assert len(names) == len(built), "name every stage"
    final = dict(built[-1])
    assert "from=build" in final["RUN"], "the runtime stage installs what the build stage made"


def test_runtime_installs_the_wheel_built_as_ci_builds_it() -> None:
    build, final = stages()[0], stages()[-1]
    # The sdist and the wheel from it, as .ci/run builds the wheel that tests/deploy/test_wheel.py runs.
    assert any(keyword == "RUN" and "python -m build " in rest for keyword, rest in build)
    distribution = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    installs = [rest for keyword, rest in final if keyword == "RUN" and "pip install" in rest]
    wheel_only = rf"pip install --no-index --find-links /wheels {re.escape(distribution)}(\s|$)"
    assert len(installs) == 1 and re.search(wheel_only, installs[0]), installs
    copied = [keyword for keyword, _ in final if keyword in ("COPY", "ADD")]
    assert not copied, "nothing of the source tree in the runtime image"


def test_runtime_runs_as_non_root_with_armada_as_entrypoint() -> None:
    final = stages()[-1]
    users = [rest for keyword, rest in final if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    entrypoint = [json.loads(rest) for keyword, rest in final if keyword == "ENTRYPOINT"]
    command = [json.loads(rest) for keyword, rest in final if keyword == "CMD"]
    assert entrypoint == [["armada"]] and command == [["serve"]]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "armada" in scripts
    healthchecks = [rest for keyword, rest in final if keyword == "HEALTHCHECK"]
    assert len(healthchecks) == 1 and "/health" in healthchecks[0]
    assert ("EXPOSE", "8080") in final
    env = " ".join(rest for keyword, rest in final if keyword == "ENV")
    assert "ARMADA_SERVER_HOST=0.0.0.0" in env


def test_everything_copied_exists() -> None:
    copies = [rest.split() for keyword, rest in instructions() if keyword == "COPY"]
    assert copies
    for parts in copies:
        if any(part.startswith("--from") for part in parts):
            continue
        for source in parts[:-1]:
            assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"


def test_dockerignore_keeps_what_the_build_copies() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for parts in (rest.split() for keyword, rest in instructions() if keyword == "COPY"):
        for source in parts[:-1]:
            assert source.rstrip("/") not in ignored, source
