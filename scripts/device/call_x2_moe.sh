#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, one command (~9.5 min): the MoE testbed of issue 10.
# NOT YET RUN on a GPU (written 2026-11-29, session 2; the checkpoint loads with SGLang
# 0.5.16's Qwen3MoeForCausalLM on CPU and the construction checks out at this shape).
# Target: benchmarks/models.py --preset qwen3-moe with 24 layers (Qwen3-30B-A3B's experts:
# 128 x 768, 8 active; ~29 GiB), drafts dial:0.7 and random. Two same-run sweeps, one per GPU:
#   GPU 0: plain, eagle3, adaptive-spec:goodput          (dial 0.7)
#   GPU 1: plain, builtin-adaptive, adaptive-spec:threshold (dial 0.7)
# Set DRAFT=random for the always-wrong draft. Results: $OUT/moe-*.json/.png.
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-560}
DRAFT=${DRAFT:-dial-0.7}
MOE=/tmp/moe-24
build_pair "$MOE" random,dial:0.7 --preset qwen3-moe --layers 24 || exit 3
say "models built"
COMMON=("${SWEEP_FLAGS[@]}" --warmup-tokens 256 --deadline-s $(( $(left) - 20 ))
        --target "$MOE/target" --draft "$MOE/draft-$DRAFT")
cd /tmp
CUDA_VISIBLE_DEVICES=0 python3 -m adaptive_spec.bench.cli sweep "${COMMON[@]}" \
  --systems plain,eagle3,adaptive-spec:goodput --log-dir /tmp/logs-moe-a \
  --out "$OUT/moe-$DRAFT-goodput.json" > "$OUT/a.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 python3 -m adaptive_spec.bench.cli sweep "${COMMON[@]}" \
  --systems plain,builtin-adaptive,adaptive-spec:threshold --log-dir /tmp/logs-moe-b \
  --out "$OUT/moe-$DRAFT-builtin-threshold.json" > "$OUT/b.txt" 2>&1 &
wait
cat "$OUT/a.txt" "$OUT/b.txt"; tail -5 "$OUT/build.log"
pack_logs logs.tar.xz /tmp/logs-moe-*/*.log
rm -f "$OUT/a.txt" "$OUT/b.txt" "$OUT/build.log"
say "done"
