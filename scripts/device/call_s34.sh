#!/usr/bin/env bash
# Session 34. One H200 each. Session 33 found that sweeps had run prefill CUDA graphs off on every
# server since session 1 (SGLang 0.5.16's default is `breakable`) and fixed our plain prefills,
# which missed the graph; every ratio of sessions 1-32 was measured without them. These modes
# measure issue 5's asks again on SGLang's defaults (breakable prefill graphs on every server),
# dense 8B pair, dial 0.7, --stream-interval 4, schedulers pinned, lossless checked per row:
#   hi (~9 min) plain, eagle3, SGLang's built-in adaptive and goodput at 128 / 256, 3 passes:
#      goodput against max(plain, eagle3) and against the built-in mode (>= 2x asked; 1.854x /
#      2.280x in session 31, graphs off).
#   lo (~8 min) plain, eagle3 and goodput at 1 / 32 / 64, 2 passes: the low-load side and the
#      crossover band (1.03x asked; not measured since session 26).
#   sw (~6 min) lo's crossover band found goodput at 0.88x / 0.91x of plain at 64 requests (EAGLE-3
#      0.96x / 0.93x), its off steps as cheap as plain's, with 7 switches from off to drafting
#      in one steady window: a catch-up the policy priced at nothing. It now learns what a
#      switch on costs per batch size (policy/switch_cost.py) and turns drafting on only where
#      that pays back. Plain, eagle3 and goodput at 32 / 64, 3 passes.
#   fx (~7 min, written after the session's device minutes ran out, not run) the crossover band
#      after two CPU-tested changes: a prefill no longer counts the finished requests SGLang still
#      holds (`230b641`: at 32 requests 8-16 prefills a window had run plain into the drafting
#      batch) and the stalled-switch guards (`10c9a9c`). Plain, eagle3 and goodput at 16 / 32 /
#      64, 2 passes: prefill-plain and catch-ups in goodput's steady windows at 32 (~0 expected).
#   pm (~7 min) issue 10: session 32's MoE run (Qwen3-MoE layout, dial 0.7, 4 / 16, empty
#      caches) with breakable prefill graphs.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s34.sh hi|lo|sw|fx|pm
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"

case "${1:-}" in
hi|lo|sw|fx)
  dense_pinned_setup $1
  if [ "$1" = hi ]; then
    sweep 0 hi-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "$FOUR" \
      --concurrency 128,256 --repeat 3 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-hi.txt
  elif [ "$1" = fx ]; then
    sweep 0 fx-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
      --concurrency 16,32,64 --repeat 2 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-fx.txt
  elif [ "$1" = sw ]; then
    sweep 0 sw-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
      --concurrency 32,64 --repeat 3 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-sw.txt
  else
    sweep 0 lo-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
      --concurrency 1,32,64 --repeat 2 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-lo.txt
  fi
  report $1- logs-$1.tar.xz /tmp/tail-$1.txt
  # SGLang's decode rate and prefill batches per level (prefills_past_level: the finished requests
  # SGLang still held beside a prefill); from /tmp, as `phases`
  ( cd /tmp && python3 -m adaptive_spec.bench.log_throughput /tmp/logs-$1-dense/server-*.log ) | grep -v ",0,,0,0,0$"
  for f in /tmp/logs-$1-dense/server-*.log; do  # prefills through the graph, per server
    echo "$(basename $f): prefills by 'cuda graph:' $(grep "Prefill batch" $f | grep -o "cuda graph: [A-Za-z]*" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
  done
  phases /tmp/logs-$1-dense --bands 160-256,96-159,48-95,24-47 --max-ms-per-step 40 | tail -12
  goodput_cost_model "$OUT"/sweep-$1-dense.json
  core_probe $1-after > /dev/null
  ;;
pm)
  PREFILL_GRAPH=$PREFILL_GRAPH DEADLINE_S=${DEADLINE_S:-540} exec bash "$REPO/scripts/device/call_s32.sh" pm
  ;;
*)
  say "usage: $0 hi|lo|sw|fx|pm"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
