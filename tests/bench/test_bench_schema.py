"""Result files validate against ../shared/design/results-schema.md (via benchmarks/schema.py)."""
import copy
import json
import subprocess
from pathlib import Path

import pytest

from adaptive_spec.bench import schema

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"

BENCH = {
    "schema": "adaptive-spec-bench/1", "date": "2026-12-01",
    "machine": "nvidia-h200: 1x H200, torch 2.11.0+cu130", "sglang_version": "0.5.16",
    "model": "synthetic llama 8B shape", "draft": "synthetic EAGLE-3, dial 0.7",
    "acceptance": "real",
    "workload": {"kind": "closed", "new_tokens": 256, "prompt_tokens": [40, 128],
                 "temperature": 0.0},
    "command": "adaptive-spec-bench sweep ...",
    "rows": [
        {"system": "plain", "concurrency": 64, "output_tok_s": 9528.0, "tpot_ms_p50": 6.1,
         "tpot_ms_p99": 7.0, "ttft_ms_p50": 40.0, "mean_accept_len": None},
        {"system": "eagle3", "concurrency": 64, "output_tok_s": 10057.0, "mean_accept_len": 4.0},
        {"system": "builtin-adaptive", "concurrency": 64, "output_tok_s": 3347.0},
        {"system": "adaptive-spec:threshold", "concurrency": 64, "output_tok_s": 10100.0,
         "steps_histogram": {"0": 10, "1": 300, "3": 20}},
    ],
    "lossless": {"eagle3": {"identical_to_plain": True, "requests": 10}},
}
KERNELS = {
    "schema": "adaptive-spec-kernels/1", "date": "2026-12-01", "machine": "h200",
    "command": "python -m adaptive_spec.bench.kernel_bench",
    "rows": [{"op": "chain_verify_greedy", "impl": "triton", "bs": 64, "k": 3, "vocab": 128256,
              "dtype": "bfloat16", "us_median": 21.0, "us_p90": 23.5}],
}
DIAL = {
    "schema": "adaptive-spec-dial/1", "date": "2026-12-01", "machine": "h200", "command": "x",
    "rows": [{"mode": "greedy", "steps": 3, "requested": 0.7, "measured": 0.69,
              "mean_accept_len": 2.9, "requests": 256}],
}
SOAK = {
    "schema": "adaptive-spec-soak/1", "date": "2026-12-01", "machine": "h200",
    "sglang_version": "0.5.16", "command": "x", "duration_s": 600.0, "requests": 1000,
    "failed": 0, "patterns": ["step"], "kv_free_start": 0.99, "kv_free_end": 0.99,
    "rss_mb_start": 1000.0, "rss_mb_end": 1010.0, "probe_prompts": 16,
    "probe_identical_to_plain": True, "tp_size": 1,
}


def test_every_committed_result_validates():
    files = sorted(RESULTS.glob("*.json")) if RESULTS.is_dir() else []
    problems = []
    for f in files:
        problems += schema.validate_file(f)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("doc", [BENCH, KERNELS, DIAL, SOAK], ids=lambda d: d["schema"])
def test_samples_of_all_four_schemas_are_valid(doc, tmp_path):
    assert schema.validate_obj(doc) == []
    p = tmp_path / "results" / "2026-12-01-sample.json"
    p.parent.mkdir()
    p.write_text(json.dumps(doc))
    assert schema.validate_file(p) == []


def test_step_runs_need_a_timeline():
    d = copy.deepcopy(BENCH)
    d["workload"]["kind"] = "step"
    assert any("timeline" in p for p in schema.validate_obj(d))
    d["timeline"] = [{"t_s": 0.0, "running": 1, "waiting": 0, "steps": 3, "output_tok_s": 200.0,
                      "system": "adaptive-spec:threshold"}]
    assert schema.validate_obj(d) == []
    d["timeline"][0]["steps"] = "three"
    assert schema.validate_obj(d)


@pytest.mark.parametrize("mutate, expect", [
    (lambda d: d.pop("command"), "missing key 'command'"),
    (lambda d: d.update(date="01/12/2026"), "YYYY-MM-DD"),
    (lambda d: d["rows"][0].update(system="adaptive-spec"), "not plain|eagle3"),
    (lambda d: d["rows"][0].update(system="vllm"), "not plain|eagle3"),
    (lambda d: d["rows"][1].update(output_tok_s="fast"), "output_tok_s"),
    (lambda d: d["rows"][1].pop("concurrency"), "missing key 'concurrency'"),
    (lambda d: d["workload"].update(kind="weird"), "workload.kind"),
    (lambda d: d.update(acceptance="maybe"), "acceptance"),
    (lambda d: d["rows"][3].update(steps_histogram={"x": 1}), "steps_histogram"),
    (lambda d: d["lossless"]["eagle3"].pop("identical_to_plain"), "identical_to_plain"),
    (lambda d: d.update(schema="adaptive-spec-bench/2"), "schema"),
])
def test_broken_bench_files_fail(mutate, expect):
    d = copy.deepcopy(BENCH)
    mutate(d)
    probs = schema.validate_obj(d)
    assert probs and any(expect in p for p in probs), probs


