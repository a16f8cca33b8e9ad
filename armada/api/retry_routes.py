"""Retry policy endpoints, at upstream's paths (``api.RetryPolicyService`` behind grpc-gateway).

Changing policies needs ``create_retry_policy``/``update_retry_policy``/``delete_retry_policy``;
reading them needs only a signed-in caller: a submitter should be able to see why a job was
or was not retried, and policies hold no secrets.
"""

from __future__ import annotations

from litestar import delete, get, post, put
from litestar.params import FromPath, JSONBody

from armada.api.dependencies import Store, User
from armada.api.responses import problems
from armada.auth.permissions import GlobalPermission as P
from armada.auth.policy import authenticated, requires
from armada.model.retry import RetryPolicy
from armada.model.wire.base import Empty
from armada.model.wire.retry import RetryPolicyList
from armada.retries import policies as retry_policies

TAGS = ["retry policies"]


@post(
    "/v1/retry-policy",
    responses=problems(409),
    status_code=200,
    tags=TAGS,
    summary="Create a retry policy",
    opt=requires(P.CREATE_RETRY_POLICY),
)
async def create_retry_policy(data: JSONBody[RetryPolicy], store: Store, user: User) -> Empty:
    await retry_policies.create_policy(store, data, user)
    return Empty()


@put(
    "/v1/retry-policy/{name:str}",
    responses=problems(404),
    tags=TAGS,
    summary="Replace a retry policy",
    opt=requires(P.UPDATE_RETRY_POLICY),
)
async def update_retry_policy(
    name: FromPath[str], data: JSONBody[RetryPolicy], store: Store, user: User
) -> Empty:
    await retry_policies.update_policy(store, name, data, user)
    return Empty()


@delete(
    "/v1/retry-policy/{name:str}",
    responses=problems(404, 409),
    status_code=200,
    tags=TAGS,
    summary="Delete a retry policy no queue refers to",
    opt=requires(P.DELETE_RETRY_POLICY),
)
async def delete_retry_policy(name: FromPath[str], store: Store, user: User) -> Empty:
    await retry_policies.delete_policy(store, name, user)
    return Empty()


@get(
    "/v1/retry-policy/{name:str}",
    responses=problems(404),
    tags=TAGS,
    summary="Get a retry policy",
    opt=authenticated(),
)
async def get_retry_policy(name: FromPath[str], store: Store) -> RetryPolicy:
    return await retry_policies.get_policy(store, name)


@get("/v1/retry-policies", tags=TAGS, summary="List retry policies", opt=authenticated())
async def list_retry_policies(store: Store) -> RetryPolicyList:
    return RetryPolicyList(retry_policies=await retry_policies.list_policies(store))


ROUTES = [
    create_retry_policy,
    update_retry_policy,
    delete_retry_policy,
    get_retry_policy,
    list_retry_policies,
]
