#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, three back-to-back commands (the machine stays held between them;
# the soak outlasts one command, so it runs detached from b to c). Session 3, 2026-11-29.
#   a  GPU 0: sweep at acceptance dial 0.5      GPU 1: sweep with the always-wrong draft
#   b  GPU 0: sweep at acceptance dial 0.9      GPU 1: soak start (10 min, threshold policy)
#   c  GPU 0: step load 1 -> 128 -> 1 (plain, goodput; decision log)   GPU 1: soak collect
# Every sweep: plain, eagle3, builtin-adaptive, adaptive-spec:goodput, same run, one GPU, with
# per-request output lengths spread +-50% (streams out of lockstep), a 128-token warm-up wave
# per level (the online policy learns each batch bucket there), longer levels at 128 and 256.
#   d  a and b's goodput server ran out of GPU memory (four servers on one GPU, KV sized for the
#      longest request): GPU 0 dial 0.9 and GPU 1 always-wrong again, KV sized for the mean
#      (run with WARMUP=64 BUDGET_FROM=256:5 DEADLINE_S=440 to fit the session's last minutes)
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s3.sh a|b|c|d
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-570}
DIAL=/tmp/dial-8b; SOAKD=/tmp/soak-8b
FOUR=plain,eagle3,builtin-adaptive,adaptive-spec:goodput
S3_FLAGS=(--new-tokens-spread 0.5 --warmup-tokens ${WARMUP:-128} --time-budget-from ${BUDGET_FROM:-128:7,256:8}
  --server-arg=--enable-metrics --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions")

sweep() {  # $1 GPU, $2 name, $3 pair dir, $4 draft dir name, $5 systems
  ( cd /tmp && CUDA_VISIBLE_DEVICES=$1 python3 -m adaptive_spec.bench.cli sweep "${SWEEP_FLAGS[@]}" \
      "${S3_FLAGS[@]}" --deadline-s $(( $(left) - 25 )) --target "$3/target" --draft "$3/$4" \
      --name "$2" --systems "$5" --metrics-out "/tmp/metrics-$2.txt" --log-dir "/tmp/logs-$2" \
      --out "$OUT/sweep-$2.json" > "/tmp/sweep-$2.txt" 2>&1 )
  tail -25 "/tmp/sweep-$2.txt"
}

# GPU 0: the dial pair (drafts $2) and sweep $4; GPU 1: the soak pair (drafts $3) with the
# always-wrong sweep. Both sweeps at once, then their /metrics scrapes and logs under $OUT.
two_sweeps() {  # $1 phase, $2 GPU-0 drafts, $3 GPU-1 drafts, $4 GPU-0 sweep (its draft: draft-$4)
  ( export CUDA_VISIBLE_DEVICES=0; build_pair "$DIAL" "$2" --preset 8b ) &
  ( export CUDA_VISIBLE_DEVICES=1; build_pair "$SOAKD" "$3" --preset 8b ) &
  wait
  [ -f "$DIAL/draft-$4/model.safetensors" ] && [ -f "$SOAKD/draft-random/model.safetensors" ] \
    || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  sweep 0 "$4" "$DIAL" "draft-$4" "$FOUR" &
  sweep 1 always-wrong "$SOAKD" draft-random "$FOUR" &
  wait
  cat "/tmp/metrics-$4.txt" /tmp/metrics-always-wrong.txt > "$OUT/metrics-$1.txt"
  pack_logs "logs-$1.tar.xz" "/tmp/logs-$4"/*.log /tmp/logs-always-wrong/*.log
}

case "${1:-}" in
a) two_sweeps a dial:0.5,dial:0.9 random,dial:0.7 dial-0.5 ;;
b)
  ( SOAK_GPU=1 SOAK_DIR=$SOAKD SOAK_S=600 bash scripts/device/call_soak.sh start > /tmp/soak-start.txt 2>&1 ) &
  sweep 0 dial-0.9 "$DIAL" draft-dial-0.9 "$FOUR"
  wait; cat /tmp/soak-start.txt
  cp /tmp/metrics-dial-0.9.txt "$OUT/metrics-b.txt"
  pack_logs logs-b.tar.xz /tmp/logs-dial-0.9/*.log ;;
c)
  step_load "$SOAKD" &
  SOAK_DIR=$SOAKD bash scripts/device/call_soak.sh collect
  wait
  pack_logs logs-c.tar.xz /tmp/logs-step/*.log ;;
d) two_sweeps d dial:0.9 random dial-0.9 ;;  # a and b's goodput servers ran out of memory
*) echo "usage: call_s3.sh a|b|c|d"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
