"""The ``server`` settings area: the HTTP and gRPC listeners."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from armada.model.settings_area import SettingsArea


class ServerSettings(SettingsArea):
    host: Annotated[str, Meta(description="Address the HTTP server binds to.")] = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535, description="Port the HTTP server listens on.")] = 8080
    dev: Annotated[
        bool,
        Meta(
            description="Development mode: also run one in-process executor with the local process "
            "backend, log one line per job state change, and default the scheduling rate limits to off."
        ),
    ] = False
    max_request_bytes: Annotated[
        int, Meta(ge=1024, description="Largest request body accepted; larger ones get 413.")
    ] = 16 * 1024 * 1024
    shutdown_timeout: Annotated[
        int, Meta(ge=0, description="Seconds to let in-flight requests finish on SIGTERM.")
    ] = 10
    keep_alive_timeout: Annotated[
        int, Meta(ge=1, description="Seconds an idle keep-alive connection is kept open.")
    ] = 75
    tls_cert: Annotated[
        str, Meta(description="PEM certificate (chain) to serve HTTPS with; empty serves plain HTTP.")
    ] = ""
    tls_key: Annotated[str, Meta(description="PEM private key of `tlsCert`.")] = ""
    cors_allow_origins: Annotated[
        list[str],
        Meta(description="Browser origins allowed to call the API (CORS), e.g. the UI's; `*` allows any."),
    ] = []
    forwarded_allow_ips: Annotated[
        list[str],
        Meta(
            description="Addresses (or CIDR ranges) of reverse proxies trusted to give the client's address "
            "in `X-Forwarded-For`; behind an Ingress list its pods' range, or every client shares the "
            "proxy's address in the per-client limits (failed logins, anonymous streams). Empty: "
            "127.0.0.1 only.",
        ),
    ] = []
    max_streams_per_caller: Annotated[
        int,
        Meta(
            ge=1,
            description="Event streams (job-set events, Lookout's change feed) one caller may hold open "
            "at once, per server process; more get 429. Anonymous callers count per client address.",
        ),
    ] = 100
    workers: Annotated[
        int,
        Meta(
            ge=1,
            description="Server processes sharing the port, each a replica (one schedules); "
            "one per core. PostgreSQL only.",
        ),
    ] = 1

    grpc_port: Annotated[
        int,
        Meta(
            ge=0,
            le=65535,
            description="Port of the gRPC API (upstream's services for armada-client, armadactl, "
            "the Airflow operator), on `host` with the same TLS; 0 turns it off.",
        ),
    ] = 50051

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("server: set both tlsCert and tlsKey, or neither")