def test_broken_other_schemas_fail():
    k = copy.deepcopy(KERNELS)
    k["rows"][0]["us_median"] = -1
    assert schema.validate_obj(k)
    dl = copy.deepcopy(DIAL)
    dl["rows"][0]["mode"] = "beam"
    dl["rows"][0]["requested"] = 1.5
    assert len(schema.validate_obj(dl)) == 2
    s = copy.deepcopy(SOAK)
    s["probe_identical_to_plain"] = "yes"
    del s["tp_size"]
    assert len(schema.validate_obj(s)) == 2
    assert schema.validate_obj([1, 2]) == ["top level: expected a JSON object"]


def test_file_level_checks(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    bad_name = d / "sweep.json"
    bad_name.write_text(json.dumps(BENCH))
    assert any("YYYY-MM-DD" in p for p in schema.validate_file(bad_name))
    assert schema.validate_file(bad_name, check_name=False) == []
    broken = d / "2026-12-01-broken.json"
    broken.write_text("{not json")
    assert "not valid JSON" in schema.validate_file(broken)[0]
    assert "cannot read" in schema.validate_file(d / "2026-12-01-missing.json")[0]


def test_validate_cli(tmp_path, cli_cmd):
    good = tmp_path / "2026-12-01-good.json"
    good.write_text(json.dumps(BENCH))
    broken = tmp_path / "2026-12-01-broken.json"
    b = copy.deepcopy(BENCH)
    b["rows"][0]["system"] = "nope"
    broken.write_text(json.dumps(b))
    r = subprocess.run(cli_cmd + ["validate", str(good)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(cli_cmd + ["validate", str(good), str(broken)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and "rows[0].system" in lines[0] and str(broken) in lines[0]
    assert "Traceback" not in r.stderr


def test_kernel_bench_runs_only_the_verify_kinds_and_inputs_asked_for(tmp_path):
    """--ops / --scenarios (for bisecting the H200 fault of session 8), on CPU (--smoke-cpu:
    Triton interpreter, torch stand-in for sgl_kernel): only flat-logit sampling rows."""
    import sys

    out = tmp_path / "k.json"
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "kernel_bench.py"
    r = subprocess.run([sys.executable, str(bench), "--smoke-cpu", "--no-tune", "--no-checks",
                        "--ops", "sampling", "--scenarios", "flat", "--direct", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert rows and {(row["op"], row["scenario"]) for row in rows} == {("chain_verify_sampling", "flat")}
    # --direct: a third row per point, our calls again under ADAPTIVE_SPEC_TRITON_LAUNCH=direct
    # (on CPU tensors the launcher takes the JIT path: this checks the rows and fields only)
    points = {(row["bs"], row["k"], row["vocab"]) for row in rows}
    direct = [row for row in rows if row["impl"] == "triton-direct"]
    assert len(direct) == len(points) and all(row["identical_to_triton"] and "speedup" in row
                                              for row in direct)
    assert all("speedup" in row for row in rows if row["impl"] == "triton")
    # every row also times a stream of back-to-back calls (us_stream, session 25)
    assert all(row["us_stream"] > 0 for row in rows)
    bad = subprocess.run([sys.executable, str(bench), "--ops", "gredy", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_verify_host_profile_without_a_gpu_says_so_in_one_line():
    """benchmarks/verify_host_profile.py (the next GPU session's greedy host-cost profile) on a
    machine without CUDA: one clear line, exit 2, no traceback."""
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "verify_host_profile.py"
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "verify_host_profile: CUDA is required"


@pytest.mark.parametrize("name", ["2026-12-05-s40-dense-64-128-fo.json",
                                  "2026-12-02-s25-kernels-grid-stream.json",
                                  "2026-12-05-s41-decision-cost.json",
                                  "2026-12-01-s24-soak-flap8.json"])
def test_a_damaged_result_gets_problems_listed_not_an_exception(name):
    """Committed results of each schema, damaged at random (a value deleted or replaced by one
    of the wrong type): the validator lists problems or accepts, and never raises (the CLI
    would print a traceback). Found this way: a `schema` field holding a list or an object."""
    import random

    from unit.damage import damage  # tests/ is on the path (no __init__)

    rng, original = random.Random(0), json.loads((RESULTS / name).read_text())
    flagged = 0
    for _ in range(200):
        doc = copy.deepcopy(original)
        for _ in range(rng.randint(1, 3)):
            damage(rng, doc)
        problems = schema.validate_obj(doc)
        assert all(isinstance(p, str) for p in problems)
        flagged += bool(problems)
    assert flagged > 20  # the damage reaches what the schema checks
    assert schema.validate_obj({"schema": ["adaptive-spec-bench/1"]})  # the case it found
