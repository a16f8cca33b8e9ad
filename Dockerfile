# Build a wheel, then install it into a slim runtime image that runs as a non-root user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY armada ./armada
COPY migrations ./migrations
RUN pip install --no-cache-dir build && python -m build --wheel --outdir /wheels

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 armada
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER armada
WORKDIR /home/armada
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/health').status == 204 else 1)"
ENTRYPOINT ["armada"]
CMD ["serve", "--host", "0.0.0.0"]
