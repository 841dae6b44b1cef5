#!/usr/bin/env bash
# The main job on a GPU machine (SGLang 0.5.16's requirements: CUDA GPU, e.g. H100/H200):
# makes a venv with this package and SGLang 0.5.16, builds the synthetic model pair once (no
# download), and serves it with adaptive speculation on 127.0.0.1:30000.
# Extra arguments go to adaptive-spec-server (e.g. --adaptive-spec-policy goodput).
# Your own models: ADAPTIVE_SPEC_TARGET=... ADAPTIVE_SPEC_DRAFT=... bash scripts/serve.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ADAPTIVE_SPEC_SERVE_VENV:-$HOME/.cache/adaptive-spec/serve-venv}"
MODELS="${ADAPTIVE_SPEC_MODELS:-$HOME/.cache/adaptive-spec/models-8b}"
if [ ! -f "$VENV/.complete" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
  "$VENV/bin/pip" install -q "$ROOT"          # pulls sglang==0.5.16
  touch "$VENV/.complete"
fi
TARGET="${ADAPTIVE_SPEC_TARGET:-$MODELS/target}"
DRAFT="${ADAPTIVE_SPEC_DRAFT:-$MODELS/draft-aligned}"
if [ -z "${ADAPTIVE_SPEC_TARGET:-}" ] && [ ! -f "$MODELS/.done" ]; then
  # Llama-3-8B-shaped target that repeats its input token, and an EAGLE-3 draft that is
  # always right (benchmarks/MODELS.md); random weights, built on the GPU in ~30 s.
  "$VENV/bin/python" -m adaptive_spec.bench.models --out "$MODELS" --preset 8b \
    --target-mode repeat --draft-vocab 128256 --drafts aligned,random
  touch "$MODELS/.done"
fi
exec "$VENV/bin/adaptive-spec-server" --model-path "$TARGET" --host 127.0.0.1 --port 30000 \
  --skip-tokenizer-init --attention-backend triton --dtype bfloat16 \
  --speculative-algorithm EAGLE3 --speculative-draft-model-path "$DRAFT" \
  --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 \
  --max-running-requests 256 --cuda-graph-bs-decode 1 2 4 8 16 32 64 128 256 \
  --adaptive-spec-threshold 96 --adaptive-spec-min-accept-len 1.5 "$@"
