#!/usr/bin/env bash
# GPU machine, two commands around other work (issue 8's long run; the load must outlast one
# 10-minute command, so it runs detached):
#   SOAK_GPU=1 bash scripts/device/call_soak.sh start     # ~2 min: models, servers, driver (setsid)
#     (FAULT=policy@20000 also drills a policy failure mid-run: fallback, still serving;
#      SOAK_POLICY="--adaptive-spec-policy goodput" replaces the threshold policy's flags;
#      SOAK_GPU=0,1 SOAK_TP=2 runs both servers tensor-parallel and compares the ranks' decisions)
#   ... other commands on the other GPU (the machine must stay held: <30 s idle between calls)
#   bash scripts/device/call_soak.sh collect              # waits (bounded) and returns the JSON
# Servers on GPU $SOAK_GPU: plain (reference for the probes) and adaptive-spec (threshold 64,
# floor 1.5, decision log), dial-0.7 pair (built in $SOAK_DIR, default /tmp/soak-8b, with the
# always-wrong draft beside it).
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-570}
S=/tmp/soak; DIAL=${SOAK_DIR:-/tmp/soak-8b}
case "${1:-}" in
start)
  mkdir -p "$S"
  # a second soak on the same machine: nothing of the first may pass for this one's
  rm -f "$S/done" "$S/soak.json" "$S/pids" "$S/driver.log"
  for f in plain ours; do [ -f "$S/$f.log" ] && mv "$S/$f.log" "$S/$f.prev.log"; done
  export CUDA_VISIBLE_DEVICES=${SOAK_GPU:-1}
  build_pair "$DIAL" random,dial:0.7 --preset 8b || exit 3
  [ -n "${SOAK_BUILD_ONLY:-}" ] && exit 0
  SA=(--mem-fraction-static 0.92 --max-total-tokens 120000 --max-running-requests 260 --sleep-on-idle
      "${CUDA_GRAPH[@]}")
  if [ -n "${SOAK_TP:-}" ]; then  # issue 9: both servers tensor-parallel over the GPUs in SOAK_GPU
    SA+=(--tp-size "$SOAK_TP"); export ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0
  fi
  start_server plain 31000 "$S/plain.log" python3 -m sglang.launch_server --model-path "$DIAL/target" "${SA[@]}"
  P1=$CUR_PID; CUR_PID=""
  export ADAPTIVE_SPEC_INJECT_FAULT=${FAULT:-}  # e.g. FAULT=policy@20000: the fallback drill
  start_server adaptive-spec 31001 "$S/ours.log" python3 -m adaptive_spec.launch_server \
    --model-path "$DIAL/target" "${SA[@]}" "${EAGLE[@]}" --speculative-draft-model-path "$DIAL/draft-dial-0.7" \
    ${SOAK_POLICY:---adaptive-spec-threshold 64 --adaptive-spec-min-accept-len 1.5} --adaptive-spec-log-decisions
  P2=$CUR_PID; CUR_PID=""; trap - EXIT; echo "$P1 $P2" > "$S/pids"
  for port in 31000 31001; do for _ in $(seq 1 400); do  # ours may build FlashInfer's sampling kernels first
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 1; done; done
  cd /tmp && setsid nohup sh -c "python3 -m adaptive_spec.bench.cli soak --plain http://127.0.0.1:31000 \
    --sut http://127.0.0.1:31001 --sut-pid $P2 --vocab 128256 --duration-s ${SOAK_S:-660} \
    --out $S/soak.json > $S/driver.log 2>&1; touch $S/done" > /dev/null 2>&1 &
  say "soak running (plain pid $P1, ours pid $P2); collect after ~$(( ${SOAK_S:-660} / 60 + 3 )) min" ;;
collect)
  for _ in $(seq 1 $(( $(left) - 30 ))); do [ -f "$S/done" ] && break; sleep 1; done
  cat "$S/driver.log"; cp "$S/soak.json" "$OUT/" 2>/dev/null
  grep -E "adaptive_spec|Traceback|rror" "$S/ours.log" | grep -v "GET /adaptive_spec" | tail -300 > "$OUT/ours-excerpt.log"
  [ -n "${SOAK_TP:-}" ] && python3 "$REPO/scripts/device/rank_check.py" "$S/ours.log" | tee "$OUT/rank-check.txt"
  for p in $(cat "$S/pids" 2>/dev/null); do kill -TERM -- -"$p" 2>/dev/null; done  # frees the GPU
  say "collected" ;;
*) echo "usage: call_soak.sh start|collect"; exit 2 ;;
esac
