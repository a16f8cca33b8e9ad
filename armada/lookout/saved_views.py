"""Saved views: each user's named jobs-page states, kept on the server.

Every read and change is scoped to the caller's user name (as authentication established
it): there is no way to name another user's view, so one user can neither read nor change
another's. Anonymous callers (development) share the user ``anonymous``.

A change is a ``lookoutView*`` event appended in a transaction that first counts the
user's views, so the per-user limit holds however requests interleave; bad input is
refused before anything is appended.
"""

from __future__ import annotations

from armada.eventstore.saved_views import StoredView, count_views, user_view, user_views
from armada.eventstore.store import EventStore
from armada.lookout.settings import LookoutSettings
from armada.model.errors import InvalidRequest, NotFound
from armada.model.events import LookoutViewDeleted, LookoutViewSaved
from armada.model.saved_views import SavedView, SavedViewBody, check_name, check_state


def _wire(view: StoredView) -> SavedView:
    return SavedView(name=view.name, state=view.state, updated=view.updated)


async def list_views(store: EventStore, user: str) -> list[SavedView]:
    async with store.engine.connect() as conn:
        return [_wire(view) for view in await user_views(conn, user)]


async def get_view(store: EventStore, user: str, name: str) -> SavedView:
    check_name(name)
    async with store.engine.connect() as conn:
        view = await user_view(conn, user, name)
    if view is None:
        raise NotFound(f"you have no saved view {name!r}", field="name")
    return _wire(view)


async def save_view(
    store: EventStore, settings: LookoutSettings, user: str, name: str, body: SavedViewBody
) -> SavedView:
    """Create or replace ``user``'s view ``name``."""
    check_name(name)
    check_state(body.state, settings.saved_view_bytes)
    event = LookoutViewSaved(user=user, name=name, state=body.state)
    async with store.transaction() as tx:
        conn = await tx.views(jobs=False)
        limit = settings.saved_views_per_user
        if await user_view(conn, user, name) is None and await count_views(conn, user) >= limit:
            raise InvalidRequest(
                f"you have {limit} saved views, the most one user may keep: delete one first", field="name"
            )
        tx.append([event])
    return SavedView(name=name, state=body.state, updated=event.created)


async def delete_view(store: EventStore, user: str, name: str) -> None:
    check_name(name)
    async with store.transaction() as tx:
        if await user_view(await tx.views(jobs=False), user, name) is None:
            raise NotFound(f"you have no saved view {name!r}", field="name")
        tx.append([LookoutViewDeleted(user=user, name=name)])
