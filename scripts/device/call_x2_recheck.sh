#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, one short command (~4 min): re-check of the goodput policy after
# the cost-table and probe changes, where the previous sweeps showed it short: the crossover of
# the dial-0.7 pair (GPU 0: plain, eagle3, goodput) and high load with the always-wrong draft
# (GPU 1: plain, goodput). Same tool and settings as call_x2_sweeps.sh, fewer levels.
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-230}
DIAL=/tmp/dial-8b
( cd /tmp && python3 -m adaptive_spec.bench.models --out "$DIAL" --preset 8b --drafts random,dial:0.7 \
    && touch "$DIAL/.done" ) > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 3; }
say "models built"
COMMON=(--new-tokens 192 --prompt-len 40,128 --temperature 0 --time-budget-s 4 --drain-s 1
        --requests-per-level 100000 --start-stagger-s 5 --server-arg "--max-running-requests 260"
        --deadline-s $(( $(left) - 10 )) --quiet --target "$DIAL/target")
cd /tmp
CUDA_VISIBLE_DEVICES=0 python3 -m adaptive_spec.bench.cli sweep "${COMMON[@]}" --concurrency 16,32,128 \
  --draft "$DIAL/draft-dial-0.7" --systems plain,eagle3,adaptive-spec:goodput \
  --log-dir /tmp/logs-a --out "$OUT/recheck-dial-0.7.json" > "$OUT/a.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 python3 -m adaptive_spec.bench.cli sweep "${COMMON[@]}" --concurrency 64,128,256 \
  --draft "$DIAL/draft-random" --systems plain,adaptive-spec:goodput \
  --log-dir /tmp/logs-b --out "$OUT/recheck-always-wrong.json" > "$OUT/b.txt" 2>&1 &
wait
cat "$OUT/a.txt" "$OUT/b.txt"; rm -f "$OUT/a.txt" "$OUT/b.txt" "$OUT/build.log"
say "done"
