#!/usr/bin/env bash
# GPU machine, one command: the side-by-side sweep of issue 4/5 with the bench tool.
# NOT YET RUN on the GPU (written 2026-11-29 for the next session; the tool is CPU-tested only).
#   DRAFT=aligned|random|dial-0.7 ... (a draft directory name made by benchmarks/models.py)
#   SYSTEMS (default plain,eagle3,builtin-adaptive,adaptive-spec:threshold,adaptive-spec:goodput)
# Results: $OUT/sweep-$DRAFT.json (+ server logs under $OUT/logs).
# Usage (repo root, .bundle carried): DRAFT=dial-0.7 bash scripts/device/call_sweep.sh
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-560}
DRAFT=${DRAFT:-aligned}
SYSTEMS=${SYSTEMS:-plain,eagle3,builtin-adaptive,adaptive-spec:threshold,adaptive-spec:goodput}
DIAL_MODELS=/tmp/dial-models-8b
if [ ! -f "$DIAL_MODELS/.done" ]; then
  say "building the dial pair (benchmarks/models.py, preset 8b)"
  python3 -m adaptive_spec.bench.models --out "$DIAL_MODELS" --preset 8b \
    --drafts aligned,random,dial:0.5,dial:0.7,dial:0.9 && touch "$DIAL_MODELS/.done" || { say "models failed"; exit 3; }
fi
mkdir -p "$OUT/logs"
python3 -m adaptive_spec.bench.cli sweep --target "$DIAL_MODELS/target" --draft "$DIAL_MODELS/draft-$DRAFT" \
  --systems "$SYSTEMS" --concurrency 1,4,16,64,128,256 --new-tokens 256 --prompt-len 40,128 --temperature 0 \
  --time-budget-s 5 --deadline-s $(( $(left) - 30 )) --log-dir "$OUT/logs" --out "$OUT/sweep-$DRAFT.json"
pack_jitcache
say "done"
