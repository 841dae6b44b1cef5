"""Load generator against the in-process FAKE SGLang server (tests/bench/fake_sglang_server.py)."""
import asyncio

import pytest

import fake_sglang_server as fake
from adaptive_spec.bench import loadgen as lg
from adaptive_spec.bench.stats import summarize


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def prompts(vocab=1000, lens=(5, 9)):
    return lambda i: lg.make_prompt(0, "t", i, list(lens), vocab)


async def _closed(n, max_requests, new_tokens=8, budget=20.0, drain=10.0, new_tokens_fn=None,
                  **opts):
    runner, url = await fake.start_in_loop(**opts)
    try:
        async with lg.Client(url, new_tokens=new_tokens) as cl:
            res = await lg.run_closed(cl, prompts(), lg.steady(n, budget),
                                      max_requests=max_requests, time_budget_s=budget,
                                      drain_s=drain, new_tokens_fn=new_tokens_fn)
        return res
    finally:
        await runner.cleanup()


def test_closed_loop_plain():
    res = run(_closed(4, 12))
    recs = res.records
    assert len(recs) == 12
    assert sorted(r.idx for r in recs) == list(range(12))
    for r in recs:
        assert r.error is None and r.completed, r.error
        assert r.n_tokens == 8 and r.completion_tokens == 8
        p = lg.make_prompt(0, "t", r.idx, [5, 9], 1000)
        assert list(r.output_ids) == [p[-1]] * 8   # the fake repeats the last prompt token
        assert r.prompt_len == len(p)
        assert r.verify_ct is None
        assert r.finish_reason == "length"
        assert len(r.chunk_times) == 8   # one token per chunk without speculation
    s = summarize(recs, window=res.window)
    assert s["output_tokens"] == 96 and s["completed"] == 12
    assert s["output_tok_s"] > 0 and s["tpot_ms_p50"] > 0 and s["ttft_ms_p50"] > 0
    assert s["mean_accept_len"] is None


def test_closed_loop_speculative_chunks_and_accept_len():
    # steps 3 -> first chunk 1 token, then chunks of 4: 1 + 4 + 4 + 4 + 3 = 16, 4 verifies
    res = run(_closed(2, 4, new_tokens=16, speculative_algorithm="EAGLE3",
                      speculative_num_steps=3))
    for r in res.records:
        assert r.chunk_tokens == [1, 4, 4, 4, 3]
        assert r.verify_ct == 4
        assert r.accept_histogram == [0, 0, 0, 4]
        assert len(r.output_ids) == 16
    s = summarize(res.records)
    assert s["mean_accept_len"] == pytest.approx(16 / 4)


def test_incremental_stream_is_handled():
    res = run(_closed(2, 3, new_tokens=10, fake_incremental=True,
                      speculative_algorithm="EAGLE3", speculative_num_steps=2))
    for r in res.records:
        p = lg.make_prompt(0, "t", r.idx, [5, 9], 1000)
        assert list(r.output_ids) == [p[-1]] * 10
        assert r.n_tokens == 10


def test_non_streamed():
    async def go():
        runner, url = await fake.start_in_loop()
        try:
            async with lg.Client(url, new_tokens=6, stream=False) as cl:
                rec = lg.RequestRecord()
                await cl.request(rec, [1, 2, 3])
                return rec
        finally:
            await runner.cleanup()

    rec = run(go())
    assert rec.error is None and rec.n_tokens == 6 and list(rec.output_ids) == [3] * 6


def test_http_error_is_recorded():
    res = run(_closed(2, 4, fake_http_error=500))
    assert all(r.error and r.error.startswith("HTTP 500") for r in res.records)
    assert summarize(res.records)["errors"] == 4


def test_time_budget_and_cut_off():
    # 200 tokens at 20 ms each take 4 s; budget 0.3 s + drain 0.4 s cuts them off
    res = run(_closed(3, 50, new_tokens=200, budget=0.3, drain=0.4, fake_delay_s=0.02))
    assert len(res.records) == 3          # no new request after the budget
    assert res.cut_off == 3
    for r in res.records:
        assert r.cancelled and r.error is None
        assert 2 <= r.n_tokens < 200
    assert res.t_end - res.t0 < 5.0      # generous
    s = summarize(res.records, window=res.window)
    assert s["cancelled"] == 3 and s["output_tok_s"] > 0 and s["tpot_ms_p50"] > 0


def test_open_loop_poisson():
    async def go():
        runner, url = await fake.start_in_loop()
        try:
            async with lg.Client(url, new_tokens=4) as cl:
                return await lg.run_open(cl, prompts(), rate=200.0, max_concurrency=3,
                                         max_requests=20, time_budget_s=5.0, drain_s=5.0,
                                         seed=1)
        finally:
            await runner.cleanup()

    res = run(go())
    assert len(res.records) == 20
    assert all(r.completed for r in res.records)
    assert all(r.scheduled is not None and r.start >= r.scheduled - 1e-6 for r in res.records)
    # never more than 3 in flight: check with the recorded start/end times
    ev = sorted([(r.start, 1) for r in res.records] + [(r.end, -1) for r in res.records])
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    assert peak <= 3


