"""The caller of a request as authentication established it."""

from __future__ import annotations

import msgspec

#: Every authenticated caller (and the anonymous one) is in this group.
EVERYONE = "everyone"
#: The user name and group of callers without credentials, when anonymous access is on.
ANONYMOUS = "anonymous"


#: In an identity's ``executors``: it may act as every executor id.
ANY_EXECUTOR = "*"


class Identity(msgspec.Struct, frozen=True):
    """A user name and the groups it belongs to (always including ``everyone``).

    ``executors`` are the executor ids (clusters) the credential may lease and report for:
    a token stolen from one cluster's executor must not be able to take another cluster's
    runs. Only static tokens and basic users name them; ``*`` is every id.
    """

    name: str
    groups: frozenset[str] = frozenset()
    executors: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, name: str, groups: list[str] | frozenset[str] = frozenset(), executors: list[str] | None = None
    ) -> Identity:
        return cls(name=name, groups=frozenset(groups) | {EVERYONE}, executors=frozenset(executors or ()))

    def may_act_as(self, executor_id: str) -> bool:
        return ANY_EXECUTOR in self.executors or executor_id in self.executors


#: Anonymous callers have no credential that could name executor ids; whether they may run
#: an executor at all is the ``execute_jobs`` permission's business (development only).
ANONYMOUS_IDENTITY = Identity.of(ANONYMOUS, [ANONYMOUS], executors=[ANY_EXECUTOR])
