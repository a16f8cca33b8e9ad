"""Lookout's saved views: ``/v1/lookout/views``, each caller's own (see
:mod:`armada.lookout.saved_views`). Any signed-in caller may keep views; the routes only
ever reach the caller's."""

from __future__ import annotations

from litestar import delete, get, put
from litestar.params import FromPath, JSONBody

from armada.api.dependencies import LookoutConfig, Store, User
from armada.api.responses import problems
from armada.auth.policy import authenticated
from armada.lookout import saved_views
from armada.model.saved_views import SavedView, SavedViewBody, SavedViewList
from armada.model.wire.base import Empty

TAGS = ["lookout"]


@get("/v1/lookout/views", tags=TAGS, summary="The caller's saved views", opt=authenticated())
async def list_views(store: Store, user: User) -> SavedViewList:
    return SavedViewList(views=await saved_views.list_views(store, user))


@get(
    "/v1/lookout/views/{name:str}",
    responses=problems(404),
    tags=TAGS,
    summary="One of the caller's saved views",
    opt=authenticated(),
)
async def get_view(name: FromPath[str], store: Store, user: User) -> SavedView:
    return await saved_views.get_view(store, user, name)


@put(
    "/v1/lookout/views/{name:str}",
    responses=problems(413),
    tags=TAGS,
    summary="Save (or replace) one of the caller's views",
    opt=authenticated(),
)
async def save_view(
    name: FromPath[str], data: JSONBody[SavedViewBody], store: Store, user: User, lookout: LookoutConfig
) -> SavedView:
    return await saved_views.save_view(store, lookout, user, name, data)


@delete(
    "/v1/lookout/views/{name:str}",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Delete one of the caller's saved views",
    opt=authenticated(),
)
async def delete_view(name: FromPath[str], store: Store, user: User) -> Empty:
    await saved_views.delete_view(store, user, name)
    return Empty()


ROUTES = [list_views, get_view, save_view, delete_view]
