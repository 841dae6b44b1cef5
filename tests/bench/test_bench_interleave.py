"""The interleaved sweep (benchmarks/interleave.py) against a FAKE server whose forced arms run
at FAKE speeds (forced off: 1-token chunks; forced on and its "policy": 4-token chunks, at the
same pace): rows per arm and round in the rotated order, repeats numbered on across passes, the
pairing against the forced arms, the server left on its policy; and its bad input."""
import json

import pytest

from adaptive_spec.bench import cli, interleave as il, schema
from adaptive_spec.bench.servers import http_get_json
from conftest import fake_attached

ARMS = ["off", "on", "policy"]
NAMES = {"off": "adaptive-spec:forced-off", "on": "adaptive-spec:forced-on",
         "policy": "adaptive-spec:goodput"}


def test_each_round_starts_with_the_next_arm():
    assert il.rotation(ARMS, 4) == [
        (0, "off"), (0, "on"), (0, "policy"), (1, "on"), (1, "policy"), (1, "off"),
        (2, "policy"), (2, "off"), (2, "on"), (3, "off"), (3, "on"), (3, "policy")]


def _sweep(url, out, *extra):
    return cli.main(["sweep", "--systems", "adaptive-spec:goodput",
                     "--attach", f"adaptive-spec:goodput={url}", "--concurrency", "4",
                     "--new-tokens", "48", "--interleave", "off,on,policy",
                     "--interleave-window-s", "0.8", "--interleave-settle-s", "0.2",
                     "--interleave-rounds", "2", "--drain-s", "1", "--sample-interval-s", "0.1",
                     "--no-warmup", "--no-plot",
                     "--quiet", "--out", str(out), *extra])


def test_interleaved_sweep_measures_each_arm_in_each_round_on_one_server(tmp_path, model_dirs):
    t, _ = model_dirs
    sp = fake_attached("--model-path", str(t), "--speculative-algorithm", "EAGLE3",
                       "--fake-status", "--fake-delay-s", "0.01")
    try:
        out = tmp_path / "2026-12-05-interleave.json"
        assert _sweep(sp.url, out, "--repeat", "2") == 0
        forces = http_get_json(sp.url + "/adaptive_spec/status")[1]["fake_forces"]
    finally:
        sp.stop()
    res = json.loads(out.read_text())
    assert schema.validate_file(out) == []
    rows = res["rows"]
    assert {r["system"] for r in rows} == set(NAMES.values())
    for arm, name in NAMES.items():  # 2 passes x 2 rounds, numbered on
        assert sorted(r["repeat"] for r in rows if r["system"] == name) == [0, 1, 2, 3]
        assert all(r["arm"] == arm and r["window"] == "interleaved" for r in rows
                   if r["system"] == name)
    by_repeat = {}
    for r in rows:
        by_repeat.setdefault(r["repeat"], []).append(r)
    for rep, rs in by_repeat.items():
        order = [r["arm"] for r in sorted(rs, key=lambda r: r["t_start_s"])]
        assert order == [a for rr, a in il.rotation(ARMS, 2) if rr == rep % 2]
        # each forced window's steps (the fake's status samples inside it) are its own arm's:
        # forced off 0, forced on 3 (the fake's policy runs either, by its running count)
        steps = {r["arm"]: set(r["steps_histogram"]) for r in rs}
        assert (steps["off"], steps["on"]) == ({"0"}, {"3"})
    # the server was switched through the rotation each pass, and left on its policy
    assert forces == ([il.ARM_SETTINGS[a]["force"] for _, a in il.rotation(ARMS, 2)]
                                   + [None]) * 2
    (p,) = res["paired_vs_static"]
    assert (p["system"], p["concurrency"], p["repeats"]) == ("adaptive-spec:goodput", 4, 4)
    assert res["workload"]["interleave"]["arms"] == ARMS
    assert res["workload"]["throughput_window"].startswith("interleaved")


def test_a_server_without_the_settings_route_fails_the_level_in_one_line(tmp_path, model_dirs,
                                                                         capsys):
    t, _ = model_dirs
    sp = fake_attached("--model-path", str(t), "--speculative-algorithm", "EAGLE3")
    try:  # no --fake-status: POST /adaptive_spec/config is a 404, as on a plain SGLang server
        rc = _sweep(sp.url, tmp_path / "x.json")
    finally:
        sp.stop()
    res = json.loads((tmp_path / "x.json").read_text()) if (tmp_path / "x.json").exists() else {}
    said = capsys.readouterr().err + json.dumps(res.get("notes", []))
    assert "Traceback" not in said
    assert "POST /adaptive_spec/config" in said and "HTTP 404" in said
    assert rc == 1 and not res.get("rows")  # measured nothing: exit 1, as any such sweep


@pytest.mark.parametrize("systems, args, says", [
    ("adaptive-spec:goodput", ["--interleave", "off,sideways"], "unknown arm 'sideways'"),
    ("adaptive-spec:goodput", ["--interleave", "off"], "two or three different arms"),
    ("plain,adaptive-spec:goodput", ["--interleave", "off,on"], "exactly one system"),
    ("adaptive-spec:forced-off", ["--interleave", "off,on"], "exactly one system"),
    ("adaptive-spec:goodput", ["--interleave", "off,on", "--interleave-window-s", "1",
                               "--interleave-settle-s", "1"], "--interleave-window-s"),
    ("adaptive-spec:goodput", ["--interleave", "off,on", "--interleave-rounds", "0"],
     "--interleave-rounds"),
    ("adaptive-spec:goodput", ["--interleave", "off,on", "--rate", "2"], "closed levels"),
])
def test_bad_interleave_settings_one_line_exit_2(cli_cmd, systems, args, says):
    import subprocess

    attach = [f"--attach={s}=http://127.0.0.1:9" for s in systems.split(",")]
    r = subprocess.run(cli_cmd + ["sweep", "--systems", systems, *attach, *args],
                       capture_output=True, text=True, timeout=60)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert r.returncode == 2 and len(lines) == 1 and says in lines[0], r.stderr
