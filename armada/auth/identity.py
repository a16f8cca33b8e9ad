"""The caller of a request as authentication established it."""

from __future__ import annotations

import msgspec

#: Every authenticated caller (and the anonymous one) is in this group.
EVERYONE = "everyone"
#: The user name and group of callers without credentials, when anonymous access is on.
ANONYMOUS = "anonymous"


class Identity(msgspec.Struct, frozen=True):
    """A user name and the groups it belongs to (always including ``everyone``)."""

    name: str
    groups: frozenset[str] = frozenset()

    @classmethod
    def of(cls, name: str, groups: list[str] | frozenset[str] = frozenset()) -> Identity:
        return cls(name=name, groups=frozenset(groups) | {EVERYONE})


ANONYMOUS_IDENTITY = Identity.of(ANONYMOUS, [ANONYMOUS])
