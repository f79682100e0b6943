# GPU worker (the `gpu` pool): SFT with LLaMA-Factory and DeepSpeed, evaluation served by vLLM.
# Build from the project root:
#   docker build -f docker/gpu-worker.Dockerfile -t evosyn/gpu-worker:0.1.0 .
FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu22.04
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 EVOSYN_HOME=/opt/evosyn \
    PREFECT_SERVER_ANALYTICS_ENABLED=false
RUN apt-get update && apt-get install -y --no-install-recommends \
        software-properties-common git && \
    add-apt-repository ppa:deadsnakes/ppa && apt-get update && \
    apt-get install -y --no-install-recommends python3.11 python3.11-venv python3.11-dev && \
    rm -rf /var/lib/apt/lists/* && python3.11 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /opt/evosyn
COPY docker/constraints.txt docker/gpu-constraints.txt ./docker/
COPY pyproject.toml README.md ./
COPY evosyn ./evosyn
COPY agents ./agents
COPY environments ./environments
COPY storage ./storage
COPY tasks ./tasks
COPY flows ./flows
COPY deployments ./deployments
# torch first: flash-attn builds against the installed torch (hence --no-build-isolation).
RUN pip install --upgrade pip && \
    pip install -c docker/constraints.txt -c docker/gpu-constraints.txt torch && \
    pip install -c docker/constraints.txt -c docker/gpu-constraints.txt ".[train,serve]" && \
    pip install -c docker/gpu-constraints.txt flash-attn --no-build-isolation
CMD ["prefect", "worker", "start", "--pool", "gpu"]
