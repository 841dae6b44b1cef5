#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 17 (2026-11-30). After call_s16.sh fl (the threshold
# floor on the GPU: 0.997x / 1.004x / 0.997x of max(plain, eagle3) at 1 / 4 / 16 with the 0.5
# draft; with the always-wrong draft 0.971x / 0.971x / 0.942x of plain):
#   tg (~9 min) GPU 0: the always-wrong draft at 1 / 4 / 16 requests, plain, forced off and
#      threshold (re-probes now back off: 256, 512, ... 2,048 steps apart), 3 paired repeats:
#      what is left of the gap is the off step's own cost (forced off) or the re-probes'.
#      GPU 1: issue 5 at 128 / 256 (dial 0.7): plain, eagle3, goodput, 3 repeats, 12-s
#      windows (call_s16.sh g2), with the rows' CPU use per process (is a client or a server
#      front-end saturated at 256?). Phase clocks on for both.
#   fe (~9 min) whether SGLang's HTTP front-end caps the busy levels (tg: a plain server's
#      front-end process used 0.76-0.82 of a core at 256 requests on the dense pair, one stream
#      event per token; a drafting server sends ~2.5 tokens per event, so a saturated front-end
#      favours drafting): the MoE layout (its plain server steps ~2.5x faster than the dense
#      one's) at 64 / 128 / 256 requests, plain, eagle3, goodput, 2 repeats, 10-s windows;
#      GPU 0 streamed as every sweep so far, GPU 1 the same with non-streamed requests.
#   pf (~6 min; the session's last 460 device seconds) the goodput policy with its prefill term
#      (policy/prefill_load.py; fe found the MoE layout's plain steps at 128 requests spent
#      more time in prefill batches than in decoding): plain, eagle3, goodput at 128 / 256,
#      2 repeats, 10-s windows; GPU 0 the MoE layout (dial 0.7), GPU 1 the dense pair (dial 0.7,
#      where plain wins at 128-256: the term must not turn drafting on there).
#   p2 (~9 min; prepared for the next session, not run) pf again on the code after it: the
#      prefill term counts steady load only (a burst of new requests while the batch grows is
#      left out); 64 / 128 / 256 requests, 3 repeats, both pairs, plus the prefill table.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s17.sh tg|fe|pf|p2
source scripts/device/common.sh

GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"

# plain, eagle3 and goodput on the MoE layout (GPU 0) and the dense pair (GPU 1), both dial 0.7,
# then their report: $1 the names' prefix, rest: sweep flags (levels, repeats, windows)
moe_and_dense() {
  local prefix=$1 p0 p1; shift
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  RUN_FLAGS+=(--start-timeout-s 300)
  local flags=(plain,eagle3,adaptive-spec:goodput "$@" --system-args "$GOODPUT")
  sweep 0 "$prefix-moe" /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 "${flags[@]}" > "/tmp/tail-$prefix-moe.txt" &
  sweep 1 "$prefix-dense" /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "${flags[@]}" > "/tmp/tail-$prefix-dense.txt"
  wait; report "$prefix-" "logs-$prefix.tar.xz" "/tmp/tail-$prefix-moe.txt" "/tmp/tail-$prefix-dense.txt"
}
case "${1:-}" in
tg)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1
  build_two_pairs /tmp/rw-8b random /tmp/soak-8b dial:0.7 --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep 0 low-random /tmp/rw-8b/target /tmp/rw-8b/draft-random \
    plain,adaptive-spec:forced-off,adaptive-spec:threshold --concurrency 1,4,16 --repeat 3 \
    --time-budget-s 6 > /tmp/tail-low-random.txt &
  sweep 1 busy-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 128,256 --repeat 3 --time-budget-s 12 \
    --time-budget-from 256:12 --system-args "$GOODPUT" > /tmp/tail-busy-dial-0.7.txt
  wait
  cat /tmp/tail-low-random.txt /tmp/tail-busy-dial-0.7.txt | grep -v "^\s*$" | tail -70
  reentry_table "$OUT"/sweep-low-random.json "$OUT"/sweep-busy-dial-0.7.json
  cpu_table "$OUT"/sweep-low-random.json "$OUT"/sweep-busy-dial-0.7.json
  phases /tmp/logs-low-random; phases /tmp/logs-busy-dial-0.7
  log_report logs-tg.tar.xz /tmp/logs-low-random/*.log /tmp/logs-busy-dial-0.7/*.log ;;
fe)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 ) \
    || { tail -30 "$OUT/build.log"; exit 3; }
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  RUN_FLAGS+=(--start-timeout-s 360)
  FE=(plain,eagle3,adaptive-spec:goodput --concurrency 64,128,256 --repeat 2 --time-budget-s 10
      --time-budget-from 128:10,256:10 --system-args "$GOODPUT")
  sweep 0 fe-stream /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 "${FE[@]}" > /tmp/tail-fe-stream.txt &
  sweep 1 fe-nostream /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 "${FE[@]}" --no-stream \
    > /tmp/tail-fe-nostream.txt
  wait; report fe- logs-fe.tar.xz /tmp/tail-fe-stream.txt /tmp/tail-fe-nostream.txt ;;
pf)
  export DEADLINE_S=${DEADLINE_S:-380} ADAPTIVE_SPEC_WARM_SAMPLING=0
  moe_and_dense pf --concurrency 128,256 --repeat 2 --time-budget-s 10 --time-budget-from 128:10,256:10 ;;
p2)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  moe_and_dense p2 --concurrency 64,128,256 --repeat 3 --time-budget-s 8 --time-budget-from 128:8,256:8
  python3 - "$OUT"/sweep-p2-*.json <<'PY'
import json, sys
for path in sys.argv[1:]:  # the goodput server's prefill table at the end: ms per step, new per step, tokens
    fs = json.load(open(path))["systems"]["adaptive-spec:goodput"].get("final_status") or [{}]
    print(path, json.dumps((fs[0].get("cost_model") or {}).get("prefill_ms_admitted_tokens_per_step")))
PY
  ;;
*) echo "usage: call_s17.sh tg|fe|pf|p2"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
