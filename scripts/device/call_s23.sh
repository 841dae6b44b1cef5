#!/usr/bin/env bash
# Session 23. One H200 each:
#   px (~7 min) issue 5's dial-0.7 gap at 64 / 128 requests (session 22: goodput 0.92x of plain
#      while off on every steady step; forced off 0.994x at 128 in another run): plain, forced
#      off and goodput, 3 paired repeats, the phase clocks in 1-s windows, so the windows where
#      goodput did not draft can be set against plain's and forced-off's at the same load
#      (prefills per decode step, ms per decode step by phase).
#   bx (~6 min) issue 5's ">= 2x SGLang's built-in adaptive mode at 128 / 256" (last run in session
#      15, one pass: 1.90x / 2.15x): plain, built-in, goodput at 128 / 256, dial 0.7, 2 paired
#      repeats.
#   tw (~2 min) a diagnostic: the plain server at 256 requests (dial-0.9 pair) with four tokenizer
#      workers, 2 repeats (session 22's pw: one front-end process at 0.88-0.96 of a core).
#   gt (~4 min) issue 6: the greedy kernel's launch knobs by GPU time (CUDA graph of 20 calls),
#      61 configurations x 8 shapes, each checked against SGLang's outputs, beside SGLang's path
#      and torch's amax (session 22: 28.7 us vs SGLang's 50.3 at B = 64, k = 3, V = 128,256).
#   gf (~3 min) issue 6: gt's finalists and the default over the whole grid (36 shapes), drafts
#      accepted w.p. 0.7 and 1.0, by GPU time: the new default must be never slower.
#   kn (~4 min) issue 6 on the new greedy default (32 programs per SM from 256 rows, slices of
#      >= 8,192): gf again (new default beside the old, 8 per SM) and session 22's kg (the whole
#      grid against SGLang's path, per call and by GPU time).
#   p2 (~6 min) px at 256 requests, 2 paired repeats (bx: goodput 0.745x / 0.820x of plain at 256
#      while off on the steady steps, 560 decode steps a level against plain's 560-720).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s23.sh px
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
case "${1:-}" in
px)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 px-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 64,128 --repeat 3 \
    --time-budget-s 8 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" \
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-px.txt
  report px- logs-px.tar.xz /tmp/tail-px.txt
  ( cd /tmp && python3 -m adaptive_spec.bench.phase_summary --bands 48-64,96-128 \
      /tmp/logs-px-dense/server-*.log ) > "$OUT/phases-px.txt" 2>&1
  tail -12 "$OUT/phases-px.txt"
  goodput_cost_model "$OUT"/sweep-px-dense.json
  ;;
p2)
  export DEADLINE_S=${DEADLINE_S:-480} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 p2-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 256 --repeat 2 \
    --time-budget-s 8 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" \
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-p2.txt
  report p2- logs-p2.tar.xz /tmp/tail-p2.txt
  ( cd /tmp && python3 -m adaptive_spec.bench.phase_summary --bands 160-256,96-159 \
      /tmp/logs-p2-dense/server-*.log ) > "$OUT/phases-p2.txt" 2>&1
  tail -8 "$OUT/phases-p2.txt"
  ;;
bx)
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 bx-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,builtin-adaptive,adaptive-spec:goodput --concurrency 256,128 --repeat 2 \
    --time-budget-s 6 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/tail-bx.txt
  report bx- logs-bx.tar.xz /tmp/tail-bx.txt
  ;;
gt)
  export DEADLINE_S=${DEADLINE_S:-330}
  ( cd /tmp && timeout 300 python3 "$REPO/benchmarks/greedy_tune.py" --budget-s 250 \
      --out "$OUT/greedy-tune.json" 2>&1 | tail -15 )
  python3 - "$OUT/greedy-tune.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
shapes = sorted({(r["bs"], r["k"], r["vocab"]) for r in d["rows"]}, key=lambda s: (s[2], s[1], s[0]))
for s in shapes:
    rs = [r for r in d["rows"] if (r["bs"], r["k"], r["vocab"]) == s]
    sg = next(r["us_median"] for r in rs if r["impl"] == "sglang")
    amax = next(r["us_median"] for r in rs if r["impl"] == "torch")
    ours = sorted((r for r in rs if r["impl"].startswith("triton")), key=lambda r: r["us_median"])
    default = next(r for r in rs if r["impl"] == "triton[default]")
    print(f"B={s[0]} k={s[1]} V={s[2]}: sglang {sg} us, amax {amax} us, default {default['us_median']} us"
          f" ({sg / default['us_median']:.2f}x), all identical: {all(r['identical_to_sglang'] for r in ours)}")
    for r in ours[:4]:
        print(f"    {r['impl']}: {r['us_median']} us ({sg / r['us_median']:.2f}x)")
print("errors:", len(d["errors"]), [e["error"][:80] for e in d["errors"][:3]])
PY
  ;;
kn)
  bash scripts/device/call_s23.sh gf && bash scripts/device/call_s22.sh kg
  exit $?
  ;;
gf)
  export DEADLINE_S=${DEADLINE_S:-330}
  ( cd /tmp && timeout 300 python3 "$REPO/benchmarks/greedy_tune.py" --budget-s 250 --finalists \
      --accept 0.7,1.0 --out "$OUT/greedy-finalists.json" 2>&1 | tail -5 )
  python3 - "$OUT/greedy-finalists.json" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
points = {}
for r in d["rows"]:
    points.setdefault((r["bs"], r["k"], r["vocab"], r["scenario"]), {})[r["impl"]] = r
impls = sorted({i for p in points.values() for i in p if i.startswith("triton")})
for impl in impls:
    vs_default, vs_sglang, worse = [], [], []
    for key, p in points.items():
        if impl in p:
            vs_default.append(p["triton[default]"]["us_median"] / p[impl]["us_median"])
            vs_sglang.append(p["sglang"]["us_median"] / p[impl]["us_median"])
            if vs_default[-1] < 0.97:
                worse.append((key, round(vs_default[-1], 3)))
    print(f"{impl}: vs default min {min(vs_default):.3f} median {statistics.median(vs_default):.3f} "
          f"max {max(vs_default):.3f}; vs sglang min {min(vs_sglang):.2f} median {statistics.median(vs_sglang):.2f}; "
          f">3% slower than default at {len(worse)} of {len(vs_default)} {worse[:4]}; "
          f"identical {all(p[impl]['identical_to_sglang'] for p in points.values() if impl in p)}")
for key in sorted(points):
    if key[:3] == (64, 3, 128256):
        p = points[key]
        print(key, "sglang", p["sglang"]["us_median"], {i: p[i]["us_median"] for i in impls})
print("errors:", len(d["errors"]), [e["error"][:80] for e in d["errors"][:3]])
PY
  ;;
tw)
  bash scripts/device/call_s22.sh tw
  exit $?
  ;;
*) echo "usage: call_s23.sh px|p2|bx|gt|gf|kn|tw"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
