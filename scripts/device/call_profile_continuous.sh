#!/usr/bin/env bash
# GPU machine nvidia-h200, one command (~8 min), for issue 3's open question: under continuous
# arrivals (prefills between decode steps) our server with drafting forced off made only
# 0.76-0.96x of plain in the session-3 sweeps, while in closed batches its off step matches
# plain. Plain and ours (forced off, always-wrong pair) on one H200, each probed with
# scripts/device/continuous_probe.py at N = 32 and 128 (30 s of load, 60 profiled steps in the
# middle): output tok/s, GPU busy vs span (host gaps), kernel categories, top CPU annotations.
# Results under $OUT: continuous.jsonl, servers.log excerpt. N_LIST (default "128 32") and LOAD_S
# (default 30) override the levels and the load per probe. Written 2026-11-29 (session 3).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_profile_continuous.sh
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-560}
PAIR=/tmp/soak-8b
build_pair "$PAIR" random --preset 8b || exit 3
SA=(--mem-fraction-static 0.3 --max-total-tokens 90000 --max-running-requests 260 "${CUDA_GRAPH[@]}")
start_server plain 31000 "$LOG" python3 -m sglang.launch_server --model-path "$PAIR/target" "${SA[@]}"
P1=$CUR_PID; CUR_PID=""
sleep 25  # starts at once misjudge free memory ("no GPU memory for the KV cache", session 4)
start_server ours-off 31001 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$PAIR/target" \
  "${SA[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$PAIR/draft-random" --adaptive-spec-force off
P2=$CUR_PID; CUR_PID=""
sleep 25
# SGLang's own knob for "each admission is disproportionately expensive (speculative decoding
# with a separate draft prefill pass)": batch small prefill fragments (queue trigger, <= 100 ms)
start_server ours-off-delayer 31002 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$PAIR/target" \
  "${SA[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$PAIR/draft-random" --adaptive-spec-force off \
  --enable-prefill-delayer --prefill-delayer-queue-min-ratio 0.05 --prefill-delayer-max-delay-ms 100
P3=$CUR_PID
trap 'kill -KILL -- -"$P1" -"$P2" -"$P3" 2>/dev/null' EXIT
for n in ${N_LIST:-128 32}; do
  for s in "plain 31000 $P1" "ours-off 31001 $P2" "ours-off-delayer 31002 $P3"; do
    set -- $s
    [ "$(left)" -gt 60 ] || { say "deadline: skipping $1 N=$n"; continue; }
    ( cd scripts/device && python3 continuous_probe.py --name "$1-n$n" --port "$2" --pid "$3" --n "$n" \
        --load-s ${LOAD_S:-30} --warm-s 10 --out "$OUT/continuous.jsonl" )
  done
done
grep -E "adaptive_spec|Traceback|rror" "$LOG" | grep -v "GET /adaptive_spec" | head -200 > "$OUT/servers-excerpt.log"
say "done"
