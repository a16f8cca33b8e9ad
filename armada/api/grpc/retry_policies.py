"""``api.RetryPolicyService`` over :mod:`armada.retries.policies`, as the REST routes.

Upstream's protobuf spells actions as enum names (``RETRY_ACTION_RETRY``); our policies,
like upstream's policy files, say ``Retry`` / ``Fail``. Requests are translated and then
decoded into the same :class:`~armada.model.retry.RetryPolicy` the REST body is, so both
transports validate alike; changing a policy needs the same permissions.
"""

from __future__ import annotations

from typing import Any

import grpc
import msgspec
from armada_client.armada import submit_pb2, submit_pb2_grpc
from google.protobuf import empty_pb2

from armada.api.grpc import status
from armada.api.grpc.auth import Caller
from armada.api.grpc.convert import Context, to_dict, to_proto, wire
from armada.api.services import Services
from armada.auth.permissions import GlobalPermission as P
from armada.model.errors import Conflict, InvalidRequest
from armada.model.retry import RetryPolicy
from armada.retries import policies as retry_policies

EMPTY = empty_pb2.Empty()
_FROM_ENUM = {"RETRY_ACTION_RETRY": "Retry", "RETRY_ACTION_FAIL": "Fail"}
_TO_ENUM = {ours: theirs for theirs, ours in _FROM_ENUM.items()}


def policy_from_proto(message: submit_pb2.RetryPolicy) -> RetryPolicy:
    data = to_dict(message)
    default = data.pop("defaultAction", None)
    if default is not None and default != "RETRY_ACTION_UNSPECIFIED":
        data["defaultAction"] = _action(default, "defaultAction")
    for index, rule in enumerate(data.get("rules", [])):
        rule["action"] = _action(rule.get("action"), f"rules[{index}].action")
    return wire(data, RetryPolicy)


def _action(value: Any, field: str) -> str:
    action = _FROM_ENUM.get(str(value))
    if action is None:
        raise InvalidRequest(
            f"action must be RETRY_ACTION_RETRY or RETRY_ACTION_FAIL, got {value!r}", field=field
        )
    return action


def policy_to_proto(policy: RetryPolicy) -> submit_pb2.RetryPolicy:
    data: dict[str, Any] = msgspec.to_builtins(policy)
    data["defaultAction"] = _TO_ENUM[policy.default_action]
    for rule, fields in zip(policy.rules, data.get("rules", []), strict=True):
        fields["action"] = _TO_ENUM[rule.action]
    return to_proto(data, submit_pb2.RetryPolicy)  # apiVersion and kind have no field there


class RetryPolicyService(submit_pb2_grpc.RetryPolicyServiceServicer):
    def __init__(self, services: Services) -> None:
        self.services = services
        self.caller = Caller(services.access, services.store)

    @status.unary
    async def CreateRetryPolicy(self, request: submit_pb2.RetryPolicy, context: Context) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.CREATE_RETRY_POLICY)
        try:
            await retry_policies.create_policy(self.services.store, policy_from_proto(request), identity.name)
        except Conflict as exc:  # as for queues: upstream answers ALREADY_EXISTS
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, status.details_of(exc))
        return EMPTY

    @status.unary
    async def UpdateRetryPolicy(self, request: submit_pb2.RetryPolicy, context: Context) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.UPDATE_RETRY_POLICY)
        policy = policy_from_proto(request)
        await retry_policies.update_policy(self.services.store, policy.name, policy, identity.name)
        return EMPTY

    @status.unary
    async def DeleteRetryPolicy(
        self, request: submit_pb2.RetryPolicyDeleteRequest, context: Context
    ) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.DELETE_RETRY_POLICY)
        await retry_policies.delete_policy(self.services.store, request.name, identity.name)
        return EMPTY

    @status.unary
    async def GetRetryPolicy(
        self, request: submit_pb2.RetryPolicyGetRequest, context: Context
    ) -> submit_pb2.RetryPolicy:
        await self.caller.identify(context)
        return policy_to_proto(await retry_policies.get_policy(self.services.store, request.name))

    @status.unary
    async def GetRetryPolicies(
        self, request: submit_pb2.RetryPolicyListRequest, context: Context
    ) -> submit_pb2.RetryPolicyList:
        await self.caller.identify(context)
        policies = await retry_policies.list_policies(self.services.store)
        return submit_pb2.RetryPolicyList(retry_policies=[policy_to_proto(p) for p in policies])
