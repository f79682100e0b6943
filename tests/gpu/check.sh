#!/usr/bin/env bash
# The prepared GPU check (issue 21): a tiny random Qwen3 trained by LLaMA-Factory with DeepSpeed
# ZeRO-3 and bf16, served by vLLM with the hermes tool parser, 10 τ²-bench episodes through the
# learner's evaluate, one `evaluations` row each, training and generation tokens/s printed; then
# the RL learner (issue 36): GRPO steps with TRL from that checkpoint, rewards from the episode
# API, the RL checkpoint served and evaluated on 5 episodes.
# About 5 to 7 minutes on one GPU (budget: 8 minutes on one H200). docs/training.md says more.
#
#   tests/gpu/check.sh            # on a GPU machine (checkout with .[train,serve] installed)
#   tests/gpu/check.sh --cpu      # the same steps on a CPU: fp32, ZeRO-3 on DeepSpeed's CPU
#                                 # accelerator, served by `llamafactory-cli api`
#                                 # (or GPU_CHECK_DEVICE=cpu)
#
# (Not EVOSYN_*: those variables are campaign config overrides.)
# GPU_CHECK_PYTHON: interpreter with evosyn (default .venv/bin/python, else python3).
# LLAMAFACTORY_PYTHON: interpreter with LLaMA-Factory and DeepSpeed (default .venv-train/bin/python,
#   else GPU_CHECK_PYTHON); its bin/ goes first on PATH (llamafactory-cli, torchrun, vllm).
# GPU_CHECK_WORK: working folder (default: a new temporary one, kept).
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)

device=${GPU_CHECK_DEVICE:-cuda}
for arg in "$@"; do
  case $arg in
    --cpu) device=cpu ;;
    --cuda) device=cuda ;;
    *) echo "usage: $0 [--cpu|--cuda]" >&2; exit 2 ;;
  esac
done

if [[ -z ${GPU_CHECK_PYTHON:-} ]]; then
  if [[ -x .venv/bin/python ]]; then GPU_CHECK_PYTHON=$PWD/.venv/bin/python; else GPU_CHECK_PYTHON=$(command -v python3); fi
fi
if [[ -z ${LLAMAFACTORY_PYTHON:-} ]]; then
  if [[ -x .venv-train/bin/python ]]; then LLAMAFACTORY_PYTHON=$PWD/.venv-train/bin/python; else LLAMAFACTORY_PYTHON=$GPU_CHECK_PYTHON; fi
fi
export PATH="$(dirname "$LLAMAFACTORY_PYTHON"):$PATH"

# Preflight: one line per missing prerequisite, then a non-zero exit before anything runs.
missing=0
lack() { echo "gpu-check: missing $1" >&2; missing=1; }
"$GPU_CHECK_PYTHON" -c "import evosyn.tasks.loop" 2>/dev/null \
  || lack "evosyn in $GPU_CHECK_PYTHON: pip install -e '.[dev]' (or set GPU_CHECK_PYTHON)"
command -v llamafactory-cli >/dev/null \
  || lack "llamafactory-cli on PATH: pip install -e '.[train]' (make train-env on a CPU), or set LLAMAFACTORY_PYTHON"
"$LLAMAFACTORY_PYTHON" -c "import deepspeed" >/dev/null 2>&1 \
  || lack "deepspeed in $LLAMAFACTORY_PYTHON: pip install -e '.[train]' (make train-env on a CPU)"
"$LLAMAFACTORY_PYTHON" -c "import trl" >/dev/null 2>&1 \
  || lack "trl in $LLAMAFACTORY_PYTHON (the RL step's GRPOTrainer): pip install -e '.[train]' (make train-env on a CPU)"
if [[ $device == cuda ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  [[ $gpus -ge 1 ]] \
    || lack "CUDA device: nvidia-smi lists none on $(hostname) (run with --cpu for the CPU substitutions)"
  command -v vllm >/dev/null \
    || lack "vllm on PATH: pip install -e '.[serve]' (docker/gpu-constraints.txt pins it)"
else
  "$LLAMAFACTORY_PYTHON" -c "import fastapi, uvicorn, sse_starlette" >/dev/null 2>&1 \
    || lack "LLaMA-Factory's API server packages (fastapi, uvicorn, sse-starlette) in $LLAMAFACTORY_PYTHON: make train-env"
fi
if [[ $missing -ne 0 ]]; then
  echo "gpu-check: preflight failed ($device); nothing was run" >&2
  exit 2
fi
[[ $device == cuda ]] && nvidia-smi -L | head -1

work=${GPU_CHECK_WORK:-$(mktemp -d -t evosyn-gpu-check.XXXXXX)}
mkdir -p "$work"
echo "gpu-check: work folder $work"
status=0
"$GPU_CHECK_PYTHON" -m tests.gpu.check --device "$device" --work "$work" \
  --train-python "$LLAMAFACTORY_PYTHON" || status=$?
seconds=$(($(date +%s) - started))
if [[ $status -eq 0 ]]; then
  echo "gpu-check: OK on $device in ${seconds}s"
else
  echo "gpu-check: FAILED on $device after ${seconds}s (logs under $work/train)" >&2
fi
exit $status
