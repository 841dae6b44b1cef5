"""The acceptance dial's table (adaptive-spec-dial/1) from sweep results.

    python scripts/device/dial_from_sweeps.py OUT.json SWEEP.json [SWEEP.json ...]

Greedy rows: each sweep whose draft is a `draft-dial-<a>` of benchmarks/models.py. Sampling
rows: each sweep named `sampling-<a>` (`--name`), run at the temperature the target's dial file
gives for acceptance a, with the aligned draft. For both: the static eagle3
server's mean accept length over every completed request of every level (requests-weighted),
turned into a per-draft acceptance p by solving 1 + p + ... + p^steps = accept length (the
dial makes every position's conditional acceptance equal), and, as a second witness, the
per-position conditional acceptance our goodput server pooled over the run (final_status).
"""
import json
import re
import sys


def solve_p(accept_len: float, steps: int) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(60):  # bisection: the sum is increasing in p
        mid = (lo + hi) / 2
        if sum(mid ** j for j in range(steps + 1)) < accept_len:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 4)


def row(path: str):
    res = json.load(open(path))
    m = re.search(r"draft-dial-([0-9.]+)", res.get("draft") or "")
    temperature = float(res["workload"].get("temperature") or 0.0)
    if temperature > 0:
        m = re.search(r"--name sampling-([0-9.]+)", res.get("command") or "")
    if not m:
        return None
    e3 = res["systems"]["eagle3"]  # an attached server records its steps in server_info only
    steps = int(e3.get("spec_steps") or e3["server_info"]["speculative_num_steps"])
    rows = [r for r in res["rows"] if r["system"] == "eagle3" and r.get("mean_accept_len")]
    n = sum(r["completed"] for r in rows)
    accept = sum(r["mean_accept_len"] * r["completed"] for r in rows) / n
    out = {"mode": "sampling" if temperature > 0 else "greedy", "steps": steps,
           **({"temperature": temperature} if temperature > 0 else {}),
           "requested": float(m.group(1)),
           "measured": solve_p(accept, steps), "mean_accept_len": round(accept, 4),
           "requests": n, "source": path.rsplit("/", 1)[-1]}
    ours = (res["systems"].get("adaptive-spec:goodput") or {}).get("final_status") or []
    if ours and ours[0].get("acceptance", {}).get("per_position"):
        out["goodput_server_per_position"] = [round(p, 4) for p in ours[0]["acceptance"]["per_position"]]
    return out, res


def main(argv):
    out, paths = argv[0], argv[1:]
    rows, first = [], None
    for p in paths:
        r = row(p)
        if r:
            rows.append(r[0])
            first = first or r[1]
    result = {"schema": "adaptive-spec-dial/1", "date": first["date"], "machine": first["machine"],
              "sglang_version": first["sglang_version"], "model": first["model"],
              "command": "python scripts/device/dial_from_sweeps.py " + " ".join(argv),
              "note": "measured = per-draft acceptance p solving 1 + p + ... + p^steps = the "
                      "eagle3 server's mean accept length (requests-weighted over all levels); "
                      "sampling rows: aligned draft, SGLang's target-only verification, at the "
                      "temperature the target's adaptive_spec_dial.json gives for the requested value",
              "rows": rows}
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)
        fh.write("\n")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main(sys.argv[1:])
