"""status_view renders real controllers' statuses, from a file, a committed sweep result and a
loopback HTTP server, and refuses bad input with one line."""

import copy
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from adaptive_spec import status_view
from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.signals import LoadSnapshot

from .damage import damage
from .draft_sim import correct_drafts

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "benchmarks/results/2026-12-04-s36-dense-16-128-256.json"


def served_controller(policy="goodput", steps=400, bs=16, seed=3):
    """A controller after `steps` decode steps at `bs` requests, times from a simple cost."""
    ctl = Controller(AdaptiveSpecConfig(policy=policy, max_steps=3))
    ctl.timer.tick = lambda steps, now=None: None  # times come from the loop below
    rng = random.Random(seed)
    pending = None
    for _ in range(steps):
        ctl.on_snapshot(LoadSnapshot(running=bs, waiting=2, kv_used=900, kv_total=10_000))
        k = ctl.decide(bs).steps
        if pending is not None:
            ctl.on_result(*pending[:2])
            if policy == "goodput":
                ctl.policy.observe_step_time(bs, pending[0], pending[2])
        pending = (k, correct_drafts(rng, bs, 0.7, k), 0.006 + 0.001 * k)
    return ctl


def test_a_goodput_status_shows_the_choice_its_reason_and_the_table_it_came_from():
    ctl = served_controller()
    st = ctl.status()
    page = status_view.render(status_view.rank_statuses({"ranks": [st]}))
    assert "policy goodput, up to 3 steps" in page
    assert f"k = {ctl.last.steps} ({ctl.last.reason})" in page
    assert "running 16  waiting 2" in page and "KV 9.0%" in page
    row = next(line for line in page.splitlines() if line.strip().startswith("9-16 "))
    cell = st["cost_model"]["step_ms"]["16"]["0"]
    assert f"{cell:.2f} (" in row
    assert f"*k={ctl.last.steps} " in page  # the goodput line marks the chosen k
    k, gain = st["cost_model"]["choice_by_bucket"]["16"]
    assert f"9-16: k={k} ({gain:g}x plain)" in page if k else "9-16: plain" in page


def test_a_goodput_status_shows_each_prefill_kinds_cost_a_batch():
    ctl = served_controller()
    load = ctl.policy.prefill
    for _ in range(50):
        load.on_decode(4, 1.0, 16)
    for seconds, plain in [(0.005, True)] * 6 + [(0.010, False)] * 2:
        load.on_prefill(4, seconds, 1, plain)
    load.sync(lambda v: v)
    page = status_view.render([ctl.status()])
    # each kind's own mean: 6 plain batches of 5 ms, 2 spec ones of 10
    assert "a prefill batch, ms, plain / with the draft's (batches): 9-16: 5 (6) / 10 (2)" in page
    # 5 / 10 over the fewer kind's 2 batches, shrunk by 8 at 0.75: 0.5^(2/10) x 0.75^(8/10) =
    # 0.6916
    assert ("plain over with the draft's, pooled (an unseen kind's price): 0.6916; prefills left "
            "out as waves of arrivals: 0") in page
    # each kind's new requests a batch, which its mean is moved from (session 48)
    assert ctl.status()["cost_model"]["prefill_kind_admitted"] == {"16": [1.0, 1.0]}
    assert "decode tokens a request" not in page  # no request finished yet
    assert ctl.status()["cost_model"]["prefill_mean_batch"] == {"16": 16.0}  # (session 52)
    # the request length on a controller fed by hand: 50 steps of 16 requests gaining a token
    # each (800 decode tokens), then 48 admitted, 16 of them in flight, so 32 finished:
    # L = 800 / 48 = 16.67 tokens a request, shown to a tenth
    fresh = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    for _ in range(50):
        fresh.policy.prefill.on_decode(4, 1.0, 16)
    fresh.policy.prefill.on_admitted(48)
    assert fresh.status()["cost_model"]["prefill_request_length"] == 16.7
    page = status_view.render([fresh.status()])
    assert "decode tokens a request (arrivals = batch x tokens a step / it): 16.7" in page


def test_a_threshold_status_has_no_cost_model_and_still_renders():
    ctl = served_controller(policy="threshold", steps=50, bs=4)
    page = status_view.render([ctl.status()])
    assert "policy threshold" in page and "step time by running-batch bucket" not in page


def test_ranks_whose_digests_differ_at_the_same_decision_count_are_flagged():
    st = served_controller(steps=100).status()
    same = dict(copy.deepcopy(st), rank=1)
    assert "DIGEST DIFFERS" not in status_view.render([st, same])
    differs = copy.deepcopy(same)
    differs["rank_check"]["digest"] = "00000000"
    page = status_view.render([st, differs])
    assert "rank 1" in page and "DIGEST DIFFERS" in page


def test_a_committed_sweep_result_renders_its_final_table(capsys):
    assert status_view.main([str(SWEEP), "--system", "adaptive-spec:goodput"]) == 0
    page = capsys.readouterr().out
    assert "129-256" in page and "a switch on, ms" in page


