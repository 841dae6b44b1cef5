#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, three back-to-back commands (session 4, 2026-11-29), one sweep or
# probe per GPU. Every sweep: same run, one GPU, 192 +-50% new tokens, greedy, a warm-up wave
# per level; four systems on one GPU, KV sized for the in-flight mean.
#   a  the goodput rules of session 3 (CPU-simulated until now) on the GPU:
#      GPU 0: dial 0.9, ours with up to 7 draft steps (the built-in mode's edge at N = 1-4 is
#             its 7 steps), eagle3 the 3-step reference;   GPU 1: the always-wrong draft.
#   b  the MoE testbed (issue 10): Qwen3-MoE layout (128 experts x 768, top-8), 16 layers so
#      four servers fit one H200;  GPU 0: dial 0.7;  GPU 1: always-wrong.
#   c  GPU 0: scripts/device/call_profile_continuous.sh (issue 3: plain vs ours forced off vs
#      ours forced off + SGLang's prefill delayer, N = 128 and 256, torch-profiler summary);
#      GPU 1: the sampling dial (issue 4): static EAGLE-3 on the aligned draft at the
#      temperatures the target's dial file gives for 0.5 / 0.7 / 0.9 (sweeps attached to one
#      server, N = 16 and 64).
#   d  c's probe read its profiles too early, its client shared one 10-connection pool, and
#      parallel starts misjudged free memory: call_profile_continuous.sh again (fixed, N = 128)
#      on GPU 1; GPU 0: b showed ours at N = 1-4 on the MoE pair below plain (drafting off) and
#      below eagle3 (drafting on) by 0.5-1.2 ms a step: plain, ours forced off, eagle3, ours
#      forced on (always-wrong MoE pair), closed batches N = 1, 4 and a 30-step profile at N = 1.
#   e  prepared after the runs, NOT YET RUN: GPU 0: d's MoE probe again, the fourth server
#      given room, and the profile summarised per host thread (adaptive_spec.bench.trace_summary:
#      CUDA runtime calls and syncs, Python self time) to say where our off step's host time
#      goes; GPU 1: a's dial-0.9 sweep again with the session-4 goodput changes.
#   f  prepared after the runs, NOT YET RUN: issue 3's forced-off gap at 64-256 under
#      continuous arrivals, the sweep's own load: plain vs adaptive-spec:forced-off vs the same
#      with `--adaptive-spec-off-path decode-lean` on each GPU (dense always-wrong pair on GPU 0,
#      MoE always-wrong pair on GPU 1), 10-s levels, with `--profile-at 128` (an unmeasured
#      profiled run per system after the level).
#   g  prepared after the runs, NOT YET RUN: GPU 0: the TPOT SLO (issue 5) on the dense dial-0.7
#      pair: plain, eagle3, goodput, goodput with --adaptive-spec-tpot-slo-ms 12 (plain's p50
#      TPOT passes 12 ms between 64 and 128 requests); GPU 1: b's MoE dial-0.7 sweep again with
#      the changed goodput rules.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s4.sh a|b|c|d|e|f|g
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-560}
# GPU-0 probe of d/e: the always-wrong MoE pair (16 layers) served by plain, ours forced off,
# eagle3 and ours forced on, started 25 s apart with the given --mem-fraction-static each
# (SGLang's start-up check counts the servers already resident: d's fourth failed at 0.25);
# closed batches N = 1, 4 (768 tokens, two reps) and a 30-step profile at N = 1 each.
moe_host_probe() {
  local M=/tmp/moe-16r ML="$OUT/moe-servers.log" fr=("$@") names=(plain ours-off eagle3 ours-on) i
  build_pair $M random --preset qwen3-moe --layers 16 || return 3
  local SA=(--max-total-tokens 30000 --max-running-requests 16
            --cuda-graph-backend-decode full --cuda-graph-bs-decode 1 2 4 8 16)
  local OURS=(python3 -m adaptive_spec.launch_server "${EAGLE[@]}" --speculative-draft-model-path $M/draft-random)
  local LAUNCH=(
    "python3 -m sglang.launch_server"
    "${OURS[*]} --adaptive-spec-force off"
    "python3 -m sglang.launch_server ${EAGLE[*]} --speculative-draft-model-path $M/draft-random"
    "${OURS[*]} --adaptive-spec-force on")
  PIDS=()
  for i in 0 1 2 3; do
    [ $i -gt 0 ] && sleep 25
    start_server "${names[$i]}" $((33000 + i)) "$ML" ${LAUNCH[$i]} --model-path $M/target "${SA[@]}" \
      --mem-fraction-static "${fr[$i]}"
    PIDS+=($CUR_PID); CUR_PID=""
  done
  trap 'for p in "${PIDS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done' EXIT
  for i in 0 1 2 3; do
    ( cd scripts/device && python3 closed_probe.py --name "moe-${names[$i]}" --port $((33000 + i)) \
        --pid "${PIDS[$i]}" --vocab 151936 --batches 1 4 --reps 2 --new 768 --profile-n 1 --profile-delay 0.5 \
        --profile-steps 30 --out "$OUT/moe-closed.jsonl" ) 2>&1 | grep "^\[probe"
  done
}

pack_probe_logs() {
  grep -E "adaptive_spec|Traceback|rror" "$OUT/moe-servers.log" | head -100 > "$OUT/moe-servers-excerpt.log"
  tar -cJf "$OUT/servers-logs.tar.xz" -C "$OUT" $(cd "$OUT" && ls servers.log moe-servers.log 2>/dev/null) \
    && rm -f "$OUT/servers.log" "$OUT/moe-servers.log"
}

