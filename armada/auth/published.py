"""Credentials that are public because this repository publishes them.

``examples/`` shows working configurations, so its password and token hashes (and the
passwords and tokens written next to them) are known to everyone who has read it. A server
reachable from the network must never accept them: :mod:`armada.auth.bind_address` refuses to
start one that is configured with any of these. A test keeps this list equal to what
``examples/`` contains, so an example added later cannot slip past it.
"""

from __future__ import annotations

#: Every password hash and token hash that appears in ``examples/`` (alice-pass, bob-pass,
#: admin-pass, executor-token).
PUBLISHED_HASHES = frozenset(
    {
        "scrypt:14:8:1:i6ZFDjj5zdib6OeOb7mHVQ:RWf9VRL28cb6BmwmIUWatQKeoJSW8CR97nTbHgdkbvo",
        "scrypt:14:8:1:6QhVbgYseVG3DEi09CxKmg:IjlkbY+y484BxW1Oa/sLU/dztqvJ8t0S+x96ztPqvLM",
        "scrypt:14:8:1:i6c4bgXoLVvlT3eeSTy8UQ:yEeFOcuy77QDeXd9hXbTXQeyunkjvOSTMYTupQdjWaE",
        "sha256:769f6be7180b8893924635ec4157ed0acc6af9a3d9e9e05a5df143fa65e62819",
    }
)
