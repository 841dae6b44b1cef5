"""Tables from the phase clocks' log lines (ADAPTIVE_SPEC_PHASE_TIMING=1, see
adaptive_spec/sglang_plugin/phase_timing.py): one row per busy window (a sweep level) of each
server log, wall ms per decode step by phase, so plain and ours line up level by level.

  python -m adaptive_spec.bench.phase_summary [--json OUT] [--vs plain] [--bands 48-64,96-128 [--fit]
      [--max-ms-per-step 40] [--drafting] [--per-call]] server-*.log

`--bands LO-HI,...` adds one pooled row per server and band of mean running requests, over the
windows where the server did not draft (`drafting_steps=0`; short windows come from
ADAPTIVE_SPEC_PHASE_WINDOW_S): the steady middle of a level, where ours runs plain, against
plain's, without the ramp-up and drain in which ours drafts on purpose. `--fit` (with --bands)
splits the same windows' time into a cost per decode step and a cost per prefill, by least
squares over the windows (wall ms = a x decode steps + b x prefills; the same for the target's
forward call), because a server can have dearer steps or just more prefills per step (session
32: at 128 requests ours ran 0.29-0.39 prefills a decode step, eager, 22-29 ms of host time each).
`--max-ms-per-step MS` leaves windows slower than MS wall ms a decode step out of both (session
32's profiled repeats pooled into its band rows). `--drafting` (with --bands) pools the windows
where most decode steps drafted instead: a drafting server's steady wall time a step against
plain's at the same band (session 40: goodput at 60-64 running drafted at 24.5 ms a step where
its cost model read 23.6 with the prefills). The last columns (session 33's fields) are the
garbage collector's ms a decode step and its full collections, and the scheduler process's main
and other threads' CPU a wall second. `--per-call` (with --bands; lines since session 60) adds the
wall ms a call of run_batch, spec_forward and target_forward, decode and prefill calls apart,
over every window in the band: whether a spec server's extra time is in its decode steps or in
its prefills.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import List, Optional

# the clocks' own names for the phases whose prefill calls they also sum apart (no SGLang import)
from adaptive_spec.sglang_plugin.phase_timing import PREFILL_SPLIT as SPLIT, PREFILL_SUFFIX

LINE = re.compile(r"adaptive_spec phases rank=(\d+) window_s=([\d.]+) decode_steps=(\d+) prefills=(\d+) "
                  r"mean_running=([\d.]+) ms_per_decode_step=(\{.*?\}) calls_per_decode_step=(\{.*?\})"
                  r"(?: drafting_steps=(\d+))?")
# since session 28, after drafting_steps: the admission queue and SGLang's new-token ratio
QUEUE = re.compile(r" mean_waiting=([\d.]+)(?: new_token_ratio=([\d.]+))?")
# since session 33: the garbage collector's time and the scheduler process's threads' CPU
GC = re.compile(r" gc_ms_per_decode_step=([\d.]+) gc_collections=(\d+)/(\d+)/(\d+)")
THREADS = re.compile(r" thread_cpu_s=(\{.*?\})")
COLUMNS = ("process_input", "get_next_batch", "prepare_for_decode", "merge_batch", "filter_batch",
           "run_batch", "spec_forward", "target_forward", "process_decode", "process_prefill")


def windows(path: Path) -> List[dict]:
    out = []
    for ln in path.read_text(errors="replace").splitlines():
        m = LINE.search(ln)
        if m:
            q = QUEUE.search(ln, m.end())
            g = GC.search(ln, m.end())
            th = THREADS.search(ln, m.end())
            out.append({"rank": int(m.group(1)), "window_s": float(m.group(2)),
                        "decode_steps": int(m.group(3)), "prefills": int(m.group(4)),
                        "mean_running": float(m.group(5)), "ms": json.loads(m.group(6)),
                        "calls": json.loads(m.group(7)),
                        # None: a line from before the field (the drafting is not known)
                        "drafting_steps": int(m.group(8)) if m.group(8) is not None else None,
                        "mean_waiting": float(q.group(1)) if q else None,
                        "new_token_ratio": float(q.group(2)) if q and q.group(2) else None,
                        "gc_ms": float(g.group(1)) if g else None,
                        "gc_collections": [int(g.group(i)) for i in (2, 3, 4)] if g else None,
                        "thread_cpu": json.loads(th.group(1)) if th else None})
    return out


def _opt(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def server_name(path: Path) -> str:
    name = path.name
    for suffix in (".excerpt", ".log"):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    return name[len("server-"):] if name.startswith("server-") else name


def _aligned(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows)


def table(logs: List[Path]) -> str:
    head = ["server", "running", "steps", "pf/step", "ms/step"] + list(COLUMNS) + ["waiting", "ntr"] + PROCESS
    rows = [head]
    for p in logs:
        for w in windows(p):
            if w["rank"] != 0:
                continue
            n = w["decode_steps"]
            rows.append([server_name(p), f"{w['mean_running']:.0f}", str(n), f"{w['prefills'] / n:.2f}",
                         f"{1000 * w['window_s'] / n:.2f}"] + [f"{w['ms'].get(c, 0):.2f}" for c in COLUMNS]
                        + [_opt(w["mean_waiting"], ".1f"), _opt(w["new_token_ratio"], ".3f")]
                        + _process_cells([w]))
    return _aligned(rows)


# the process columns (session 33's fields; '-' for windows without them): GC ms a decode step,
# its full (generation 2) collections, and the main and other threads' CPU a wall second
PROCESS = ["gc", "gc2", "main_cpu", "other_cpu"]


def _process_cells(ws: List[dict]) -> List[str]:
    timed = [w for w in ws if w["gc_ms"] is not None]
    n = sum(w["decode_steps"] for w in timed)
    gc_ms = sum(w["gc_ms"] * w["decode_steps"] for w in timed) / n if n else None
    full = sum(w["gc_collections"][2] for w in timed) if timed else None
    threaded = [w for w in ws if w["thread_cpu"] is not None]
    wall = sum(w["window_s"] for w in threaded)
    main = sum(w["thread_cpu"]["main"] for w in threaded) / wall if wall else None
    other = sum(w["thread_cpu"]["others"] for w in threaded) / wall if wall else None
    return [_opt(gc_ms, ".2f"), _opt(full, "d"), _opt(main, ".2f"), _opt(other, ".2f")]


def differences(logs: List[Path], reference: str = "plain") -> str:
    """Each other server's windows minus the reference server's window of the nearest mean batch
    (ms per decode step by phase): where a server spends more than plain does, level by level."""
    by = {server_name(p): [w for w in windows(p) if w["rank"] == 0] for p in logs}
    ref = by.get(reference) or []
    if not ref:
        return f"(no {reference} windows to compare with)"
    head = ["server", "running", f"{reference}_running", "ms/step"] + list(COLUMNS)
    rows = [head]
    for name, ws in by.items():
        if name == reference:
            continue
        for w in ws:
            r = min(ref, key=lambda x: abs(x["mean_running"] - w["mean_running"]))
            step = 1000 * (w["window_s"] / w["decode_steps"] - r["window_s"] / r["decode_steps"])
            rows.append([name, f"{w['mean_running']:.0f}", f"{r['mean_running']:.0f}", f"{step:+.2f}"]
                        + [f"{w['ms'].get(c, 0) - r['ms'].get(c, 0):+.2f}" for c in COLUMNS])
    return _aligned(rows)


def parse_bands(text: str) -> List[tuple]:
    """'48-64,96-128' -> [(48.0, 64.0), (96.0, 128.0)]; ValueError on anything else."""
    bands = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not sep or float(lo) > float(hi):
            raise ValueError(f"bad band {part!r} (expected LO-HI, LO <= HI)")
        bands.append((float(lo), float(hi)))
    return bands


def _drafted(w: dict) -> bool:
    """Whether most of a window's decode steps drafted (False for an old line without the count)."""
    return w["drafting_steps"] is not None and 2 * w["drafting_steps"] > w["decode_steps"]


