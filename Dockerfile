# syntax=docker/dockerfile:1
# Multi-stage: build a wheel with its dependencies, install it into a slim, non-root runtime image.
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="dbuser-operator" \
      org.opencontainers.image.description="Kubernetes operator for MySQL and MariaDB user accounts" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels dbuser-operator \
    && rm -rf /wheels \
    && useradd --system --uid 65532 --no-create-home --shell /usr/sbin/nologin operator
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
ENTRYPOINT ["dbuser-operator"]
