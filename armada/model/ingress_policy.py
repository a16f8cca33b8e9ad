"""What a job may ask of the Services and Ingresses that expose it: the operator's policy.

A job's ``services`` and ``ingress`` become Kubernetes objects the executor creates with its
own (cluster-wide) rights, so each field a tenant controls is held to a rule: object names
stay under the job's own ``armada-<jobId>-0-`` prefix (a named Service is created as
``armada-<jobId>-0-<name>``: it can never be another team's Service or ``kubernetes``),
Ingress annotations are limited to the keys the operator allows (an ingress-nginx
``server-snippet`` is arbitrary controller configuration), ``certName`` to Secrets the
operator lists (else a job serves with another team's certificate), and Service types to the
ones allowed (a ``NodePort`` opens a port on every node). The server checks this at submit
(a 400 naming the field) and the executor again before it creates anything, with this same
pure code.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import msgspec

from armada.model.ingress import IngressConfig, ServiceConfig, ServiceType
from armada.model.podsecurity import Violation

#: Longest ``name`` of a service config: ``armada-<jobId>-0-<name>`` (a 26-character job id)
#: must stay a 63-character DNS label.
MAX_SERVICE_NAME_LENGTH = 63 - len("armada--0-") - 26
#: Names of the Services Armada itself makes for a job (``armada-<jobId>-0-<kind>``).
RESERVED_SERVICE_NAMES = frozenset({"nodeport", "headless", "ingress"})
#: A Service name: an RFC 1035 label, as the API server requires.
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
#: A Secret name: an RFC 1123 subdomain.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class IngressPolicy(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """What jobs may set on the Services and Ingresses that expose them (the same keys on the
    server, checked at submit, and on each executor, checked again before creating them)."""

    #: Ingress annotation keys a job's ``ingress[].annotations`` may set (exact keys, e.g.
    #: ``nginx.ingress.kubernetes.io/proxy-body-size``); empty: none. Never list keys that
    #: configure the controller (``server-snippet``, ``configuration-snippet``,
    #: ``server-alias``, ``auth-url``, ``canary``, ``kubernetes.io/ingress.class``).
    allowed_annotations: list[str] = []
    #: TLS Secrets a job may name as ``ingress[].certName``; empty: none. The executor's own
    #: ``executor.ingress.tlsSecret`` is always allowed there.
    allowed_cert_names: list[str] = []
    #: Service types a job's ``services`` may ask for: ``Headless`` (cluster DNS only) and
    #: ``NodePort`` (a port on every node; upstream's default type, so a service config that
    #: names no type is a NodePort one and refused unless this lists it).
    allowed_service_types: list[ServiceType] = msgspec.field(default_factory=lambda: ["Headless"])


def exposure_violation(
    services: Sequence[ServiceConfig],
    ingress: Sequence[IngressConfig],
    policy: IngressPolicy,
    cert_names: Collection[str] = (),
) -> Violation | None:
    """The first field of a job's ``services``/``ingress`` that ``policy`` refuses; paths are
    relative to the job (``services[0].name``). ``cert_names``: also allowed as ``certName``."""
    names: dict[str, str] = {}
    for i, service in enumerate(services):
        where = f"services[{i}]"
        if service.type not in policy.allowed_service_types:
            allowed = ", ".join(policy.allowed_service_types) or "none"
            return Violation(
                f"{where}.type",
                f"{service.type} services are not allowed here; allowed types: {allowed}"
                + (" (a service config naming no type is NodePort)" if service.type == "NodePort" else ""),
            )
        if service.name:
            detail = _name_problem(service.name, names)
            if detail is not None:
                return Violation(f"{where}.name", detail)
            names[service.name] = where
    for i, config in enumerate(ingress):
        where = f"ingress[{i}]"
        for key in config.annotations:
            if key not in policy.allowed_annotations:
                allowed = ", ".join(sorted(policy.allowed_annotations)) or "none"
                return Violation(
                    f"{where}.annotations.{key}",
                    f"ingress annotation {key!r} is not allowed here; allowed keys: {allowed}",
                )
        detail = _cert_problem(config.cert_name, [*policy.allowed_cert_names, *cert_names])
        if detail is not None:
            return Violation(f"{where}.certName", detail)
    return None


def _name_problem(name: str, names: dict[str, str]) -> str | None:
    if not _DNS_LABEL.match(name):
        return f"service name {name!r} is not an RFC 1035 label (a-z, 0-9 and '-', starting with a letter)"
    if len(name) > MAX_SERVICE_NAME_LENGTH:
        return (
            f"service name {name!r} is longer than {MAX_SERVICE_NAME_LENGTH} characters (the Service "
            "is named armada-<jobId>-0-<name>, at most 63)"
        )
    if name in RESERVED_SERVICE_NAMES:
        return f"service name {name!r} is reserved for the Services Armada names itself"
    if name in names:
        return f"service name {name!r} is already used by {names[name]}"
    return None


def _cert_problem(cert_name: str, allowed: Sequence[str]) -> str | None:
    if not cert_name:
        return None
    if not _DNS_SUBDOMAIN.match(cert_name):
        return f"certName {cert_name!r} is not a Secret name (lower-case RFC 1123 subdomain)"
    if cert_name not in allowed:
        listed = ", ".join(sorted(set(allowed))) or "none"
        return f"certName {cert_name!r} is not an allowed TLS Secret; allowed: {listed}"
    return None
