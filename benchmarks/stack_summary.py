"""Function-by-function comparison from the stack sampler's log lines
(ADAPTIVE_SPEC_STACK_SAMPLER=1, see adaptive_spec/sglang_plugin/stack_sampler.py): for each
server, the window whose mean batch is nearest --near (or, with --band LO-HI, every window whose
mean batch lies in [LO, HI), pooled by decode steps), inclusive wall ms per decode step per
function, sorted by how much more a server spends than the reference (plain).

  python -m adaptive_spec.bench.stack_summary [--near 64 | --band 96-160] [--vs plain] [--top 30] [--json OUT] server-*.log

--band is for 1-s windows (ADAPTIVE_SPEC_PHASE_WINDOW_S=1): one such window holds 20-100 decode
steps, too few for a function that runs once in a while (a prefill, a Triton compile).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List

from .phase_summary import _aligned, parse_bands, server_name

LINE = re.compile(r"adaptive_spec stacks rank=(\d+) decode_steps=(\d+) mean_running=([\d.]+) "
                  r"samples=(\d+) interval_ms=([\d.]+) incl_ms_per_step=(\{.*?\}) self_ms_per_step=(\{.*?\})")


def windows(path: Path) -> List[dict]:
    return windows_from_text(path.read_text(errors="replace"))


def windows_from_text(text: str) -> List[dict]:
    """Rank 0's sampler windows in a log's text, in order."""
    out = []
    for ln in text.splitlines():
        m = LINE.search(ln)
        if m and m.group(1) == "0":
            out.append({"decode_steps": int(m.group(2)), "mean_running": float(m.group(3)),
                        "samples": int(m.group(4)), "interval_ms": float(m.group(5)),
                        "incl": json.loads(m.group(6)), "self": json.loads(m.group(7))})
    return out


def nearest(logs: List[Path], near: float) -> Dict[str, dict]:
    """server -> its window nearest `near` running requests (servers without windows left out)."""
    out = {}
    for p in logs:
        ws = windows(p)
        if ws:
            out[server_name(p)] = min(ws, key=lambda w: abs(w["mean_running"] - near))
    return out


def pooled(ws: List[dict]) -> dict:
    """One window from several: each function's ms per decode step weighted by the windows'
    decode steps (a function missing from a window's top list counts 0 there)."""
    n = sum(w["decode_steps"] for w in ws)
    out = {"decode_steps": n, "windows": len(ws),
           "mean_running": sum(w["mean_running"] * w["decode_steps"] for w in ws) / max(1, n)}
    for kind in ("incl", "self"):
        acc: Dict[str, float] = {}
        for w in ws:
            for f, v in w[kind].items():
                acc[f] = acc.get(f, 0.0) + v * w["decode_steps"]
        out[kind] = {f: v / max(1, n) for f, v in acc.items()}
    return out


def in_band(logs: List[Path], lo: float, hi: float) -> Dict[str, dict]:
    """server -> its windows with lo <= mean running < hi, pooled (servers without any left out)."""
    out = {}
    for p in logs:
        ws = [w for w in windows(p) if lo <= w["mean_running"] < hi]
        if ws:
            out[server_name(p)] = pooled(ws)
    return out


def table(chosen: Dict[str, dict], reference: str, top: int, kind: str = "incl") -> str:
    """Functions as rows, servers as columns (ms per decode step); rows sorted by the largest
    excess of any server over the reference (a function missing from a window's top list
    reads 0 there, so small excesses near the cut are not meaningful)."""
    if not chosen:
        return "(no stack-sampler windows)"
    names = list(chosen)
    funcs = set().union(*(w[kind] for w in chosen.values()))
    ref = chosen.get(reference, {}).get(kind, {})

    def excess(f):
        return max(chosen[n][kind].get(f, 0.0) - ref.get(f, 0.0) for n in names)

    rows = [["function"] + [f"{n} ({chosen[n]['mean_running']:.0f})" for n in names]]
    for f in sorted(funcs, key=lambda f: -excess(f))[:top]:
        rows.append([f] + [f"{chosen[n][kind].get(f, 0.0):.3f}" for n in names])
    return _aligned(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--near", type=float, default=64.0, help="mean running requests of the windows compared")
    ap.add_argument("--band", default=None, metavar="LO-HI",
                    help="pool every window whose mean running requests lie in [LO, HI) instead")
    ap.add_argument("--vs", default="plain", metavar="SERVER", help="the reference server (default plain)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--json", type=Path, help="also write every window as JSON")
    a = ap.parse_args(argv)
    missing = [str(p) for p in a.logs if not p.is_file()]
    if missing:
        print(f"error: no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
    if a.band:
        try:
            (lo, hi), = parse_bands(a.band)
        except ValueError:
            print(f"error: --band: expected one LO-HI (e.g. 96-160), got {a.band!r}", file=sys.stderr)
            return 2
        chosen = in_band(a.logs, lo, hi)
        counts = ", ".join(f"{n}: {w['windows']} windows, {w['decode_steps']} steps" for n, w in chosen.items())
        print(f"inclusive ms per decode step, windows at {lo:g}-{hi:g} running requests pooled ({counts}):")
    else:
        chosen = nearest(a.logs, a.near)
        print(f"inclusive ms per decode step, windows nearest {a.near:g} running requests:")
    print(table(chosen, a.vs, a.top))
    print()
    print("self ms per decode step (innermost frame):")
    print(table(chosen, a.vs, a.top, kind="self"))
    if a.json:
        a.json.write_text(json.dumps({server_name(p): windows(p) for p in a.logs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
