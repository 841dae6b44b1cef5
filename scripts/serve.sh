#!/usr/bin/env bash
# The main job on a GPU machine (SGLang 0.5.16's requirements: CUDA GPU, e.g. H100/H200):
# makes a venv with this package and SGLang 0.5.16, builds the synthetic model pair once (no
# download), and serves it with adaptive speculation on 127.0.0.1:30000.
# Extra arguments go to adaptive-spec-server (e.g. --adaptive-spec-policy goodput).
# Your own models: ADAPTIVE_SPEC_TARGET=... ADAPTIVE_SPEC_DRAFT=... bash scripts/serve.sh
# ADAPTIVE_SPEC_SERVE_DRY_RUN=1 prints the server command instead of running it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Bad input: one line and exit 2, before the venv is made (minutes) or a server starts.
if [ -n "${ADAPTIVE_SPEC_TARGET:-}" ] && [ -z "${ADAPTIVE_SPEC_DRAFT:-}" ]; then
  echo "serve.sh: error: ADAPTIVE_SPEC_TARGET is set but ADAPTIVE_SPEC_DRAFT is not:" \
    "give the EAGLE-3 draft trained for that target (the synthetic drafts fit only the" \
    "synthetic target)" >&2
  exit 2
fi
for var in ADAPTIVE_SPEC_TARGET ADAPTIVE_SPEC_DRAFT; do
  path="${!var:-}"
  case "$path" in  # a local path must exist; anything else may be a model hub id
    /* | ./* | ../*)
      [ -e "$path" ] || { echo "serve.sh: error: $var=$path does not exist" >&2; exit 2; } ;;
  esac
done
VENV="${ADAPTIVE_SPEC_SERVE_VENV:-$HOME/.cache/adaptive-spec/serve-venv}"
PRESET="${ADAPTIVE_SPEC_MODEL_PRESET:-8b}"
MODELS="${ADAPTIVE_SPEC_MODELS:-$HOME/.cache/adaptive-spec/models-$PRESET}"
if [ ! -f "$VENV/.complete" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
  "$VENV/bin/pip" install -q "$ROOT"          # pulls sglang==0.5.16
  touch "$VENV/.complete"
fi
TARGET="${ADAPTIVE_SPEC_TARGET:-$MODELS/target}"
DRAFT="${ADAPTIVE_SPEC_DRAFT:-$MODELS/draft-dial-0.7}"
if [ -z "${ADAPTIVE_SPEC_TARGET:-}" ] && [ ! -f "$MODELS/.done" ]; then
  # Llama-3-8B-shaped target and EAGLE-3 drafts whose per-token acceptance is set by
  # construction (0.7 like a good real draft; 1.0; ~0), random weights, built on the GPU in
  # ~30 s (benchmarks/MODELS.md). The pair served in the 2026-11-29 sweeps.
  # (run from the models folder: in the repo root ./adaptive_spec would shadow the install)
  mkdir -p "$MODELS"
  (cd "$MODELS" && "$VENV/bin/python" -m adaptive_spec.bench.models \
    --out "$MODELS" --preset "$PRESET" --drafts dial:0.7,aligned,random) >&2
  touch "$MODELS/.done"
fi
CMD=("$VENV/bin/adaptive-spec-server" --model-path "$TARGET" --host 127.0.0.1 --port 30000
  --skip-tokenizer-init --attention-backend triton --dtype bfloat16
  --speculative-algorithm EAGLE3 --speculative-draft-model-path "$DRAFT"
  --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4
  --max-running-requests 256 --cuda-graph-bs-decode 1 2 4 8 16 32 64 128 256
  --enable-metrics  # SGLang's /metrics, with our adaptive_spec_* series
  --adaptive-spec-threshold 32 --adaptive-spec-min-accept-len 1.5 "$@")
if [ -n "${ADAPTIVE_SPEC_SERVE_DRY_RUN:-}" ]; then
  printf '%s\n' "${CMD[@]}"
  exit 0
fi
exec "${CMD[@]}"
