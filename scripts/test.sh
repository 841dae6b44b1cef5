#!/usr/bin/env bash
# Runs the test suite on a fresh machine: makes (once, cached by the requirements' hash) a
# venv with the real SGLang 0.5.16, installs this package editable, runs pytest.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/unit -x`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
REQ=requirements/test.txt
KEY="$(sha256sum "$REQ" | cut -c1-12)"
VENV="${ADAPTIVE_SPEC_VENV:-$HOME/.cache/adaptive-spec/venv-$KEY}"
if [ ! -f "$VENV/.complete" ]; then
  echo "== creating $VENV (sglang 0.5.16 + torch 2.11.0: ~6 min, ~9 GB, once)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel 2>&1 | grep -v "is ignored" || true
  "$VENV/bin/pip" install -q -r "$REQ" 2>&1 | grep -v "is ignored" || true
  "$VENV/bin/python" -c "import sglang.srt.server_args, torch, pytest" # fail here if the install is broken
  touch "$VENV/.complete"
fi
"$VENV/bin/pip" install -q --no-deps --no-build-isolation -e "$ROOT" 2>&1 | grep -v "is ignored" || true
# Version matrix: sglang 0.5.23 (latest) aside, without dependencies, for the import-level test.
SIDE="$HOME/.cache/adaptive-spec/sglang-0.5.23"
if [ ! -f "$SIDE/.complete" ]; then
  rm -rf "$SIDE"
  "$VENV/bin/pip" install -q --no-deps --target "$SIDE" sglang==0.5.23 2>&1 | grep -v "is ignored" || true
  [ -d "$SIDE/sglang" ] && touch "$SIDE/.complete"
fi
export ADAPTIVE_SPEC_SGLANG_0523="$SIDE"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
