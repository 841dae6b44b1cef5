#!/usr/bin/env bash
# GPU machine nvidia-h200-x2 (two H200s: lent in session 20, 2026-12-01).
#   t2 (~9 min) issue 9: the same-run TP = 2 sweep on the current code (session 18's `t2` ran
#      before the goodput changes of sessions 18-19 on one GPU): plain, eagle3, goodput at 1 /
#      16 / 64 / 128 / 256, dial 0.7, 2 paired repeats, with longer steady windows at 64-256
#      (8-9 s instead of 5-6: session 18's 128 / 256 levels held ~100-200 of their requests in
#      decode, one request lifetime); the goodput table after every level (`level_cost_model`);
#      lossless vs plain; the two ranks' decision digests compared.
#   td (~9 min) issue 9, where TP = 2 loses (t2 ran goodput at 0.94-0.95x of EAGLE-3 at 16 requests
#      on k = 3 every steady step, and at 0.81-1.02x of plain at 128-256 off on every steady
#      step): plain, eagle3, forced on, forced off, goodput at 16 and 128, 3 paired repeats, on
#      the code with the asynchronous policy sync (the blocking all-reduce read 1.4 ms at p99).
#   gg (~8 min) issue 5's dial-0.5 and dial-0.9 columns at once, one per GPU (call_s19.sh g5 / g9
#      on one GPU each): plain, eagle3, goodput at 1 / 16 / 64 / 256, 2 pairs.
#   wm (~8 min) GPU 0: issue 5's always-wrong column on the goodput code of 4f52a1d (not yet run
#      on a GPU; call_s19.sh gw). GPU 1: issue 10's MoE layout (16 layers, dial 0.7) at 1 / 16 /
#      64 in 3 paired repeats (call_s16.sh mp's first half, never run). Then on GPU 0, issue 3's
#      full catch-up under sampling (never run on a GPU): EAGLE-3 and drafting forced to flap
#      every 8 steps, temperature 0.7 + top-p 0.9, 16 / 64 requests, one pass; the acceptance by
#      round since re-entry is in the report.
#   ws (~8 min) wm's GPU-0 half alone (one GPU: x2 was no longer lent after t2).
#   fs (~7 min) issue 3's full catch-up under sampling (ws's flapping every 8 steps re-entered
#      through SGLang's catch-up, auto's choice under 32 stale positions): EAGLE-3, flapping every
#      8 steps with the full catch-up forced, flapping every 64 (auto: full), temperature 0.7 +
#      top-p 0.9, 16 / 64 requests; then issue 6's top-p probe (call_s19.sh kp, fixed since).
#   sl (~4 min; prepared, not run) issue 5's step load 1 -> 128 -> 1 with the follow record.
#   w6 (~4 min) ws's 64-request level again (goodput 0.727x / 0.974x of plain, off throughout):
#      plain, forced off, goodput on the always-wrong pair, 3 pairs.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s20.sh t2|td|gg|wm|ws|fs|w6|sl
source scripts/device/common.sh

GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"

# GPU 0: goodput's always-wrong column, then the full catch-up under sampling (flapping every 8
# steps against EAGLE-3, temperature 0.7 + top-p 0.9)
wrong_then_flap() {
  sweep 0 wm-random /tmp/rw-8b/target /tmp/rw-8b/draft-random plain,adaptive-spec:goodput \
    --concurrency 1,16,64,256 --repeat 2 --time-budget-s 5 --time-budget-from 256:6 \
    --system-args "$GOODPUT" > /tmp/tail-wm-random.txt
  sweep 0 wm-flap-sampling /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 eagle3,adaptive-spec:flap8 \
    --concurrency 16,64 --time-budget-s 6 --temperature 0.7 --top-p 0.9 --warmup-tokens 64 \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" > /tmp/tail-wm-flap.txt
}
case "${1:-}" in
t2)
  export DEADLINE_S=${DEADLINE_S:-565} ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0 ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) || exit 3
  say "model built"
  sweep 0,1 tp2-long /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --server-arg "--tp-size 2" --concurrency 1,16,64,128,256 \
    --repeat 2 --time-budget-s 4 --time-budget-from 16:5,64:8,128:9,256:9 --system-args "$GOODPUT" \
    > /tmp/tail-tp2-long.txt
  report tp2- logs-t2.tar.xz /tmp/tail-tp2-long.txt
  for f in /tmp/logs-tp2-long/server-adaptive-spec_*.log; do python3 "$REPO/scripts/device/rank_check.py" "$f"; done
  goodput_cost_model "$OUT"/sweep-tp2-long.json
  ;;
