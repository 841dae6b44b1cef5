#!/usr/bin/env bash
# Session 27. One H200 each:
#   ms (~6 min) issue 10's stall at one request (sessions 16 and 26: a ~2-s stall at a k = 1
#      refresh's re-entry, 0.66x / 0.67x of plain): the MoE layout (16 layers) with the
#      always-wrong draft at 1 request, 3 pairs of plain, goodput, and goodput with the extend
#      warm-up (`--warmups adaptive_spec_extend`: one-token prefills of 15-4088 tokens before the
#      server listens). Then every slow full catch-up the servers logged, with its target / draft
#      split, and the Triton and TVM-FFI kernels built while the sweep ran (the caches' new
#      entries, with their times, against the log's stall): whether the stall is a kernel build.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s27.sh ms
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
WARM="adaptive-spec:goodput-warm=--adaptive-spec-policy goodput --warmups adaptive_spec_extend"
# kernels built after $1 (a marker file) in the JIT caches, oldest first, with their times
built_since() {
  find "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR" -newer "$1" -type f \( -name '*.json' -o -name '*.so' \) \
    ! -name '__grp__*' -printf '%TT %P\n' 2>/dev/null | sort | cut -c1-8,20- | head -${2:-60}
}
case "${1:-}" in
ms)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 360)
  touch /tmp/marker-ms
  sweep 0 ms-moe-random /tmp/moe-16/target /tmp/moe-16/draft-random \
    plain,adaptive-spec:goodput,adaptive-spec:goodput-warm --concurrency 1 --repeat 3 --time-budget-s 6 \
    --system-args "$GOODPUT" --system-args "$WARM" > /tmp/tail-ms.txt
  report ms- logs-ms.tar.xz /tmp/tail-ms.txt
  grep -H "full catch-up of\|extend kernels warmed\|Running warmup\|Warmup ended" /tmp/logs-ms-moe-random/*.log \
    | sed 's|/tmp/logs-ms-moe-random/||' | cut -c1-260 | head -30
  python3 - "$OUT"/sweep-ms-moe-random.json <<'PY'
import json, sys
for name, s in json.load(open(sys.argv[1]))["systems"].items():
    for rank in (s.get("final_status") or [])[:1]:
        print(name, "full catch-up", json.dumps((rank.get("reentry") or {}).get("full_catchup")))
PY
  say "kernels built during the sweep (cache time, entry):"
  built_since /tmp/marker-ms 80 | tee "$OUT/built-ms.txt"
  ;;
*)
  say "usage: $0 ms"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