case "${1:-}" in
a)
  build_two_pairs /tmp/dial-8b dial:0.9 /tmp/soak-8b random --preset 8b
  sweep 0 dial-0.9 /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.9 "$FOUR" \
    --system-steps adaptive-spec:goodput=7 &
  sweep 1 always-wrong /tmp/soak-8b/target /tmp/soak-8b/draft-random "$FOUR" &
  wait
  cat /tmp/metrics-dial-0.9.txt /tmp/metrics-always-wrong.txt > "$OUT/metrics-a.txt"
  grep -h "adaptive_spec decision" /tmp/logs-dial-0.9/*goodput*.log | tail -300 > "$OUT/decisions-dial-0.9.log"
  pack_logs logs-a.tar.xz /tmp/logs-dial-0.9/*.log /tmp/logs-always-wrong/*.log ;;
b)
  build_two_pairs /tmp/moe-16 dial:0.7 /tmp/moe-16r random --preset qwen3-moe --layers 16
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 moe-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 "$FOUR" &
  sweep 1 moe-always-wrong /tmp/moe-16r/target /tmp/moe-16r/draft-random "$FOUR" &
  wait
  cat /tmp/metrics-moe-*.txt > "$OUT/metrics-b.txt"
  pack_logs logs-b.tar.xz /tmp/logs-moe-dial-0.7/*.log /tmp/logs-moe-always-wrong/*.log ;;
c)
  ( export CUDA_VISIBLE_DEVICES=0 N_LIST="128 256"; bash scripts/device/call_profile_continuous.sh ) &
  (
    export CUDA_VISIBLE_DEVICES=1
    build_pair /tmp/dial-8b aligned --preset 8b || exit 3
    start_server eagle3 32000 "$OUT/dial-server.log" python3 -m sglang.launch_server \
      --model-path /tmp/dial-8b/target --speculative-draft-model-path /tmp/dial-8b/draft-aligned \
      "${EAGLE[@]}" "${CUDA_GRAPH[@]}" --mem-fraction-static 0.5 --max-running-requests 64
    for a in 0.5 0.7 0.9; do
      T=$(python3 -c "import json; r=[r for r in json.load(open('/tmp/dial-8b/target/adaptive_spec_dial.json'))['sampling_dial']['rows'] if abs(r['requested']-$a)<1e-6]; print(r[0]['temperature'])")
      ( cd /tmp && python3 -m adaptive_spec.bench.cli sweep --attach eagle3=http://127.0.0.1:32000 \
          --systems eagle3 --target /tmp/dial-8b/target --draft /tmp/dial-8b/draft-aligned \
          --concurrency 16,64 --new-tokens 128 --temperature "$T" --time-budget-s 6 --drain-s 3 \
          --start-timeout-s 300 --deadline-s $(( $(left) - 20 )) --no-plot --quiet \
          --name "sampling-$a" --out "$OUT/sweep-sampling-$a.json" ) 2>&1 | tail -6
    done
    stop_server
  ) &
  wait
  tar -cJf "$OUT/servers-logs.tar.xz" -C "$OUT" servers.log dial-server.log 2>/dev/null \
    && rm -f "$OUT/servers.log" "$OUT/dial-server.log" ;;
d)
  ( export CUDA_VISIBLE_DEVICES=1 N_LIST=128; bash scripts/device/call_profile_continuous.sh ) &
  ( export CUDA_VISIBLE_DEVICES=0; moe_host_probe 0.25 0.25 0.25 0.25 ) &
  wait
  pack_probe_logs ;;
e)  # prepared after the runs, NOT YET RUN (next session, ~9.5 min)
  ( export CUDA_VISIBLE_DEVICES=0; moe_host_probe 0.25 0.35 0.45 0.55 ) &
  (
    export CUDA_VISIBLE_DEVICES=1
    build_pair /tmp/dial-8b dial:0.9 --preset 8b || exit 3
    sweep 1 dial-0.9-rerun /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.9 "$FOUR" \
      --system-steps adaptive-spec:goodput=7
  ) &
  wait
  pack_probe_logs
  pack_logs logs-e.tar.xz /tmp/logs-dial-0.9-rerun/*.log ;;
f)  # prepared after the runs, NOT YET RUN
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b random --preset 8b ) &
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16r random --preset qwen3-moe --layers 16 ) &
  wait
  OFF=(--time-budget-s 10 --time-budget-from 128:10 --concurrency 1,4,64,128,256
       --profile-at 128 --profile-steps 40
       --system-args "adaptive-spec:forced-off-lean=--adaptive-spec-force off --adaptive-spec-off-path decode-lean")
  OFF_SYSTEMS=plain,adaptive-spec:forced-off,adaptive-spec:forced-off-lean
  sweep 0 forced-off /tmp/soak-8b/target /tmp/soak-8b/draft-random $OFF_SYSTEMS "${OFF[@]}" &
  sweep 1 moe-forced-off /tmp/moe-16r/target /tmp/moe-16r/draft-random $OFF_SYSTEMS "${OFF[@]}" &
  wait
  pack_logs logs-f.tar.xz /tmp/logs-forced-off/*.log /tmp/logs-moe-forced-off/*.log ;;
g)  # prepared after the runs, NOT YET RUN
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/dial-8b dial:0.7 --preset 8b ) &
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 ) &
  wait
  sweep 0 slo-dial-0.7 /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-slo12 \
    --system-args "adaptive-spec:goodput-slo12=--adaptive-spec-policy goodput --adaptive-spec-tpot-slo-ms 12" &
  sweep 1 moe-dial-0.7-rerun /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 "$FOUR" &
  wait
  pack_logs logs-g.tar.xz /tmp/logs-slo-dial-0.7/*.log /tmp/logs-moe-dial-0.7-rerun/*.log ;;
*) echo "usage: call_s4.sh a|b|c|d|e|f|g"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
