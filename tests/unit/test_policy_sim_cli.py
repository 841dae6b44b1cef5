"""`scripts/policy_sim.py --only NAME` runs one scenario alone (session 53): the lines it prints
are the full run's for that scenario, and an unknown name is one usage line and exit 2."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "policy_sim.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_one_scenario_alone_prints_its_lines_as_the_full_run_does():
    r = run("--only", "level-entry-dear-plain")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("policy from ")
    assert [ln.split(":")[0] for ln in lines[1:]] == [
        f"level-entry-dear-plain seed={seed}" for seed in range(3)]
    # the same lines as the committed full run of the code they were recorded on (session 53's
    # "before" file: 050dff7's policy, which the tree's policy is again after the revert)
    full = (ROOT / "benchmarks/results/2026-12-06-s53-policy-sim-before.txt").read_text()
    assert all(ln in full.splitlines() for ln in lines[1:])


def test_an_unknown_scenario_is_a_usage_line_and_exit_2():
    r = run("--only", "no-such-scenario")
    assert r.returncode == 2
    assert "invalid choice" in r.stderr and "Traceback" not in r.stderr
