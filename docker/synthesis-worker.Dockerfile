# Synthesis worker (the `cpu` pool): programmatic and LLM roles, verification, reflection,
# fan-out on threads or Ray. Build from the project root:
#   docker build -f docker/synthesis-worker.Dockerfile -t evosyn/synthesis-worker:0.1.0 .
FROM python:3.11.7-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 EVOSYN_HOME=/opt/evosyn \
    PREFECT_SERVER_ANALYTICS_ENABLED=false
WORKDIR /opt/evosyn
COPY docker/constraints.txt ./docker/
COPY pyproject.toml README.md ./
COPY evosyn ./evosyn
COPY agents ./agents
COPY environments ./environments
COPY storage ./storage
COPY tasks ./tasks
COPY flows ./flows
COPY deployments ./deployments
RUN pip install --upgrade pip && pip install -c docker/constraints.txt ".[ray]"
# PREFECT_API_URL must point at the server, e.g. docker run -e PREFECT_API_URL=http://host:4200/api
CMD ["prefect", "worker", "start", "--pool", "cpu"]
