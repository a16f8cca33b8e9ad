"""The gRPC transport: upstream's services (from the ``armada-client`` package's generated
modules) served over the same service layer as the REST API."""
