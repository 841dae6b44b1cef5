#!/usr/bin/env bash
# GPU machine, one command (~9 min): the evidence run for the foundation and the off path.
#  1. adaptive-spec (EAGLE-3 aligned draft, threshold 96, acceptance floor 1.5) measured in
#     modes switched at run time: forced off (our decode path; SGLang's 0-step path), forced
#     on, flapping every step / every 8 steps, threshold policy.
#  2. plain server, 3. static EAGLE-3 (aligned), 4. adaptive-spec with the always-wrong draft.
#  5. Triton kernel benchmark, if time is left.
# Same prompts everywhere (seeded), 3 repetitions after a warm-up pass. $OUT/probes.jsonl.
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-565}
MODELS=/tmp/models-8b
if [ ! -f "$MODELS/.done" ]; then
  python3 .device/make_models.py --out "$MODELS" --drafts aligned,random --hidden 4096 --inter 14336 \
    --layers 32 --heads 32 --kv-heads 8 --vocab 128256 && touch "$MODELS/.done" || { say "models failed"; exit 3; }
fi
GRAPH=(--cuda-graph-backend-decode full --cuda-graph-bs-decode 1 2 4 8 16 32 64 128 256
       --max-running-requests 256 --mem-fraction-static 0.5)
EAGLE=(--speculative-algorithm EAGLE3 --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)
OURS=(--adaptive-spec-threshold 96 --adaptive-spec-min-accept-len 1.5 --adaptive-spec-log-decisions)
LOG="$OUT/servers.log"
left() { echo $(( DEADLINE_S - $(date +%s) + T_START )); }
cd scripts/device
start_server adaptive-spec 30001 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$MODELS/target" \
  "${GRAPH[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$MODELS/draft-aligned" "${OURS[@]}"
python3 modes_probe.py --port 30001 --pid "$CUR_PID" --out "$OUT/probes.jsonl"; stop_server
[ "$(left)" -gt 110 ] && { start_server plain 30000 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}"
  python3 closed_probe.py --name plain --port 30000 --pid "$CUR_PID" --wait 150 --profile-n 128 --out "$OUT/probes.jsonl"; stop_server; }
[ "$(left)" -gt 110 ] && { start_server eagle3 30002 "$LOG" python3 -m sglang.launch_server --model-path "$MODELS/target" "${GRAPH[@]}" \
  "${EAGLE[@]}" --speculative-draft-model-path "$MODELS/draft-aligned"
  python3 closed_probe.py --name eagle3 --port 30002 --pid "$CUR_PID" --wait 150 --temps 3 4 5 6 7 8 10 \
    --out "$OUT/probes.jsonl"; stop_server; } || say "skipped eagle3"
[ "$(left)" -gt 110 ] && { start_server adaptive-spec-wrong 30003 "$LOG" python3 -m adaptive_spec.launch_server --model-path "$MODELS/target" \
  "${GRAPH[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$MODELS/draft-random" "${OURS[@]}"
  python3 closed_probe.py --name adaptive-spec:threshold@always-wrong --port 30003 --pid "$CUR_PID" --wait 150 --status-route \
    --out "$OUT/probes.jsonl"; stop_server; } || say "skipped always-wrong"
grep -E "adaptive_spec|Switch adaptive|Traceback|Error|error" "$LOG" | grep -v "Decode batch" | head -600 > "$OUT/decisions.log"
cd "$REPO"
if [ -f benchmarks/kernel_bench.py ] && [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 20 )) python3 benchmarks/kernel_bench.py --out "$OUT/kernels.json" 2>&1 | tail -40 || say "kernel bench failed"
fi
pack_jitcache
tail -c 3000000 "$LOG" > "$OUT/servers.tail.log"; rm -f "$LOG"
say "done"