td)  # with the phase clocks on in every server (wall ms per decode step by scheduler phase, a level
     # = one busy window): where a TP = 2 step of ours spends what EAGLE-3's / plain's does not
  export DEADLINE_S=${DEADLINE_S:-565} ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0 ADAPTIVE_SPEC_WARM_SAMPLING=0
  export ADAPTIVE_SPEC_PHASE_TIMING=1
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) || exit 3
  say "model built"
  sweep 0,1 tp2-paths /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:forced-on,adaptive-spec:forced-off,adaptive-spec:goodput \
    --server-arg "--tp-size 2" --concurrency 16,128 --repeat 3 --time-budget-s 5 \
    --time-budget-from 128:7 --system-args "$GOODPUT" > /tmp/tail-tp2-paths.txt
  report tp2- logs-td.tar.xz /tmp/tail-tp2-paths.txt
  phases /tmp/logs-tp2-paths
  for f in /tmp/logs-tp2-paths/server-adaptive-spec_goodput.log; do python3 "$REPO/scripts/device/rank_check.py" "$f"; done
  python3 - "$OUT"/sweep-tp2-paths.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["systems"]["adaptive-spec:goodput"].get("final_status") or []:
    print("goodput decide us", {k: r.get(k) for k in ("decide_us_mean", "decide_us_p50", "decide_us_p99")})
PY
  ;;
gg)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/d5-8b dial:0.5 /tmp/d9-8b dial:0.9 --preset 8b
  sweep_two g- logs-gg.tar.xz dial-0.5 /tmp/d5-8b/draft-dial-0.5 dial-0.9 /tmp/d9-8b/draft-dial-0.9 \
    plain,eagle3,adaptive-spec:goodput --concurrency 1,16,64,256 --repeat 2 --time-budget-s 5 \
    --time-budget-from 256:6 --system-args "$GOODPUT"
  goodput_cost_model "$OUT"/sweep-g-*.json
  ;;
wm)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/rw-8b random --preset 8b \
      && build_pair /tmp/soak-8b dial:0.7 --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  wrong_then_flap &
  sweep 1 wm-moe /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
    --concurrency 1,16,64 --repeat 3 --time-budget-s 6 --start-timeout-s 360 \
    --system-args "$GOODPUT" > /tmp/tail-wm-moe.txt
  wait
  report wm- logs-wm.tar.xz /tmp/tail-wm-random.txt /tmp/tail-wm-flap.txt /tmp/tail-wm-moe.txt
  goodput_cost_model "$OUT"/sweep-wm-*.json
  ;;
ws)  # wm's GPU-0 half alone, on a machine of one GPU
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( build_pair /tmp/rw-8b random --preset 8b && build_pair /tmp/soak-8b dial:0.7 --preset 8b ) \
    || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  wrong_then_flap
  report wm- logs-ws.tar.xz /tmp/tail-wm-random.txt /tmp/tail-wm-flap.txt
  goodput_cost_model "$OUT"/sweep-wm-random.json
  ;;
fs)  # issue 3: the FULL catch-up under sampling (ws's flap8 re-entered through SGLang's catch-up:
     # 8 stale positions a request, under auto's 32), then issue 6's top-p probe
  export DEADLINE_S=${DEADLINE_S:-500} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 fs-sampling /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    eagle3,adaptive-spec:flap8-full,adaptive-spec:flap64 --concurrency 16,64 --time-budget-s 6 \
    --temperature 0.7 --top-p 0.9 --warmup-tokens 64 \
    --system-args "adaptive-spec:flap8-full=--adaptive-spec-force flap:8 --adaptive-spec-catchup full" \
    --system-args "adaptive-spec:flap64=--adaptive-spec-force flap:64" > /tmp/tail-fs.txt
  report fs- logs-fs.tar.xz /tmp/tail-fs.txt
  say "sweep done"
  ( cd /tmp && timeout $(( $(left) - 15 )) python3 "$REPO/scripts/device/topp_tail_probe.py" 6 ) 2>&1 \
    | grep -v -e UserWarning -e "tl.where" | tee "$OUT/topp-tail-probe.txt"
  ;;
w6)  # ws's 64-request level again (goodput read 0.727x / 0.974x of plain there, off on every
     # steady step): plain, forced off, goodput on the always-wrong pair, 3 pairs, 6-s windows
  export DEADLINE_S=${DEADLINE_S:-300} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/rw-8b random --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 w6-random /tmp/rw-8b/target /tmp/rw-8b/draft-random \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 64 --repeat 3 \
    --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-w6.txt
  report w6- logs-w6.tar.xz /tmp/tail-w6.txt
  ;;
sl)  # issue 5's step load 1 -> 128 -> 1 (15 s a phase; last run in session 3): plain and goodput,
     # then how many decisions after each size change goodput's choice moved (status `follow`)
  export DEADLINE_S=${DEADLINE_S:-300} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  step_load_follow /tmp/soak-8b logs-sl.tar.xz
  ;;
*) echo "usage: call_s20.sh t2|td|gg|wm|ws|fs|w6|sl"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
