"""Tables from the phase clocks' log lines (ADAPTIVE_SPEC_PHASE_TIMING=1, see
adaptive_spec/sglang_plugin/phase_timing.py): one row per busy window (a sweep level) of each
server log, wall ms per decode step by phase, so plain and ours line up level by level.

  python -m adaptive_spec.bench.phase_summary [--json OUT] [--vs plain] server-plain.log server-ours.log ...
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import List

LINE = re.compile(r"adaptive_spec phases rank=(\d+) window_s=([\d.]+) decode_steps=(\d+) prefills=(\d+) "
                  r"mean_running=([\d.]+) ms_per_decode_step=(\{.*?\}) calls_per_decode_step=(\{.*?\})")
COLUMNS = ("process_input", "get_next_batch", "prepare_for_decode", "merge_batch", "filter_batch",
           "run_batch", "spec_forward", "target_forward", "process_decode", "process_prefill")


def windows(path: Path) -> List[dict]:
    out = []
    for ln in path.read_text(errors="replace").splitlines():
        m = LINE.search(ln)
        if m:
            out.append({"rank": int(m.group(1)), "window_s": float(m.group(2)),
                        "decode_steps": int(m.group(3)), "prefills": int(m.group(4)),
                        "mean_running": float(m.group(5)), "ms": json.loads(m.group(6)),
                        "calls": json.loads(m.group(7))})
    return out


def server_name(path: Path) -> str:
    name = path.name
    for suffix in (".excerpt", ".log"):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    return name[len("server-"):] if name.startswith("server-") else name


def _aligned(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows)


def table(logs: List[Path]) -> str:
    head = ["server", "running", "steps", "pf/step", "ms/step"] + list(COLUMNS)
    rows = [head]
    for p in logs:
        for w in windows(p):
            if w["rank"] != 0:
                continue
            n = w["decode_steps"]
            rows.append([server_name(p), f"{w['mean_running']:.0f}", str(n), f"{w['prefills'] / n:.2f}",
                         f"{1000 * w['window_s'] / n:.2f}"] + [f"{w['ms'].get(c, 0):.2f}" for c in COLUMNS])
    return _aligned(rows)


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="also write every window as JSON")
    ap.add_argument("--vs", default="plain", metavar="SERVER",
                    help="also print each other server minus this one, level by level (default plain)")
    a = ap.parse_args(argv)
    missing = [str(p) for p in a.logs if not p.is_file()]
    if missing:
        print(f"error: no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(table(a.logs))
    print()
    print(differences(a.logs, a.vs))
    if a.json:
        a.json.write_text(json.dumps({server_name(p): windows(p) for p in a.logs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