def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path, capsys):
    cases = []
    two = {"systems": {"a": {"final_status": [{"decisions": {}}]},
                       "b": {"final_status": [{"decisions": {}}]}}}
    (tmp_path / "two.json").write_text(json.dumps(two))
    cases.append(([str(tmp_path / "two.json")], 2, "pick one with --system"))
    (tmp_path / "junk.json").write_text("{not json")
    cases.append(([str(tmp_path / "junk.json")], 2, "is not JSON"))
    (tmp_path / "other.json").write_text(json.dumps({"hello": 1}))
    cases.append(([str(tmp_path / "other.json")], 2, "not an adaptive-spec status"))
    (tmp_path / "off.json").write_text(json.dumps({"ranks": [None]}))
    cases.append(([str(tmp_path / "off.json")], 1, "not active"))
    cases.append(([str(tmp_path / "missing.json")], 2, "No such file"))
    cases.append((["--watch", "-1"], 2, "--watch must be >= 0"))
    cases.append((["--timeout", "0"], 2, "--timeout > 0"))
    for argv, code, text in cases:
        assert status_view.main(argv) == code, argv
        err = capsys.readouterr().err
        assert text in err and err.count("\n") == 1, err


class _StatusRoute(BaseHTTPRequestHandler):
    body = b"{}"
    hits = 0

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).hits += 1
        ok = self.path == status_view.ROUTE
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body if ok else b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def loopback_server():
    server = HTTPServer(("127.0.0.1", 0), _StatusRoute)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_it_reads_a_server_and_refreshes_a_bounded_number_of_times(loopback_server, capsys):
    st = served_controller(steps=60).status()
    _StatusRoute.body = json.dumps({"ranks": [st], "steps": st["decision"]["steps"]}).encode()
    _StatusRoute.hits = 0
    url = f"http://127.0.0.1:{loopback_server.server_address[1]}"
    assert status_view.main(["--url", url, "--watch", "0.01", "--count", "3"]) == 0
    assert _StatusRoute.hits == 3
    assert capsys.readouterr().out.count("policy goodput") == 3
    loopback_server.shutdown()
    loopback_server.server_close()
    assert status_view.main(["--url", url, "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("status_view: cannot read") and err.count("\n") == 1


def test_the_runs_the_model_prefers_are_shown_once_one_has_finished():
    st = {"decision": {"steps": 0, "reason": "cost_model"},
          "cost_model": {"preferred_runs_ms": {"drafting": {"32": [31.5, 12], "4": [900.0, 1]},
                                               "plain": {}}}}
    page = status_view.render([st])
    assert ("drafting-preferred runs by the bucket they began at, mean ms (runs): "
            "3-4: 900 (1)  17-32: 31.5 (12)") in page
    assert "plain-preferred runs" not in page


def test_what_each_k_delivered_is_shown_where_it_differs_from_the_model():
    st = {"decision": {"steps": 0, "reason": "cost_model"},
          "cost_model": {"realized_ratio": {"64": {"0": [1.0, 30.0], "3": [0.936, 320.0]}}}}
    page = status_view.render([st]).splitlines()
    at = page.index("delivered over the model's prediction, by bucket (steps; 1 = as modelled):")
    assert page[at + 2].split() == ["33-64", "1.000", "(30)", "0.936", "(320)"]
    st["cost_model"]["realized_ratio"]["64"]["3"] = [1.0, 320.0]  # all as modelled: not shown
    assert "delivered over" not in status_view.render([st])


def test_a_status_of_another_shape_is_one_view_error_not_a_traceback():
    """Damaged statuses (a value deleted or of the wrong type, as a server of another version or
    a hand-edited file could hold): the page renders, or one ViewError says why it cannot.
    Before, such damage ended in tracebacks (AttributeError, ValueError, IndexError)."""
    rng, good = random.Random(0), served_controller().status()
    refused = 0
    for _ in range(500):
        body = {"ranks": [copy.deepcopy(good)]}
        for _ in range(rng.randint(1, 3)):
            damage(rng, body)
        try:
            assert isinstance(status_view.render(status_view.rank_statuses(body)), str)
        except status_view.ViewError as exc:
            assert exc.code == 2 or "not active" in str(exc)
            refused += 1
    assert refused > 10


def test_the_stalls_line_shows_the_slow_results_and_what_the_last_one_met():
    """The plugin's status part (sglang_plugin/slow_results.py): none yet, then one logged."""
    st = served_controller(policy="threshold", steps=20).status()
    page = status_view.render(status_view.rank_statuses({"ranks": [st]}))
    assert "stalls" not in page  # a status without the part (a sweep's, an older server's)
    st["slow_results"] = {"count": 0, "threshold_ms": 80.0, "last_logged": None}
    page = status_view.render(status_view.rank_statuses({"ranks": [st]}))
    assert "stalls     0 decode results of 80 ms or more\n" in page + "\n"
    st["slow_results"] = {"count": 3, "threshold_ms": 80.0, "last_logged": {
        "ms": 1735.2, "running": 64, "steps": 0, "mode": "off", "kernels_built": None}}
    page = status_view.render(status_view.rank_statuses({"ranks": [st]}))
    assert ("stalls     3 decode results of 80 ms or more; last logged 1735.2 ms at 64 running, "
            "k = 0 (off), Triton kernels built meanwhile: unknown") in page
