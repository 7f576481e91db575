# syntax=docker/dockerfile:1
# The operator's image: `docker build -t dbuser-operator:<tag> .` at the repository root.
#
# Stage 1 installs the project's dependencies from requirements.lock (versions and hashes pinned by
# hack/lock.sh; wheels only: no compiler is needed), then the project itself, into a virtual environment;
# stage 2 copies that environment into a fresh slim Python, without pip or any build tool, and runs it as the
# non-root user 65532 (what the Helm chart's securityContext expects).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A virtual environment without pip: the base image's pip installs into it from outside.
RUN python -m venv --without-pip /opt/dbuser-operator
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
COPY operator/ operator/
RUN pip --python /opt/dbuser-operator/bin/python install --require-hashes --only-binary=:all: \
        -r requirements.lock \
    && pip --python /opt/dbuser-operator/bin/python install --no-deps . \
    && pip --python /opt/dbuser-operator/bin/python check \
    && /opt/dbuser-operator/bin/dbuser-operator --version

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG PYTHON_IMAGE
LABEL org.opencontainers.image.title="dbuser-operator" \
      org.opencontainers.image.description="Kubernetes operator that manages MySQL and MariaDB user accounts declaratively" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
# No installer and no build tooling in the runtime image; the user the chart runs as (65532).
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
    && groupadd --system --gid 65532 nonroot \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot
COPY --from=build /opt/dbuser-operator /opt/dbuser-operator
ENV PATH=/opt/dbuser-operator/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["dbuser-operator"]
