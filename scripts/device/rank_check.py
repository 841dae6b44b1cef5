#!/usr/bin/env python3
"""Compare the per-rank decision digests an adaptive-spec server logs under tensor parallelism.

  python3 scripts/device/rank_check.py SERVER.log

Every rank logs `adaptive_spec rank_check rank=R decisions=N digest=X` every
ADAPTIVE_SPEC_RANK_CHECK_EVERY decisions; SGLang prefixes each process's lines with [TPn].
Prints one row per checkpoint and a summary; exit 1 if any checkpoint differs.
"""
import collections
import re
import sys

LINE = re.compile(r"(TP\d+)\] adaptive_spec rank_check rank=\d+ decisions=(\d+) digest=([0-9a-f]+)")


def main(path):
    by = collections.defaultdict(dict)
    for ln in open(path, errors="replace"):
        m = LINE.search(ln)
        if m:
            by[int(m.group(2))][m.group(1)] = m.group(3)
    ranks = sorted({tp for d in by.values() for tp in d})
    print("decisions," + ",".join(ranks))
    for n in sorted(by):
        print(f"{n}," + ",".join(by[n].get(tp, "") for tp in ranks))
    full = {n: d for n, d in by.items() if len(d) == len(ranks) > 1}
    differ = [n for n, d in full.items() if len(set(d.values())) > 1]
    print(f"# {len(full)} checkpoints seen on all {len(ranks)} ranks, {len(differ)} differ"
          f"{'' if not full else f'; last at {max(full)} decisions'}")
    return 1 if differ or not full else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
