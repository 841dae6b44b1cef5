#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, one command (~8 min): two same-run side-by-side sweeps at once,
# one per GPU, each complete on its own GPU (its systems measured one after another).
#   GPU 0: acceptance-dial draft 0.7 (benchmarks/models.py pair, built here): plain, eagle3,
#          builtin-adaptive, adaptive-spec:goodput; every server with --enable-metrics and a
#          /metrics excerpt after every level.
#   GPU 1: always-wrong draft (make_models.py pair): plain, eagle3, adaptive-spec:goodput,
#          adaptive-spec:threshold (threshold 64, acceptance floor 1.5).
# Results under $OUT: sweep-*.json/.png, metrics-dial07.txt, logs.tar.xz.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_x2_sweeps.sh
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-500}
DIAL=/tmp/dial-8b
( export CUDA_VISIBLE_DEVICES=1; build_models ) >> "$OUT/build.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=0; build_pair "$DIAL" aligned,random,dial:0.7 --preset 8b ) &
wait
[ -f "$MODELS/.done" ] && build_pair "$DIAL" aligned,random,dial:0.7 --preset 8b || exit 3
say "models built"
COMMON=("${SWEEP_FLAGS[@]}" --deadline-s $(( $(left) - 20 )))
cd /tmp
CUDA_VISIBLE_DEVICES=0 python3 -m adaptive_spec.bench.cli sweep "${COMMON[@]}" \
  --target "$DIAL/target" --draft "$DIAL/draft-dial-0.7" --name dial-0.7 \
  --systems plain,eagle3,builtin-adaptive,adaptive-spec:goodput --server-arg=--enable-metrics \
  --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions" \
  --metrics-out "$OUT/metrics-dial07.txt" \
  --log-dir /tmp/logs-dial --out "$OUT/sweep-dial-0.7.json" > "$OUT/sweep-dial-0.7.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 python3 -m adaptive_spec.bench.cli sweep "${COMMON[@]}" \
  --target "$MODELS/target" --draft "$MODELS/draft-random" --name always-wrong \
  --systems plain,eagle3,adaptive-spec:goodput,adaptive-spec:threshold \
  --system-args "adaptive-spec:threshold=--adaptive-spec-threshold 64 --adaptive-spec-min-accept-len 1.5" \
  --log-dir /tmp/logs-wrong --out "$OUT/sweep-always-wrong.json" > "$OUT/sweep-always-wrong.txt" 2>&1 &
wait
cat "$OUT/sweep-always-wrong.txt" "$OUT/sweep-dial-0.7.txt"
pack_logs logs.tar.xz /tmp/logs-wrong/*.log /tmp/logs-dial/*.log
rm -f "$OUT/build.log" "$OUT/sweep-always-wrong.txt" "$OUT/sweep-dial-0.7.txt"
say "done"