def _in_bands(path: Path, bands: List[tuple], max_ms_per_step: Optional[float] = None,
              drafting: bool = False):
    """(lo, hi, rank 0's windows without drafting whose mean running lies in [lo, hi]) per band;
    with max_ms_per_step, windows slower than that (wall ms a decode step) are left out; with
    `drafting`, the windows where most steps drafted instead."""
    ws = [w for w in windows(path) if w["rank"] == 0 and w["decode_steps"] > 0
          and (_drafted(w) if drafting else w["drafting_steps"] == 0)
          and (max_ms_per_step is None or 1000 * w["window_s"] / w["decode_steps"] <= max_ms_per_step)]
    for lo, hi in bands:
        yield lo, hi, [w for w in ws if lo <= w["mean_running"] <= hi]


def pooled(logs: List[Path], bands: List[tuple], max_ms_per_step: Optional[float] = None,
           drafting: bool = False) -> str:
    """Per server and band, over its windows without drafting: ms per decode step (all phases
    and by phase, weighted by steps), prefills per decode step, and the windows/steps pooled."""
    head = ["server", "band", "windows", "steps", "pf/step", "ms/step"] + list(COLUMNS) + ["waiting"] + PROCESS
    rows = [head]
    for p in logs:
        for lo, hi, sel in _in_bands(p, bands, max_ms_per_step, drafting):
            n = sum(w["decode_steps"] for w in sel)
            if not n:
                continue
            by_phase = [sum(w["ms"].get(c, 0) * w["decode_steps"] for w in sel) / n for c in COLUMNS]
            queued = [w for w in sel if w["mean_waiting"] is not None]
            waiting = (sum(w["mean_waiting"] * w["decode_steps"] for w in queued)
                       / sum(w["decode_steps"] for w in queued)) if queued else None
            rows.append([server_name(p), f"{lo:g}-{hi:g}", str(len(sel)), str(n),
                         f"{sum(w['prefills'] for w in sel) / n:.3f}",
                         f"{1000 * sum(w['window_s'] for w in sel) / n:.2f}"] + [f"{v:.2f}" for v in by_phase]
                        + [_opt(waiting, ".1f")] + _process_cells(sel))
    if len(rows) > 1:
        return _aligned(rows)
    return "(no drafting window in any band)" if drafting else "(no window without drafting in any band)"