def test_refuses_non_loopback():
    for bad in ("http://10.0.0.1:30000", "http://example.com:80", "https://127.0.0.1:30000",
                "http://192.168.1.2", "ftp://127.0.0.1:1"):
        with pytest.raises(lg.BenchError):
            lg.check_loopback(bad)
        with pytest.raises(lg.BenchError):
            lg.Client(bad, new_tokens=4)
    for ok in ("http://127.0.0.1:30000", "http://localhost:1", "http://[::1]:8000/",
               "http://127.0.0.2:9"):
        assert lg.check_loopback(ok) == ok.rstrip("/")


def test_spread_output_lengths_are_per_request_and_the_same_for_every_system():
    lens = [lg.spread_new_tokens(0, "c256", i, 192, 0.5) for i in range(400)]
    assert lens == [lg.spread_new_tokens(0, "c256", i, 192, 0.5) for i in range(400)]
    assert min(lens) >= 96 and max(lens) <= 288 and len(set(lens)) > 100
    assert abs(sum(lens) / len(lens) - 192) < 8
    assert lg.spread_new_tokens(0, "c256", 7, 192, 0.0) == 192
    fn = lambda i: lg.spread_new_tokens(0, "t", i, 12, 0.5)  # noqa: E731
    res = run(_closed(3, 9, new_tokens_fn=fn))
    assert sorted((r.idx, r.completion_tokens) for r in res.records) == [(i, fn(i)) for i in range(9)]


def test_prompts_are_deterministic_and_in_range():
    a = lg.make_prompt(0, "c4", 3, [40, 128], 32000)
    b = lg.make_prompt(0, "c4", 3, [40, 128], 32000)
    assert a == b and len(a) == 128
    assert lg.make_prompt(0, "c4", 2, [40, 128], 32000) != a
    assert all(100 <= x < 32000 - 100 for x in a)
    with pytest.raises(lg.BenchError):
        lg.make_prompt(0, "x", 0, [4], 150)


def test_schedules():
    s = lg.step_pattern(1, 128, 30.0)
    assert s.describe() == [[0.0, 10.0, 1], [10.0, 20.0, 128], [20.0, 30.0, 1]]
    assert s.at(5) == 1 and s.at(15) == 128 and s.at(29.9) == 1 and s.at(31) == 0
    assert s.max == 128 and s.duration == 30.0
    saw = lg.sawtooth_pattern(1, 64, 4.0, 8.0, steps=4)
    assert [c for _, _, c in saw.segments] == [1, 22, 43, 64, 1, 22, 43, 64]
    b = lg.bursty_pattern(1, 100, 5.0, 1.0, 10.0)
    assert b.describe() == [[0.0, 4.0, 1], [4.0, 5.0, 100], [5.0, 9.0, 1], [9.0, 10.0, 100]]


def test_pattern_run_and_timeline_with_status():
    async def go():
        runner, url = await fake.start_in_loop(fake_status=True, fake_delay_s=0.005,
                                               speculative_algorithm="EAGLE3")
        try:
            async with lg.Client(url, new_tokens=8) as cl:
                sched = lg.Schedule([(0.0, 0.5, 1), (0.5, 1.0, 6), (1.0, 1.5, 1)], "step")
                poller = lg.Poller(cl, 0.1)
                poller.start()
                res = await lg.run_closed(cl, prompts(), sched, max_requests=10000,
                                          time_budget_s=sched.duration, drain_s=2.0)
                samples = await poller.stop()
                return res, samples, sched, poller
        finally:
            await runner.cleanup()

    res, samples, sched, poller = run(go())
    assert poller.has_status and poller.has_loads
    assert len(samples) >= 5
    assert any(s["steps"] == 0 for s in samples) or any(s["steps"] == 3 for s in samples)
    tl = lg.timeline_from(samples, res.records, res.t0, sched, system="adaptive-spec:threshold")
    assert tl and all(set(e) >= {"t_s", "running", "waiting", "steps", "output_tok_s"} for e in tl)
    assert max(e["target_concurrency"] for e in tl) == 6
    # more requests in flight during the high phase than the low ones
    hi = [e["in_flight"] for e in tl if 0.6 <= e["t_s"] <= 0.95]
    assert hi and max(hi) > 1


def test_status_and_loads_parsing():
    assert lg.parse_status({"steps": 3, "steps_histogram": {"0": 5, "3": 2}}) == (3, {"0": 5, "3": 2})
    assert lg.parse_status({"current_steps": 1}) == (1, None)
    assert lg.parse_status(None) == (None, None)
    status = {"ranks": [{"decisions": {"0:probe": 2}, "step_modes": {"off": 2}}, {"decisions": {}}]}
    assert lg.rank0_counters(status) == ({"0:probe": 2}, {"off": 2})
    assert lg.rank0_counters({"ranks": [None]}) == (None, None)
    assert lg.rank0_counters({"steps": 3}) == (None, None)
    assert lg.parse_loads({"loads": [{"num_running_reqs": 3, "num_waiting_reqs": 1,
                                      "gen_throughput": 2.5},
                                     {"num_running_reqs": 2}]}) == (5, 1, 2.5)
    assert lg.parse_loads({}) == (None, None, None)


