#!/usr/bin/env bash
# GPU machine, one command (~7 min): issue 2 evidence and a profile of SGLang's 0-step path.
#   our launcher + threshold 32 (EAGLE-3, aligned draft, 3 steps, CUDA graphs) vs the plain
#   server, closed batches N = 1..256, torch-profiler summary of 12 decode steps at N = 128,
#   then static EAGLE-3 for reference. Results: $OUT/probes.jsonl, $OUT/decisions.log.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_foundation.sh
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-540}
build_models
EAGLE+=(--speculative-draft-model-path "$MODELS/draft-aligned")

probe() {  # name port [extra probe args]
  local name=$1 port=$2; shift 2
  python3 scripts/device/closed_probe.py --name "$name" --port "$port" --pid "$CUR_PID" \
    --wait 240 --out "$OUT/probes.jsonl" "$@"
  stop_server
}

start_server adaptive-spec:threshold 30001 "$LOG" python3 -m adaptive_spec.launch_server \
  --model-path "$MODELS/target" "${GRAPH[@]}" "${EAGLE[@]}" --adaptive-spec-threshold 32 --adaptive-spec-log-decisions
probe adaptive-spec:threshold 30001 --profile-n 128
grep -E "adaptive_spec|Switch adaptive|Traceback|Error" "$LOG" | head -300 > "$OUT/decisions.log"

[ "$(left)" -gt 150 ] && { start_server plain 30000 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}"
  probe plain 30000 --profile-n 128; }
[ "$(left)" -gt 150 ] && { start_server eagle3 30002 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}" "${EAGLE[@]}"
  probe eagle3 30002 --profile-n 128; } || say "skipped eagle3 (time)"
pack_jitcache
tail -c 4000000 "$LOG" > "$OUT/servers.tail.log"; rm -f "$LOG"
say "done"
