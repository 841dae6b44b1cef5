#!/usr/bin/env bash
# GPU machine, one command (~8 min): issue 3 evidence. One adaptive-spec server measured in
# several modes switched at run time (forced off with our decode path and with SGLang's
# 0-step path, forced on, flapping every step and every 8 steps, threshold), then the plain
# server and static EAGLE-3 with the same closed batches. Results: $OUT/probes.jsonl.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_offpath.sh
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-560}
MODELS=/tmp/models-8b
if [ ! -f "$MODELS/.done" ]; then
  python3 .device/make_models.py --out "$MODELS" --drafts aligned --hidden 4096 --inter 14336 \
    --layers 32 --heads 32 --kv-heads 8 --vocab 128256 && touch "$MODELS/.done" || { say "models failed"; exit 3; }
fi
GRAPH=(--cuda-graph-backend-decode full --cuda-graph-bs-decode 1 2 4 8 16 32 64 128 256
       --max-running-requests 256 --mem-fraction-static 0.5)
EAGLE=(--speculative-algorithm EAGLE3 --speculative-draft-model-path "$MODELS/draft-aligned"
       --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)
LOG="$OUT/servers.log"
left() { echo $(( DEADLINE_S - $(date +%s) + T_START )); }
cd scripts/device
start_server adaptive-spec 30001 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$MODELS/target" \
  "${GRAPH[@]}" "${EAGLE[@]}" --adaptive-spec-threshold 32 --adaptive-spec-log-decisions
python3 modes_probe.py --port 30001 --pid "$CUR_PID" --out "$OUT/probes.jsonl"; stop_server
grep -E "adaptive_spec|Switch adaptive|Traceback|Error|error" "$LOG" | grep -v "Decode batch" | head -400 > "$OUT/decisions.log"
[ "$(left)" -gt 120 ] && { start_server plain 30000 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}"
  python3 closed_probe.py --name plain --port 30000 --pid "$CUR_PID" --wait 200 --profile-n 128 --out "$OUT/probes.jsonl"; stop_server; }
[ "$(left)" -gt 120 ] && { start_server eagle3 30002 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}" "${EAGLE[@]}"
  python3 closed_probe.py --name eagle3 --port 30002 --pid "$CUR_PID" --wait 200 --out "$OUT/probes.jsonl"; stop_server; } || say "skipped eagle3"
cd "$REPO"; pack_jitcache
tail -c 3000000 "$LOG" > "$OUT/servers.tail.log"; rm -f "$LOG"
say "done"
