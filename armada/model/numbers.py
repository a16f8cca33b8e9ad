"""Bounded number types: every number any client sends is finite and in range.

Request bodies are decoded leniently (Litestar converts with msgspec's ``strict=False``, so
a number may arrive as a string), which turns ``"NaN"``, ``"Infinity"`` and ``"1e999"``
into non-finite floats, and Python integers have no upper bound. A non-finite float is
stored as JSON ``null`` and then fails to decode for every later reader; an integer past
64 bits overflows the database. So every numeric field of every wire type uses one of the
types below, never a bare ``float`` or ``int`` (``tests/unit/test_wire_numbers.py`` walks
the wire types to keep it so). Bounds reject NaN too: it fails every comparison.

The limits are wide enough for any real use and narrow enough that sums of many values
stay finite and inside ``int64``.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

#: Largest job priority: upstream keeps priorities as unsigned 32-bit integers.
MAX_PRIORITY = 2**32 - 1
#: Queue weights (``priorityFactor``) from one millionth to one million: the ratio of two
#: weights, and any share computed from them, stays far inside float64's range.
MIN_WEIGHT = 1e-6
MAX_WEIGHT = 1e6
#: Counts, sizes and indices: a signed 32-bit integer (``LIMIT``/``OFFSET`` safe everywhere).
MAX_COUNT = 2**31 - 1
#: TCP and UDP port numbers (a container's ``containerPort``, a job's exposed ports).
MIN_PORT = 1
MAX_PORT = 65535
#: Process exit codes as the kernel and Kubernetes report them (signed 32-bit).
MIN_EXIT_CODE = -(2**31)
MAX_EXIT_CODE = 2**31 - 1

#: A job priority: finite, ``0 <= p <= 2**32 - 1`` (lower runs first within a queue).
Priority = Annotated[
    float,
    Meta(ge=0, le=MAX_PRIORITY, description="A finite number from 0 to 4294967295."),
]
#: A queue's weight: finite, from ``1e-6`` to ``1e6``.
Weight = Annotated[
    float,
    Meta(ge=MIN_WEIGHT, le=MAX_WEIGHT, description="A finite number from 0.000001 to 1000000."),
]
#: A fraction of a resource: finite, ``0 <= f <= 1``.
Fraction = Annotated[float, Meta(ge=0, le=1, description="A finite number from 0 to 1.")]
#: A count, size or index: ``0 <= n <= 2**31 - 1``.
Count = Annotated[int, Meta(ge=0, le=MAX_COUNT, description="An integer from 0 to 2147483647.")]
#: A process exit code: a signed 32-bit integer.
ExitCode = Annotated[int, Meta(ge=MIN_EXIT_CODE, le=MAX_EXIT_CODE, description="A 32-bit exit code.")]
#: A TCP or UDP port number: ``1 <= n <= 65535``.
Port = Annotated[int, Meta(ge=MIN_PORT, le=MAX_PORT, description="A port number from 1 to 65535.")]
