"""Settings: defaults, YAML file, environment, flags — and the generated reference."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from armada.cli.main import build
from armada.cli.settings_docs import settings_markdown
from armada.settings import Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_need_no_file() -> None:
    settings = load_settings(env={})
    assert settings == Settings()
    assert settings.database.url == "sqlite:///armada.db"
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8080)


def test_precedence_is_file_then_environment_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "armada.yaml"
    config.write_text(
        "server:\n  port: 9000\n  maxRequestBytes: 2048\ndatabase:\n  url: sqlite:///from-file.db\n"
    )
    env = {"ARMADA_SERVER_PORT": "9100", "ARMADA_LOGGING_LEVEL": "debug"}
    settings = load_settings(
        config, env=env, overrides={"database": {"url": "sqlite:///flag.db"}, "server": {"host": None}}
    )
    assert settings.server.port == 9100
    assert settings.server.max_request_bytes == 2048
    assert settings.logging.level == "debug"
    assert settings.database.url == "sqlite:///flag.db"
    assert settings.server.host == "127.0.0.1"  # a flag left unset changes nothing


def test_environment_names_follow_camel_case_fields() -> None:
    settings = load_settings(
        env={"ARMADA_SERVER_MAX_REQUEST_BYTES": "4096", "ARMADA_DATABASE_POOL_SIZE": "3"}
    )
    assert (settings.server.max_request_bytes, settings.database.pool_size) == (4096, 3)


@pytest.mark.parametrize(
    ("yaml_text", "fragment"),
    [
        ("server:\n  port: 70000\n", "server.port"),
        ("server:\n  prot: 1\n", "prot"),
        ("- just a list\n", "top level"),
        ("server: [\n", "cannot read"),
        ("auth:\n  lookoutSignIn: {clientId: lookout}\n", "auth.lookoutSignIn: needs auth.oidc"),
        (
            "auth:\n  oidc: {issuer: https://sso, audience: a, jwksUrl: https://sso/k}\n"
            "  lookoutSignIn: {clientId: lookout, maxSessions: 0}\n",
            "auth.lookoutSignIn.maxSessions",
        ),
    ],
)
def test_bad_configuration_names_the_key(tmp_path: Path, yaml_text: str, fragment: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    with pytest.raises(SettingsError, match=fragment.replace(".", r"\.")):
        load_settings(config, env={})


def test_bad_environment_value_is_reported() -> None:
    with pytest.raises(SettingsError, match="port"):
        load_settings(env={"ARMADA_SERVER_PORT": "eighty"})


def test_configuration_reference_is_up_to_date() -> None:
    text = settings_markdown()
    assert "`ARMADA_DATABASE_URL`" in text
    assert (ROOT / "docs" / "configuration.md").read_text() == text + "\n", (
        "run: armada config docs > docs/configuration.md"
    )


def test_an_areas_variable_takes_a_json_object_below_the_field_variables() -> None:
    env = {
        "ARMADA_SCHEDULING": '{"maximumSchedulingRate": 5, "maximumSchedulingBurst": 7}',
        "ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_BURST": "9",
    }
    settings = load_settings(env=env)
    assert settings.scheduling.maximum_scheduling_rate == 5
    assert settings.scheduling.maximum_scheduling_burst == 9
    with pytest.raises(SettingsError, match="ARMADA_SCHEDULING must be a JSON object"):
        load_settings(env={"ARMADA_SCHEDULING": "fast"})
    with pytest.raises(SettingsError, match=r"scheduling\.maximumSchedulingRate"):
        load_settings(env={"ARMADA_SCHEDULING": '{"maximumSchedulingRate": "x"}'})


def test_a_misspelt_field_variable_is_refused_as_a_yaml_typo_is() -> None:
    with pytest.raises(SettingsError, match="did you mean ARMADA_SCHEDULING_RETRY_POLICY"):
        load_settings(env={"ARMADA_SCHEDULING_RETRY_POLCY": "{}"})
    with pytest.raises(SettingsError, match="ARMADA_EXECUTOR_PROCESS_CPU: executor has no such key"):
        load_settings(env={"ARMADA_EXECUTOR_PROCESS_CPU": "4"})


def test_a_variable_naming_no_area_is_warned_about_by_the_commands() -> None:
    env = {
        "ARMADA_SERVR_PORT": "9000",  # the typo
        "ARMADA_TOKEN": "t",  # the client's
        "ARMADA_JOB_ID": "j",  # a job's
        "ARMADA_TEST_DATABASE_URL": "x",  # the test suite's
        "ARMADA_SERVER_PORT": "9001",
    }
    result = CliRunner().invoke(build(), ["config", "show"], env=env)
    assert result.exit_code == 0, result.output
    assert "warning: ARMADA_SERVR_PORT is not a setting" in result.stderr
    assert "ARMADA_TOKEN" not in result.stderr and "ARMADA_JOB_ID" not in result.stderr
    assert "ARMADA_TEST" not in result.stderr
    assert "port: 9001" in result.stdout


def test_retention_defaults_environment_and_off() -> None:
    default = load_settings(env={}).retention
    assert (default.expire_after_seconds, default.interval_seconds) == (336 * 3600, 600)
    assert default.archive_dir == ""
    env = {"ARMADA_RETENTION_EXPIRE_AFTER": "72h", "ARMADA_RETENTION_INTERVAL": "30s"}
    assert load_settings(env=env).retention.expire_after_seconds == 72 * 3600
    assert load_settings(env=env).retention.interval_seconds == 30
    for off in ("0", "off"):
        assert load_settings(env={"ARMADA_RETENTION_EXPIRE_AFTER": off}).retention.expire_after_seconds == 0
    with pytest.raises(SettingsError, match=r"retention\.expireAfter"):
        load_settings(env={"ARMADA_RETENTION_EXPIRE_AFTER": "two weeks"})
