"""The executor's own check of every lease before it creates anything in its cluster.

The server refuses unsafe jobs at submit, but the executor is the last thing between a
job and the cluster, so it trusts nothing it is sent: a job stored before the rules
tightened, a log written by something other than the API, a server compromised or
misconfigured. Each lease is held to this executor's settings (namespaces, pod security
profile, service accounts, wildcard tolerations, what its Services and Ingresses may ask)
with the same pure rules the server uses (:mod:`armada.model.podsecurity`,
:mod:`armada.model.ingress_policy`); a lease that breaks them is reported back as a failed
run with the reason, never created and never a crash.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from armada.executor.settings import ExecutorSettings
from armada.model.ingress_policy import exposure_violation
from armada.model.leases import Lease
from armada.model.podsecurity import PodPolicy, job_violation

#: In ``allowedNamespaces``: any namespace but the executor's own.
ANY_NAMESPACE = "*"
#: Where Kubernetes mounts the namespace of a pod's service account (the executor's own).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def own_namespace(settings: ExecutorSettings, mounted: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The namespace this executor runs in: configured, else its service account's, else none."""
    if settings.own_namespace:
        return settings.own_namespace
    try:
        return mounted.read_text().strip()
    except OSError:
        return ""


class LeaseAdmission:
    """Decides whether a lease may become a pod in this cluster."""

    def __init__(self, settings: ExecutorSettings, own: str) -> None:
        self.policy = PodPolicy(
            profile=settings.pod_security_profile,
            service_accounts=frozenset(settings.allowed_service_accounts),
            namespaces=frozenset(settings.allowed_namespaces),
            reserved_namespaces=frozenset({own} if own else ()),
            wildcard_tolerations=settings.allow_wildcard_tolerations,
        )
        self.ingress_policy = settings.ingress_policy
        #: The operator's own TLS Secret may always be named as ``certName``.
        self.cert_names = (settings.ingress.tls_secret,) if settings.ingress.tls_secret else ()

    @classmethod
    def from_settings(cls, settings: ExecutorSettings) -> LeaseAdmission:
        return cls(settings, own_namespace(settings))

    def refusal(self, lease: Lease) -> str | None:
        """Why ``lease`` must not run here (names the field), or ``None`` when it may."""
        policy = self.policy
        if ANY_NAMESPACE in policy.namespaces:
            policy = dataclasses.replace(policy, namespaces=frozenset({lease.namespace}))
        found = job_violation(lease.namespace, lease.pod_spec, lease.annotations, policy)
        if found is None and (lease.services or lease.ingress):
            found = exposure_violation(lease.services, lease.ingress, self.ingress_policy, self.cert_names)
        if found is None:
            return None
        return f"refused by the executor: {found.path}: {found.detail}"
