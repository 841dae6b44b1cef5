"""Decode throughput from SGLang's own server log, per running-batch size.

  python -m adaptive_spec.bench.log_throughput server-plain.log server-ours.log ... > out.csv

SGLang logs one ``Decode batch, #running-req: R, ... gen throughput (token/s): G`` line every
40 decode steps. The median G over the lines whose R lies within 5% below a level (or 4 above
it) is that server's decode rate at the level: prefill batches that run between the decode
steps count, the ramp-up and drain of a level mostly do not. A way to separate the decode
path's cost from admission and ramp effects in a sweep's end-to-end numbers. Also counted per
level: the ``Prefill batch`` lines logged while the running batch was in the same window (each
decode line stands for 40 decode steps, so prefill_batches / decode_lines * 40 is the prefill
batches per 40 decode steps, and median_gen_tok_s / level the decode steps per second when
every step yields one token per request); `prefill_requests` is the requests those prefill
batches admitted (`#new-seq`), and `prefills_past_level` those batches whose running requests and
new ones add up to more than the level: a closed loop of N clients never holds more than N, so
the excess are finished requests SGLang still holds beside their successors' prefill (it drops
them at the next decode step's preparation; session 34).
"""
from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Sequence

LEVELS = (32, 64, 128, 256)
_RUN = re.compile(r"Decode batch, #running-req: (\d+),")
_GEN = re.compile(r"gen throughput \(token/s\): ([\d.]+)")
_PREFILL_RUN = re.compile(r"Prefill batch, .*#running-req: (\d+),")
_NEW_SEQ = re.compile(r"Prefill batch, #new-seq: (\d+),")


def _levels_of(running: int, levels: Sequence[int]) -> List[int]:
    return [n for n in levels if 0.95 * n <= running <= n + 4]


def decode_rates(lines: Iterable[str], levels: Sequence[int] = LEVELS) -> Dict[int, List[float]]:
    out: Dict[int, List[float]] = {n: [] for n in levels}
    for ln in lines:
        r, g = _RUN.search(ln), _GEN.search(ln)
        if r and g:
            for n in _levels_of(int(r.group(1)), levels):
                out[n].append(float(g.group(1)))
    return out


def _prefills(lines: Iterable[str], levels: Sequence[int]) -> Iterator[tuple]:
    """(level, running requests, new requests or None) for each `Prefill batch` line, once per
    level whose window holds its running count."""
    for ln in lines:
        r = _PREFILL_RUN.search(ln)
        if r:
            q = _NEW_SEQ.search(ln)
            running = int(r.group(1))
            for n in _levels_of(running, levels):
                yield n, running, int(q.group(1)) if q else None


def prefill_batches(lines: Iterable[str], levels: Sequence[int] = LEVELS) -> Dict[int, int]:
    out = {n: 0 for n in levels}
    for n, _, _ in _prefills(lines, levels):
        out[n] += 1
    return out


def prefill_requests(lines: Iterable[str], levels: Sequence[int] = LEVELS) -> Dict[int, int]:
    """The requests those prefill batches admitted (their `#new-seq`), per level: with
    prefill_batches, how many requests a prefill batch held (session 32: 1.38-1.41 at 128)."""
    out = {n: 0 for n in levels}
    for n, _, new in _prefills(lines, levels):
        out[n] += new or 0
    return out


def prefills_past_level(lines: Iterable[str], levels: Sequence[int] = LEVELS) -> Dict[int, int]:
    """Per level, its prefill batches whose `#running-req` + `#new-seq` exceed the level."""
    out = {n: 0 for n in levels}
    for n, running, new in _prefills(lines, levels):
        out[n] += new is not None and running + new > n
    return out


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: python -m adaptive_spec.bench.log_throughput LOG [LOG ...]", file=sys.stderr)
        return 2
    print("log,running_level,decode_lines,median_gen_tok_s,prefill_batches,prefill_requests,prefills_past_level")
    for path in argv:
        try:
            text = Path(path).read_text(errors="replace").splitlines()
        except OSError as e:
            print(f"log_throughput: cannot read {path}: {e.strerror}", file=sys.stderr)
            return 2
        prefills, admitted, past = prefill_batches(text), prefill_requests(text), prefills_past_level(text)
        for n, v in decode_rates(text).items():
            med = f"{statistics.median(v):.0f}" if v else ""
            print(f"{Path(path).parent.name}/{Path(path).name},{n},{len(v)},{med},{prefills[n]},{admitted[n]},{past[n]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