def _two_term_fit(xs: List[tuple], ys: List[float]) -> Optional[tuple]:
    """Least squares y = a * x1 + b * x2 (no intercept); None when the windows cannot tell the
    two apart (too few, or prefills a fixed share of the steps in all of them)."""
    s11 = sum(x1 * x1 for x1, _ in xs)
    s22 = sum(x2 * x2 for _, x2 in xs)
    s12 = sum(x1 * x2 for x1, x2 in xs)
    t1 = sum(x1 * y for (x1, _), y in zip(xs, ys))
    t2 = sum(x2 * y for (_, x2), y in zip(xs, ys))
    det = s11 * s22 - s12 * s12
    if len(xs) < 3 or det <= 1e-9 * max(1.0, s11 * s22):
        return None
    return (t1 * s22 - t2 * s12) / det, (t2 * s11 - t1 * s12) / det


def fitted(logs: List[Path], bands: List[tuple], max_ms_per_step: Optional[float] = None) -> str:
    """Per server and band, over its windows without drafting: ms a decode step and ms a prefill
    (wall, and inside the target's forward call), fitted over the windows."""
    rows = [["server", "band", "windows", "wall/step", "wall/prefill", "target/step", "target/prefill"]]
    for p in logs:
        for lo, hi, sel in _in_bands(p, bands, max_ms_per_step):
            xs = [(w["decode_steps"], w["prefills"]) for w in sel]
            wall = _two_term_fit(xs, [1000 * w["window_s"] for w in sel])
            target = _two_term_fit(xs, [w["ms"].get("target_forward", 0) * w["decode_steps"] for w in sel])
            if wall is None:
                continue
            cells = [f"{v:.2f}" for v in wall] + ([f"{v:.2f}" for v in target] if target else ["-", "-"])
            rows.append([server_name(p), f"{lo:g}-{hi:g}", str(len(sel))] + cells)
    return _aligned(rows) if len(rows) > 1 else "(too few windows without drafting to fit in any band)"


