"""Plot a sweep result: ``adaptive-spec-bench plot FILE.json`` -> FILE.png.

Panels: output tok/s and TPOT p50 against concurrency (log2 x axis; for open-loop runs
against the request rate), one line per system, the envelope max(plain, eagle3) dashed.
Load-pattern runs (step, sawtooth, bursty) with a timeline get one more row of panels per
system: running requests and target concurrency over time, with the chosen steps on a second
axis.  Needs matplotlib (the ``plot`` extra); it is imported only here.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional

from .loadgen import BenchError
from .stats import envelope, mean_over_repeats

COLORS = {"plain": "#1f77b4", "eagle3": "#ff7f0e", "builtin-adaptive": "#2ca02c"}
OURS_COLORS = ["#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _color(system: str, idx: Dict[str, str]) -> str:
    if system in COLORS:
        return COLORS[system]
    if system not in idx:
        idx[system] = OURS_COLORS[len(idx) % len(OURS_COLORS)]
    return idx[system]


def plot_file(path: str, out: Optional[str] = None) -> str:
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except OSError as e:
        raise BenchError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise BenchError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(d, dict) or d.get("schema") != "adaptive-spec-bench/1":
        raise BenchError(f"{path}: not an adaptive-spec-bench/1 result")
    out = out or str(p.with_suffix(".png"))
    return plot_result(d, out, title=p.stem)


def plot_result(d: dict, out: str, title: str = "") -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BenchError("matplotlib is not installed: pip install 'adaptive-spec[plot]' "
                         "(or pip install matplotlib)") from None
    rows = [r for r in d.get("rows", []) if isinstance(r, dict)]
    if any(r.get("repeat") is not None for r in rows):
        rows = mean_over_repeats(rows)  # --repeat: one point per system and level
    wl = d.get("workload") or {}
    kind = wl.get("kind", "closed")
    open_loop = kind == "open"
    pattern = kind in ("step", "sawtooth", "bursty")
    timeline = d.get("timeline") or []
    systems: List[str] = []
    for r in rows:
        if r.get("system") not in systems:
            systems.append(r.get("system"))
    tl_systems = [s for s in systems if any(e.get("system") == s for e in timeline)]
    n_tl = len(tl_systems) if pattern and timeline else 0
    nrows = 1 + n_tl
    fig, axes = plt.subplots(nrows, 2, figsize=(13, 4.6 + 2.6 * n_tl), squeeze=False)
    cidx: Dict[str, str] = {}
    xlabel = "request rate (req/s)" if open_loop else "concurrency (requests in flight)"

    step_x = kind == "step"

    def xval(r):
        if step_x:
            return r.get("phase")
        return r.get("request_rate") if open_loop else r.get("concurrency")

    def xkey_of(k):  # envelope key: (concurrency, request_rate, phase, repeat)
        return k[2] if step_x else (k[1] if open_loop else k[0])

    ax_t, ax_p = axes[0]
    all_x = []
    for s in systems:
        rs = sorted((r for r in rows if r.get("system") == s and xval(r) is not None), key=xval)
        x = [xval(r) for r in rs]
        all_x += x
        c = _color(s, cidx)
        ax_t.plot(x, [r.get("output_tok_s") for r in rs], "o-", color=c, label=s, ms=4)
        ax_p.plot(x, [r.get("tpot_ms_p50") for r in rs], "o-", color=c, label=s, ms=4)
    pts = sorted((xkey_of(k), v) for k, v in envelope(rows).items() if xkey_of(k) is not None)
    if pts:
        ax_t.plot([a for a, _ in pts], [b for _, b in pts], "--", color="k", lw=1.4,
                  alpha=0.7, label="envelope max(plain, eagle3)")
    log_x = not step_x and all_x and min(all_x) > 0
    ticks = sorted(set(all_x))
    for ax in (ax_t, ax_p):
        if log_x:
            ax.set_xscale("log", base=2)
            if ticks and len(ticks) <= 16:
                ax.set_xticks(ticks)
                ax.set_xticklabels([f"{t:g}" for t in ticks])
                ax.minorticks_off()
        elif step_x and ticks:
            ax.set_xticks(ticks)
        ax.set_xlabel("phase (low -> high -> low concurrency)" if step_x else xlabel)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.set_ylabel("output tokens/s")
    ax_t.set_title("throughput")
    ax_p.set_ylabel("TPOT p50 (ms)")
    ax_p.set_title("time per output token")
    ax_t.legend(fontsize=8, loc="best")
    for i, s in enumerate(tl_systems[:n_tl]):
        es = sorted((e for e in timeline if e.get("system") == s), key=lambda e: e["t_s"])
        t = [e["t_s"] for e in es]
        a1, a2 = axes[1 + i]
        a1.plot(t, [e.get("running") for e in es], "-", color=_color(s, cidx), label="running")
        if any(e.get("target_concurrency") is not None for e in es):
            a1.step(t, [e.get("target_concurrency") for e in es], where="post", color="gray",
                    ls=":", label="target concurrency")
        a1.set_ylabel("requests")
        a1.set_title(f"{s}: load")
        a1.set_xlabel("time (s)")
        a1.grid(True, alpha=0.3)
        steps = [e.get("steps") for e in es]
        if any(v is not None for v in steps):
            b = a1.twinx()
            b.step(t, steps, where="post", color="k", lw=1.2, label="steps")
            b.set_ylabel("speculative steps")
        a1.legend(fontsize=8, loc="upper left")
        a2.plot(t, [e.get("output_tok_s") for e in es], "-", color=_color(s, cidx))
        a2.set_ylabel("output tokens/s (client)")
        a2.set_xlabel("time (s)")
        a2.set_title(f"{s}: throughput over time")
        a2.grid(True, alpha=0.3)
    sup = title or ""
    if d.get("machine"):
        sup += f"  |  {d['machine']}"
    if wl:
        sup += f"  |  {kind}, {wl.get('new_tokens')} new tokens, T={wl.get('temperature')}"
    fig.suptitle(sup, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    shrink_png(out)
    return out


def shrink_png(path) -> None:
    """Re-save a plot with a 64-colour palette: ~4x smaller, same look. The results travel to
    the GPU machine with every command under a 64-MiB cap (session 8: ~110 -> ~30 KB a plot)."""
    try:
        from PIL import Image

        with Image.open(path) as im:
            small = im.convert("RGB").quantize(colors=64)
        small.save(path, optimize=True)
    except Exception:  # a full-colour plot is still a plot
        pass
