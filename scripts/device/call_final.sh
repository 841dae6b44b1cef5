#!/usr/bin/env bash
# GPU machine, one command (~9.5 min): the evidence run.
#  1. adaptive-spec, EAGLE-3 aligned (always-right) draft, started with the goodput policy
#     (states for 0..3 steps), measured in modes switched at run time: forced off (with a
#     profile), forced on, flapping every step / every 8 steps, threshold (96, floor 1.5), goodput.
#  2. plain server (profile at N=128), 3. static EAGLE-3 aligned (+ acceptance vs temperature),
#  4. adaptive-spec with the always-wrong draft: threshold and goodput.
# Same seeded prompts everywhere, warm-up pass first, repetitions. Output: $OUT/probes.jsonl.
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-570}
build_models
OURS=(--adaptive-spec-policy goodput --adaptive-spec-threshold 96 --adaptive-spec-min-accept-len 1.5 --adaptive-spec-log-decisions)
cd scripts/device
start_server adaptive-spec 30001 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$MODELS/target" \
  "${GRAPH[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$MODELS/draft-aligned" "${OURS[@]}"
python3 modes_probe.py --port 30001 --pid "$CUR_PID" --plan aligned --out "$OUT/probes.jsonl"; stop_server
[ "$(left)" -gt 100 ] && { start_server plain 30000 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}"
  python3 closed_probe.py --name plain --port 30000 --pid "$CUR_PID" --wait 150 --profile-n 128 --out "$OUT/probes.jsonl"; stop_server; }
[ "$(left)" -gt 100 ] && { start_server eagle3 30002 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}" \
  "${EAGLE[@]}" --speculative-draft-model-path "$MODELS/draft-aligned"
  python3 closed_probe.py --name eagle3 --port 30002 --pid "$CUR_PID" --wait 150 --temps 3 5 6.5 8 \
    --out "$OUT/probes.jsonl"; stop_server; } || say "skipped eagle3"
[ "$(left)" -gt 100 ] && { start_server adaptive-spec-wrong 30003 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$MODELS/target" \
  "${GRAPH[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$MODELS/draft-random" "${OURS[@]}"
  python3 modes_probe.py --port 30003 --pid "$CUR_PID" --plan wrong --suffix @always-wrong --profile-n 0 \
    --out "$OUT/probes.jsonl"; stop_server; } || say "skipped always-wrong"
grep -E "adaptive_spec|Switch adaptive|Traceback|Error|error" "$LOG" | grep -v "Decode batch" | head -800 > "$OUT/decisions.log"
cd "$REPO"; pack_jitcache
tail -c 3000000 "$LOG" > "$OUT/servers.tail.log"; rm -f "$LOG"
say "done"
