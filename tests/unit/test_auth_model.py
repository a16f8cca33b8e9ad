"""Password and token hashes, the auth settings' checks, and the permissions model."""

from __future__ import annotations

import msgspec
import pytest

from armada.auth.identity import ANONYMOUS_IDENTITY, EVERYONE, Identity
from armada.auth.permissions import GlobalPermission, Permissions
from armada.auth.secrets import BadHash, check_token_hash, hash_password, hash_token, verify_password
from armada.auth.settings import AuthSettings
from armada.model.queues import PermissionSubject, Queue, QueuePermissions, QueueVerb, SubjectKind
from armada.settings import SettingsError, load_settings


def test_password_hash_round_trip_and_salting() -> None:
    first, second = hash_password("s3cret", log2_n=10), hash_password("s3cret", log2_n=10)
    assert first != second  # salted
    assert first.startswith("scrypt:10:8:1:")
    assert verify_password("s3cret", first) and verify_password("s3cret", second)
    assert not verify_password("s3cret ", first)


@pytest.mark.parametrize(
    "bad", ["s3cret", "scrypt:14:8:1:abc", "scrypt:99:8:1:YWJj:YWJj", "bcrypt:1:2:3:4:5"]
)
def test_malformed_password_hashes_are_refused(bad: str) -> None:
    with pytest.raises(BadHash):
        verify_password("x", bad)


def test_token_hash() -> None:
    assert hash_token("executor-token") == (
        "sha256:769f6be7180b8893924635ec4157ed0acc6af9a3d9e9e05a5df143fa65e62819"
    )
    check_token_hash(hash_token("anything"))
    with pytest.raises(BadHash):
        check_token_hash("executor-token")


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"basicUsers": {"alice": {"passwordHash": "alice-pass"}}}, "auth.basicUsers.alice.passwordHash"),
        ({"tokens": [{"user": "x", "tokenHash": "plain"}]}, "auth.tokens[0].tokenHash"),
        ({"basicUsers": {"anonymous": {"passwordHash": hash_password("x", log2_n=10)}}}, "reserved"),
        ({"oidc": {"issuer": "i", "audience": "a"}}, "jwksUrl"),
        ({"permissionGroupMapping": {"rule_the_world": ["admins"]}}, "rule_the_world"),
    ],
)
def test_plain_secrets_and_unknown_permissions_are_configuration_errors(
    auth: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_settings(None, env={}, overrides={"auth": auth})


def test_auth_settings_from_environment() -> None:
    settings = load_settings(
        None,
        env={
            "ARMADA_AUTH_ANONYMOUS": "false",
            "ARMADA_AUTH_PERMISSION_GROUP_MAPPING": '{"view_reports": ["ops"]}',
        },
    )
    assert settings.auth.anonymous is False
    assert settings.auth.permission_group_mapping == {GlobalPermission.VIEW_REPORTS: ["ops"]}


def test_development_default_gives_anonymous_every_permission_but_execute_jobs() -> None:
    permissions = Permissions(AuthSettings().permission_group_mapping)
    assert permissions.of(ANONYMOUS_IDENTITY) == frozenset(GlobalPermission) - {GlobalPermission.EXECUTE_JOBS}
    assert permissions.of(Identity.of("alice", ["team-a"])) == frozenset()
    assert permissions.of(Identity.of("exec", ["executors"])) == {GlobalPermission.EXECUTE_JOBS}


def test_every_identity_is_in_everyone() -> None:
    assert EVERYONE in Identity.of("alice").groups


QUEUE = Queue(
    name="q",
    user_owners=["olive"],
    group_owners=["owners"],
    permissions=[
        QueuePermissions(
            subjects=[PermissionSubject(kind=SubjectKind.USER, name="ursula")], verbs=[QueueVerb.WATCH]
        ),
        QueuePermissions(
            subjects=[PermissionSubject(kind=SubjectKind.GROUP, name="submitters")],
            verbs=[QueueVerb.SUBMIT, QueueVerb.CANCEL],
        ),
        QueuePermissions(
            subjects=[PermissionSubject(kind=SubjectKind.GROUP, name=EVERYONE)], verbs=[QueueVerb.WATCH]
        ),
    ],
)


@pytest.mark.parametrize(
    ("identity", "verbs"),
    [
        (Identity.of("olive"), set(QueueVerb)),
        (Identity.of("gus", ["owners"]), set(QueueVerb)),
        (Identity.of("ursula"), {QueueVerb.WATCH}),
        (Identity.of("sam", ["submitters"]), {QueueVerb.SUBMIT, QueueVerb.CANCEL, QueueVerb.WATCH}),
        (Identity.of("ursula", ["submitters"]), {QueueVerb.SUBMIT, QueueVerb.CANCEL, QueueVerb.WATCH}),
        (Identity.of("nobody-special"), {QueueVerb.WATCH}),  # via group everyone
        # A user named like a group is not in it, and a group named like a user grants nothing.
        (Identity.of("owners"), {QueueVerb.WATCH}),
        (Identity.of("x", ["olive"]), {QueueVerb.WATCH}),
    ],
)
def test_queue_verbs(identity: Identity, verbs: set[QueueVerb]) -> None:
    permissions = Permissions({})
    assert {verb for verb in QueueVerb if permissions.may(identity, QUEUE, verb)} == verbs


def test_global_permission_covers_every_queue() -> None:
    permissions = Permissions({GlobalPermission.CANCEL_ANY_JOBS: ["ops"]})
    ops = Identity.of("oscar", ["ops"])
    lonely = msgspec.structs.replace(QUEUE, permissions=[])
    assert permissions.may(ops, lonely, QueueVerb.CANCEL)
    assert not permissions.may(ops, lonely, QueueVerb.SUBMIT)


@pytest.mark.parametrize(
    ("anonymous", "groups"), [(True, ["anonymous"]), (False, ["anonymous"]), (True, ["admins", "everyone"])]
)
def test_anonymous_callers_can_never_execute_jobs(anonymous: bool, groups: list[str]) -> None:
    auth = {"anonymous": anonymous, "permissionGroupMapping": {"execute_jobs": groups}}
    with pytest.raises(SettingsError, match="execute_jobs: anonymous callers may never execute jobs"):
        load_settings(None, env={}, overrides={"auth": auth})