def per_call(logs: List[Path], bands: List[tuple]) -> str:
    """Per server and band, over all its windows (drafting or not): wall ms a call of each
    SPLIT phase, decode calls and prefill calls apart (session 59: goodput's spec_forward at 128
    took 1.16 ms a decode step more than EAGLE-3's with both kinds of call in the one figure)."""
    head = ["server", "band", "windows", "steps", "drafted"]
    head += [f"{c}/{kind}" for c in SPLIT for kind in ("decode", "prefill")]
    rows = [head]
    for p in logs:
        ws = [w for w in windows(p) if w["rank"] == 0 and w["decode_steps"] > 0
              and any(c + PREFILL_SUFFIX in w["calls"] for c in SPLIT)]
        for lo, hi in bands:
            sel = [w for w in ws if lo <= w["mean_running"] <= hi]
            n = sum(w["decode_steps"] for w in sel)
            if not n:
                continue
            cells = []
            for c in SPLIT:  # each window's figures are per decode step: weight by its steps
                tot = sum(w["ms"].get(c, 0) * w["decode_steps"] for w in sel)
                pre = sum(w["ms"].get(c + PREFILL_SUFFIX, 0) * w["decode_steps"] for w in sel)
                calls = sum(w["calls"].get(c, 0) * w["decode_steps"] for w in sel)
                pre_calls = sum(w["calls"].get(c + PREFILL_SUFFIX, 0) * w["decode_steps"]
                                for w in sel)
                dec_calls = calls - pre_calls
                cells += [_opt((tot - pre) / dec_calls if dec_calls > 0 else None, ".2f"),
                          _opt(pre / pre_calls if pre_calls > 0 else None, ".2f")]
            drafted = sum(w["drafting_steps"] or 0 for w in sel) / n
            rows.append([server_name(p), f"{lo:g}-{hi:g}", str(len(sel)), str(n), f"{drafted:.2f}"]
                        + cells)
    if len(rows) > 1:
        return _aligned(rows)
    return "(no window with the prefill split in any band: logs from before session 60)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="also write every window as JSON")
    ap.add_argument("--vs", default="plain", metavar="SERVER",
                    help="also print each other server minus this one, level by level (default plain)")
    ap.add_argument("--bands", help="pooled rows over the windows without drafting, per band of "
                    "mean running requests: LO-HI[,LO-HI...]")
    ap.add_argument("--fit", action="store_true",
                    help="with --bands: also each band's ms a decode step and ms a prefill, fitted")
    ap.add_argument("--max-ms-per-step", type=float, metavar="MS",
                    help="with --bands: leave out windows slower than MS wall ms a decode step "
                    "(a profiled repeat, a stall)")
    ap.add_argument("--drafting", action="store_true",
                    help="with --bands: also pool the windows where most decode steps drafted")
    ap.add_argument("--per-call", action="store_true",
                    help="with --bands: also wall ms a call of run_batch, spec_forward and "
                    "target_forward, decode calls and prefill calls apart, over all windows")
    a = ap.parse_args(argv)
    try:
        bands = parse_bands(a.bands) if a.bands else []
    except ValueError as exc:
        print(f"error: --bands: {exc}", file=sys.stderr)
        return 2
    for flag, given in (("--drafting", a.drafting), ("--per-call", a.per_call)):
        if given and not bands:
            print(f"error: {flag}: needs --bands", file=sys.stderr)
            return 2
    if a.max_ms_per_step is not None and (not bands or not a.max_ms_per_step > 0):
        print("error: --max-ms-per-step: needs --bands and a positive number of ms", file=sys.stderr)
        return 2
    missing = [str(p) for p in a.logs if not p.is_file()]
    if missing:
        print(f"error: no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(table(a.logs))
    print()
    print(differences(a.logs, a.vs))
    if bands:
        print()
        print(pooled(a.logs, bands, a.max_ms_per_step))
        if a.fit:
            print()
            print(fitted(a.logs, bands, a.max_ms_per_step))
        if a.drafting:
            print()
            print(pooled(a.logs, bands, a.max_ms_per_step, drafting=True))
        if a.per_call:
            print()
            print(per_call(a.logs, bands))
    if a.json:
        a.json.write_text(json.dumps({server_name(p): windows(p) for p in a.logs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