def test_level_request_counts():
    assert lg.level_requests(1) == 8
    assert lg.level_requests(64) == 128
    assert lg.level_requests(256) == 512
    assert lg.level_requests(1024) == 512


def _rec(idx, first_token):
    r = lg.RequestRecord(idx=idx)
    r.start = first_token - 0.1
    r.chunk_times, r.chunk_tokens = [first_token, first_token + 0.5], [1, 1]
    return r


def test_steady_window_starts_when_the_first_n_requests_all_stream():
    recs = [_rec(0, 10.2), _rec(1, 10.9), _rec(2, 10.4), _rec(3, 11.0)]  # idx 3 replaced idx 0
    res = lg.LoopResult(recs, t0=10.0, t_stop_issue=15.0, t_end=16.0, cut_off=0)
    assert res.steady_window(3) == (10.9, 15.0)
    assert res.steady_window(4) == (11.0, 15.0)
    assert res.steady_window(5) is None  # fewer requests than the concurrency
    short = lg.LoopResult(recs, t0=10.0, t_stop_issue=11.5, t_end=12.0, cut_off=0)
    assert short.steady_window(3) is None  # under a second: the caller falls back


async def _client_ports(keepalive_s, pause_s):
    """The client port the server saw for two GETs `pause_s` apart (server keep-alive 5 s, as
    SGLang's)."""
    from aiohttp import web

    async def port(req):
        return web.json_response(req.transport.get_extra_info("peername")[1])

    app = web.Application()
    app.router.add_get("/port", port)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=5.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    ports = []
    try:
        async with lg.Client(base, new_tokens=1, keepalive_s=keepalive_s) as c:
            for i in range(2):
                if i:
                    await asyncio.sleep(pause_s)
                async with c.session.get(base + "/port") as r:
                    ports.append(await r.json())
    finally:
        await runner.cleanup()
    return ports


def test_idle_connections_are_dropped_before_the_server_closes_them():
    # SGLang closes idle keep-alive connections after 5 s; the client must not reuse one that
    # old (a request on a connection being closed fails with "Server disconnected")
    assert lg.IDLE_KEEPALIVE_S < 5.0
    reused = run(_client_ports(keepalive_s=10.0, pause_s=0.6))
    dropped = run(_client_ports(keepalive_s=0.2, pause_s=0.6))
    assert reused[0] == reused[1]  # control: within the keep-alive, the connection is reused
    assert dropped[0] != dropped[1]


async def _cut_off_then_end_level(new_tokens, **opts):
    """A level cut off while its requests still decode (20 ms a chunk), then end_level."""
    runner, url = await fake.start_in_loop(fake_delay_s=0.02, fake_linger=True, **opts)
    try:
        async with lg.Client(url, new_tokens=new_tokens) as cl:
            res = await lg.run_closed(cl, prompts(), lg.steady(3, 0.3), max_requests=50,
                                      time_budget_s=0.3, drain_s=0.2)
            await asyncio.sleep(0.1)  # the server notices the closed streams at its next write
            code, obj = await cl.get_json("/v1/loads")
            still = lg.parse_loads(obj)[0]
            left = await lg.end_level(cl, timeout_s=20.0)
            code, obj = await cl.get_json("/v1/loads")
            after = lg.parse_loads(obj)[0]
            aborted = obj["loads"][0]["fake_aborted"]
        return res, still, left, after, aborted
    finally:
        await runner.cleanup()


def test_end_level_aborts_what_the_cut_off_left_decoding():
    # 200 tokens at 20 ms take 4 s: cut off after ~0.5 s, the fake (like SGLang) decodes on
    res, still, left, after, aborted = run(_cut_off_then_end_level(200))
    assert res.cut_off == 3 and still == 3      # cut off at the client, still running there
    assert left["running"] == 3 and left["aborted"] is True and left["idle"] is True
    assert after == 0 and aborted == 3          # stopped by the abort, not waited out


def test_end_level_waits_out_a_server_without_abort():
    # 60 tokens at 20 ms: ~0.7 s of lingering left after the cut-off, waited out
    res, still, left, after, aborted = run(_cut_off_then_end_level(60, fake_no_abort=True))
    assert still == 3 and left["running"] == 3
    assert left["aborted"] is False and left["idle"] is True and after == 0
    assert aborted == 0                          # they ran to their last chunk


def test_end_level_on_an_idle_server_returns_at_once():
    async def go():
        runner, url = await fake.start_in_loop()
        try:
            async with lg.Client(url, new_tokens=8) as cl:
                return await lg.end_level(cl)
        finally:
            await runner.cleanup()
    left = run(go())
    assert left["running"] == 0 and left["aborted"] is False and "idle" not in left
