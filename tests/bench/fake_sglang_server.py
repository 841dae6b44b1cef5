"""A FAKE SGLang-compatible HTTP server for CPU tests of the benchmark tool (not SGLang).

Speaks just enough of SGLang 0.5.16's native API: ``GET /health``, ``POST /generate``
(``input_ids`` + ``sampling_params``; streamed ``data: {...}`` events with cumulative
``output_ids`` and ``meta_info``, then ``data: [DONE]``; or one JSON when not streamed),
``GET /server_info``, ``GET /v1/loads``, ``POST /start_profile`` (writes a tiny trace),
``POST /abort_request`` (``abort_all`` only), ``POST /freeze_gc`` (answers, freezes nothing) and, with ``--fake-status``,
``GET /adaptive_spec/status``, ``GET /metrics`` and ``POST /adaptive_spec/config`` (``force``
only: "off" sends 1-token chunks and reports 0 steps, "on" the speculative chunks and steps;
any other setting is a 400 as an unknown key is on the real route). With ``--fake-linger`` a streamed request
whose client went away keeps running to its last chunk unless aborted, as SGLang's does until
its abort task fires. With ``--fake-scheduler-child`` it starts a child process titled as
SGLang titles its scheduler (``sglang::scheduler_TP0``), which wakes every 10 ms, so the sweep's
scheduler pin and placement have one to find.

Output: the last prompt token repeated (like the synthetic "repeat" target), or with
``--fake-lossy`` that token + 1 from the 3rd token on.  Speculative (``--speculative-algorithm``
given): after the first token, chunks of ``--speculative-num-steps + 1`` tokens, each counted
as one verify step (``spec_verify_ct``).  Each chunk takes ``--fake-delay-s``.

Run: ``python fake_sglang_server.py --port P [--fake-* ...]`` (unknown SGLang flags are
ignored, so the sweep can start it in place of ``sglang.launch_server``), or in-process with
:func:`start_in_loop`.  Loopback only.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time

from aiohttp import web


def parse(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--model-path", default="fake-model")
    p.add_argument("--speculative-algorithm", default=None)
    p.add_argument("--speculative-num-steps", type=int, default=3)
    p.add_argument("--tp-size", type=int, default=1)
    p.add_argument("--fake-delay-s", type=float, default=0.002)
    p.add_argument("--fake-startup-s", type=float, default=0.0)
    p.add_argument("--fake-exit-after-s", type=float, default=None)
    p.add_argument("--fake-exit-code", type=int, default=3)
    p.add_argument("--fake-incremental", action="store_true")
    p.add_argument("--fake-status", action="store_true")
    p.add_argument("--fake-lossy", action="store_true")
    p.add_argument("--fake-http-error", type=int, default=None)
    p.add_argument("--fake-linger", action="store_true")
    p.add_argument("--fake-no-abort", action="store_true")  # an /abort_request-less server
    p.add_argument("--fake-no-freeze-gc", action="store_true")  # a /freeze_gc-less server
    p.add_argument("--fake-scheduler-child", action="store_true")
    a, _unknown = p.parse_known_args(argv)
    return a


class Fake:
    def __init__(self, a):
        self.a = a
        self.t0 = time.time()
        self.running = 0
        self.abort_epoch = 0  # bumped by abort_all: a request started before it stops
        self.aborted = 0  # requests that stopped that way (FAKE field `fake_aborted` in loads)
        self.steps_hist = {}
        self.decisions = {}  # "<steps>:<reason>" as the real status counts them
        self.step_modes = {}
        self.spec = a.speculative_algorithm is not None
        self.k = (a.speculative_num_steps + 1) if self.spec else 1
        self.force = None  # set by POST /adaptive_spec/config
        self.forces = []  # every force posted, in order (FAKE record for tests)

    def ready(self):
        return time.time() - self.t0 >= self.a.fake_startup_s

    async def health(self, req):
        return web.Response(status=200 if self.ready() else 503, text="")

    async def server_info(self, req):
        return web.json_response({
            "version": "0.0-fake", "model_path": self.a.model_path,
            "speculative_algorithm": self.a.speculative_algorithm,
            "speculative_num_steps": self.a.speculative_num_steps if self.spec else None,
            "internal_states": [{"avg_spec_accept_length": float(self.k)}],
            "max_total_num_tokens": 100000, "tp_size": self.a.tp_size,
            # as SGLang 0.5.16 resolves it (the prefill bucket list left out)
            "cuda_graph_config": {"decode": {"backend": "full", "max_bs": 256},
                                  "prefill": {"backend": "breakable", "max_bs": 4096}},
        })

    async def loads(self, req):
        return web.json_response({"loads": [{"dp_rank": 0, "num_running_reqs": self.running,
                                             "num_waiting_reqs": 0, "gen_throughput": 1.0,
                                             "num_used_tokens": 10 * self.running,
                                             "fake_aborted": self.aborted}]})

    async def abort_request(self, req):
        body = await req.json()
        if body.get("abort_all"):
            self.abort_epoch += 1
        return web.Response(status=200)

    def cur_steps(self):
        if self.force is not None:  # forced: 0 off, the speculative steps on
            return 0 if self.force == "off" else self.k - 1
        return 0 if self.running >= 4 else (self.k - 1)

    async def status(self, req):
        if not self.a.fake_status:
            raise web.HTTPNotFound()
        # the real route's shape: per-rank states plus the first rank's steps and histogram
        rank = {"steps_histogram": self.steps_hist, "decisions": self.decisions,
                "step_modes": self.step_modes, "stalled_results": 0,
                "slow_results": {"count": 0, "threshold_ms": 80.0, "last_logged": None},
                # FAKE cost model: the shape of the goodput policy's `describe`, values made up
                "cost_model": {"step_ms": {"1": {"0": 3.0, "3": 4.5}}, "step_samples": {"1": {"0": 6, "3": 6}},
                               "prefill_batch_fit_ms": {}}}
        return web.json_response({"ranks": [rank],
                                  "steps": self.cur_steps(), "steps_histogram": self.steps_hist,
                                  "fake_forces": self.forces})

    async def metrics(self, req):
        # FAKE exposition: one of our series and one SGLang series that --metrics-out drops
        if not self.a.fake_status:
            raise web.HTTPNotFound()
        body = (
            "# HELP adaptive_spec_draft_steps fake\n"
            f'adaptive_spec_draft_steps{{tp_rank="0"}} {self.cur_steps()}\n'
            "sglang:prompt_tokens_total 1.0\n").encode()
        if "gzip" in req.headers.get("Accept-Encoding", ""):  # as prometheus_client does
            import gzip

            return web.Response(body=gzip.compress(body), content_type="text/plain",
                                headers={"Content-Encoding": "gzip"})
        return web.Response(body=body, content_type="text/plain")

    async def config(self, req):
        if not self.a.fake_status:
            raise web.HTTPNotFound()
        body = await req.json()
        if set(body) != {"force"} or body["force"] not in (None, "off", "on"):
            return web.Response(status=400, text=f"fake: cannot change {sorted(body)}")
        self.force = body["force"]
        self.forces.append(self.force)
        return web.json_response({"updated": True})

    def chunk_size(self):
        """Tokens in the next chunk: one when forced off, else the speculative chunk."""
        return 1 if self.force == "off" else self.k

    def outputs(self, prompt, n):
        last = prompt[-1] if prompt else 7
        return [last + 1 if (self.a.fake_lossy and i >= 2) else last for i in range(n)]

    async def start_profile(self, req):
        """Like SGLang's: returns at once; the trace appears in output_dir a little later
        (here a tiny torch-profiler-shaped JSON: one scheduler thread, one kernel)."""
        body = await req.json()
        out = body["output_dir"]

        async def write_later():
            await asyncio.sleep(0.3)
            os.makedirs(out, exist_ok=True)
            ev = [{"ph": "X", "cat": "python_function", "name": "run_batch", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
                  {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 10, "dur": 5, "pid": 1, "tid": 1},
                  {"ph": "X", "cat": "kernel", "name": "fake_kernel", "ts": 20, "dur": 40, "pid": 1, "tid": 9}]
            with open(os.path.join(out, f"fake-{time.time():.0f}.trace.json"), "w") as fh:
                json.dump({"traceEvents": ev}, fh)

        asyncio.ensure_future(write_later())
        return web.Response(text="Start profiling.")

    async def generate(self, req):
        if self.a.fake_http_error:
            return web.Response(status=self.a.fake_http_error, text="fake failure")
        body = await req.json()
        ids = body.get("input_ids") or []
        sp = body.get("sampling_params") or {}
        if float(sp.get("top_p", 1.0)) < 1e-3:  # FAKE validation error, as a proper 400
            return web.Response(status=400, text="fake: top_p too small")
        n = int(sp.get("max_new_tokens", 16))
        out = self.outputs(ids, n)
        stream = bool(body.get("stream"))
        chunks = [1]
        while sum(chunks) < n:
            chunks.append(min(self.k, n - sum(chunks)))
        verify = len(chunks) - 1 if self.spec else 0

        def meta(done, ct, v):
            m = {"id": "fake", "prompt_tokens": len(ids), "completion_tokens": ct,
                 "cached_tokens": 0,
                 "finish_reason": {"type": "length", "length": n} if done else None}
            if self.spec and v > 0:
                m["spec_verify_ct"] = v
                m["spec_accept_length"] = ct / v
                m["spec_accept_histogram"] = [0] * (self.k - 1) + [v]
            return m

        self.running += 1
        try:
            if not stream:
                for _ in chunks:
                    await asyncio.sleep(self.a.fake_delay_s)
                return web.json_response({"output_ids": out, "meta_info": meta(True, n, verify)})
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(req)
            sent, epoch, gone, i = 0, self.abort_epoch, False, -1
            while sent < n:
                i += 1
                c = 1 if i == 0 else min(self.chunk_size(), n - sent)
                await asyncio.sleep(self.a.fake_delay_s)
                if self.abort_epoch != epoch:
                    self.aborted += 1
                    break
                new = out[sent:sent + c]
                sent += c
                if gone:  # the client left: decode on, unseen, as SGLang does until it aborts
                    continue
                s = self.cur_steps()
                self.steps_hist[str(s)] = self.steps_hist.get(str(s), 0) + 1
                why, mode = f"{s}:cost_model", "off" if s == 0 else "on"
                self.decisions[why] = self.decisions.get(why, 0) + 1
                self.step_modes[mode] = self.step_modes.get(mode, 0) + 1
                ids_field = new if self.a.fake_incremental else out[:sent]
                ev = {"output_ids": ids_field, "meta_info": meta(sent >= n, sent, i)}
                try:
                    await resp.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
                except (ConnectionError, RuntimeError):
                    if not self.a.fake_linger:
                        raise
                    gone = True
            if not gone:
                await resp.write(b"data: [DONE]\n\n")
                await resp.write_eof()
            return resp
        finally:
            self.running -= 1


def make_app(a) -> web.Application:
    f = Fake(a)
    app = web.Application()
    app["fake"] = f  # in-process tests read its FAKE records
    app.router.add_get("/health", f.health)
    app.router.add_get("/server_info", f.server_info)
    app.router.add_get("/v1/loads", f.loads)
    app.router.add_get("/adaptive_spec/status", f.status)
    app.router.add_get("/metrics", f.metrics)
    app.router.add_post("/generate", f.generate)
    app.router.add_post("/adaptive_spec/config", f.config)
    app.router.add_post("/start_profile", f.start_profile)
    if not a.fake_no_abort:
        app.router.add_post("/abort_request", f.abort_request)
    if not a.fake_no_freeze_gc:  # SGLang's answer, without freezing anything
        app.router.add_post("/freeze_gc", lambda req: web.Response(text="Garbage collection frozen.\n"))
    return app


async def start_in_loop(**opts):
    """Start in the running loop on 127.0.0.1:<free port>; returns (runner, base_url)."""
    argv = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            argv.append(flag)
        elif v is not None and v is not False:
            argv += [flag, str(v)]
    a = parse(argv)
    runner = web.AppRunner(make_app(a), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}"


SCHEDULER_CHILD = r"""
import os, sys, time
import setproctitle
setproctitle.setproctitle("sglang::scheduler_TP0")
parent, end = int(sys.argv[1]), time.time() + 600
while time.time() < end and os.getppid() == parent:  # bounded; gone with the server
    time.sleep(0.01)
"""


def main(argv=None):
    a = parse(argv)
    if a.fake_scheduler_child:
        import subprocess
        subprocess.Popen([sys.executable, "-c", SCHEDULER_CHILD, str(os.getpid())])
    if a.host not in ("127.0.0.1", "localhost"):
        print("fake server: loopback only", file=sys.stderr)
        return 2
    print(f"fake sglang server on {a.host}:{a.port} pid {os.getpid()}", flush=True)
    if a.fake_exit_after_s is not None:
        t = threading.Timer(a.fake_exit_after_s, lambda: os._exit(a.fake_exit_code))
        t.daemon = True
        t.start()
    web.run_app(make_app(a), host=a.host, port=a.port, access_log=None, print=None,
                handle_signals=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
