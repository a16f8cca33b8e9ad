"""Client connection settings: credentials and the CA from flags, variables or a context."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trustme

from armada.client.config import ClientConfig, load_config

CONTEXTS = """
currentContext: prod
contexts:
  prod:
    armadaUrl: https://armada.example.com
    username: alice
    password: from-file
    caCert: /etc/armada/ca.pem
"""


@pytest.fixture
def contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in ("ARMADA_URL", "ARMADA_TOKEN", "ARMADA_USERNAME", "ARMADA_PASSWORD", "ARMADA_CA_CERT"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "config.yaml"
    path.write_text(CONTEXTS)
    return path


def test_context_file_gives_credentials_and_ca(contexts: Path) -> None:
    config = load_config(path=contexts)
    assert (config.username, config.password, config.ca_cert) == ("alice", "from-file", "/etc/armada/ca.pem")


def test_variables_override_the_file_and_flags_override_variables(
    contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARMADA_PASSWORD", "from-env")
    monkeypatch.setenv("ARMADA_CA_CERT", "/env/ca.pem")
    config = load_config(path=contexts, overrides={"ca_cert": "/flag/ca.pem", "token": None})
    assert (config.password, config.ca_cert, config.token) == ("from-env", "/flag/ca.pem", "")


def test_httpx_options_authenticate_and_verify(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(bundle))
    token = ClientConfig(token="t0k", ca_cert=str(bundle)).httpx_options()
    assert token["headers"] == {"Authorization": "Bearer t0k"}
    assert token["verify"].get_ca_certs()  # our CA, not the system's
    basic = ClientConfig(username="bob", password="pw").httpx_options()
    assert isinstance(basic["auth"], httpx.BasicAuth)
