# syntax=docker/dockerfile:1
# Armada: one image for the server (`armada serve`) and the executors (`armada executor`).
#
#   make .venv/.installed && docker build -t armada:dev .   # make brings in Lookout's uPlot
#   docker run --rm -p 8080:8080 armada:dev                      # SQLite in the container
#   docker run --rm -p 8080:8080 -e ARMADA_DATABASE_URL=postgresql+psycopg://armada:pw@db:5432/armada \
#       -v $PWD/examples/config:/etc/armada:ro armada:dev serve --config /etc/armada/auth-basic.yaml
#
# See docs/deployment.md.

# --- build: armada's wheel, as CI builds and tests it (.ci/run), and every dependency's ----
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN pip install "build>=1.2"
COPY pyproject.toml README.md LICENSE ./
COPY armada ./armada
COPY migrations ./migrations
# Lookout's uPlot is brought in by `make` before the build (deploy/vendor-uplot.sh: the npm
# registry, pinned and checksummed), and copied with armada/ (it is not in git).
RUN test -f armada/lookout/static/vendor/uplot/uPlot.esm.js \
    || { echo "armada/lookout/static/vendor/uplot is missing: run make (or bash deploy/vendor-uplot.sh) first" >&2; exit 1; }
# The sdist, then the wheel from the sdist; then the wheels of its dependencies beside it.
RUN python -m build --outdir /dist . \
    && pip wheel --wheel-dir /wheels /dist/*.whl

# --- runtime: the wheel installed (nothing of the source tree) as an unprivileged user ---
FROM python:3.11-slim AS runtime
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    ARMADA_SERVER_HOST=0.0.0.0 \
    ARMADA_LOGGING_FORMAT=json \
    ARMADA_DATABASE_URL=sqlite:////var/lib/armada/armada.db
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels armada-scheduler \
    && useradd --system --uid 10001 --home-dir /var/lib/armada --create-home armada
USER 10001:10001
WORKDIR /var/lib/armada
EXPOSE 8080
# 204 from /health (the database answers). With TLS set by ARMADA_SERVER_TLS_CERT the probe
# speaks HTTPS to 127.0.0.1 without verifying the certificate (it is our own).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["python", "-c", "import os, ssl, sys, urllib.request as u; tls = bool(os.environ.get('ARMADA_SERVER_TLS_CERT')); url = ('https' if tls else 'http') + '://127.0.0.1:' + os.environ.get('ARMADA_SERVER_PORT', '8080') + '/health'; sys.exit(0 if u.urlopen(url, timeout=4, context=ssl._create_unverified_context() if tls else None).status == 204 else 1)"]
ENTRYPOINT ["armada"]
CMD ["serve"]
