"""The HTTP front-end's load next to each high-load row (CPU only, reads committed results).

    python scripts/frontend_load.py FILE.json [...] [--min-n 128]

One line per row at `--min-n` requests or more: throughput and its ratio to plain's same
repeat, mean running requests, TTFT p50, and the front-end process's CPU (HTTP server and
SGLang's tokenizer manager: one asyncio process, so near 1.0 core it is the bottleneck), also
as microseconds of its CPU per output token. Session 29 reads whether the 256-request deficit
follows the front-end's saturation rather than the system.
"""
import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--min-n", type=int, default=128)
    args = ap.parse_args()
    for path in args.files:
        rows = json.loads(path.read_text())["rows"]
        print(f"== {path.name}")
        plain = {(r["concurrency"], r.get("repeat", 0)): r["output_tok_s"] for r in rows if r["system"] == "plain"}
        for r in rows:
            if r["concurrency"] < args.min_n:
                continue
            fe = (r.get("cpu_util") or {}).get("frontend")
            base = plain.get((r["concurrency"], r.get("repeat", 0)))
            per_tok = 1e6 * fe / r["output_tok_s_whole"] if fe is not None and r.get("output_tok_s_whole") else None
            print(f"{r['system'][:22]:22} N={r['concurrency']:<4} r{r.get('repeat', 0)} "
                  f"tok/s={r['output_tok_s']:7.0f} vs_plain={r['output_tok_s'] / base if base else float('nan'):5.2f} "
                  f"running={r.get('mean_running') or 0:6.1f} ttft_p50={r['ttft_ms_p50']:6.0f} ms "
                  f"frontend={fe if fe is not None else float('nan'):.2f} core "
                  f"({per_tok if per_tok is not None else float('nan'):5.1f} us/token)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
