#!/usr/bin/env bash
# Engine tests on one CUDA GPU — for a lent GPU machine (the `device` tool), not CI.
#
# Target: the nvidia-h200 image (Python 3.12, torch 2.11 + CUDA, transformers 5, no
# deepspeed, no pydantic, no vllm, no network). Wheels built/downloaded here travel in
# .whl/ (git-ignored via .git/info/exclude):
#   DS_BUILD_OPS=0 .venv/bin/pip wheel --no-deps --no-build-isolation deepspeed==0.19.8 -w .whl
#   .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux2014_x86_64 -d .whl \
#     pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 hjson==3.1.0
# Run (device tool): command "bash benchmarks/gpu_check.sh", carry [".whl"], timeout_s 420.
# The project itself is NOT pip-installed there (its torch pin would replace the CUDA torch).
#
# What runs on the GPU: tiny models, the DeepSpeed engine (nccl, one rank: alignment,
# learning step, micro-batch invariance, export, save/load) and the transformers inference
# engine against it (logprob agreement, weight update, interrupted generation, pause).
# Skipped there, with the reason printed: the vLLM tests (no CUDA vllm in that image; a
# CUDA vllm wheel is ~400 MB, over the 64 MiB carry limit) and the two-rank launcher test
# (one GPU). Budget: well under 5 minutes (CPU here: ~2 min for the same tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG_DIR=${OUT:-/tmp}

if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export DS_BUILD_OPS=0 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# Deterministic cuBLAS, so that save -> load -> step reproduces a step bit for bit.
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1

"$PY" - <<'PY'
import torch
assert torch.cuda.is_available(), "gpu_check.sh needs a CUDA GPU"
print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
import deepspeed, pydantic, transformers
print("deepspeed", deepspeed.__version__, "pydantic", pydantic.__version__,
      "transformers", transformers.__version__)
PY

set -o pipefail
timeout 280 "$PY" -m pytest \
  tests/training/test_engines_models.py \
  tests/training/test_engines_deepspeed.py \
  tests/training/test_engines_inference.py \
  -m "not slow" -q -rs -p no:cacheprovider --timeout 240 \
  --junitxml="$LOG_DIR/gpu_engines.xml" 2>&1 | tee "$LOG_DIR/gpu_check.log"
