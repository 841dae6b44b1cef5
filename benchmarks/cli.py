"""``adaptive-spec-bench``: the benchmark tool's command line.

  adaptive-spec-bench sweep --target DIR --draft DIR [--systems a,b,...] [--concurrency 1,2,...]
                            [--rate R,...] [--pattern steady|step|sawtooth|bursty] ...
  adaptive-spec-bench soak --plain URL --sut URL --vocab V --out FILE.json [--duration-s S]
  adaptive-spec-bench plot FILE.json [--out FILE.png]
  adaptive-spec-bench validate [FILE.json ...]        (default: benchmarks/results/*.json)
  adaptive-spec-bench table FILE.json
  adaptive-spec-bench models --out DIR ...            (the synthetic model pair; see models.py)

Bad input: one line on stderr and exit status 2.  A run that could not measure anything
(no server started): exit status 1.  Interrupted: 130.
"""
from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path
from typing import List, Optional

from . import stats as st
from .loadgen import BenchError, RunError

PROG = "adaptive-spec-bench"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def _ints(s: str) -> List[int]:
    try:
        v = [int(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}")
    if not v:
        raise argparse.ArgumentTypeError("empty list")
    return v


def _mapping(sep: str, key, value, form: str):
    """An argparse type for 'K<sep>V,K<sep>V' (split at the last `sep`) -> {key(K): value(V)}."""
    def parse(s: str) -> dict:
        try:
            v = {key(k): value(x) for k, x in (i.rsplit(sep, 1) for i in s.replace(" ", "").split(",") if i)}
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {form}, got {s!r}")
        if not v:
            raise argparse.ArgumentTypeError("empty list")
        return v
    return parse


_budgets = _mapping(":", int, float, "N:SECONDS,... (e.g. 128:8,256:10)")  # 128:8 -> {128: 8.0}
_system_steps = _mapping("=", str, int, "NAME=STEPS,... (e.g. adaptive-spec:goodput=7)")


def _cpu_list(s: str) -> List[int]:
    from .cpu_pin import parse_cpus
    try:
        return parse_cpus(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).split(": ", 1)[-1])


def _floats(s: str) -> List[float]:
    try:
        v = [float(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}")
    if not v:
        raise argparse.ArgumentTypeError("empty list")
    return v


def _names(s: str) -> List[str]:
    v = [x.strip() for x in s.split(",") if x.strip()]
    if not v:
        raise argparse.ArgumentTypeError("empty list")
    return v


def _arms(s: str) -> List[str]:
    from .interleave import parse_arms

    try:
        return parse_arms(s)
    except BenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _attach(s: str):
    if "=" not in s:
        raise argparse.ArgumentTypeError(f"expected NAME=URL, got {s!r}")
    name, url = s.split("=", 1)
    return name.strip(), url.strip()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Side-by-side serving sweeps for SGLang + adaptive-spec.")
    sub = p.add_subparsers(dest="cmd", metavar="{sweep,soak,plot,validate,table,paired,models}",
                           parser_class=_Parser)

    s = sub.add_parser("sweep", help="start/attach servers and measure them in one run",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = s.add_argument_group("what to measure")
    g.add_argument("--systems", type=_names,
                   default=["plain", "eagle3", "builtin-adaptive", "adaptive-spec:threshold"],
                   help="comma-separated: plain, eagle3, builtin-adaptive, adaptive-spec:<variant>")
    g.add_argument("--target", help="target model dir (config.json; used to start servers)")
    g.add_argument("--draft", help="EAGLE-3 draft model dir")
    g.add_argument("--attach", type=_attach, action="append", default=[], metavar="NAME=URL",
                   help="measure an already running server (loopback only) instead of starting it")
    g.add_argument("--concurrency", type=_ints, default=[1, 2, 4, 8, 16, 32, 64, 128, 256],
                   help="closed-loop levels")
    g.add_argument("--rate", type=_floats, default=[],
                   help="open-loop Poisson rates (req/s); the cap is max(--concurrency)")
    g.add_argument("--pattern", choices=["steady", "step", "sawtooth", "bursty"],
                   default="steady", help="load pattern (non-steady: one closed-loop run)")
    g.add_argument("--pattern-low", type=int, default=1)
    g.add_argument("--pattern-high", type=int, default=128)
    g.add_argument("--duration-s", type=float, default=30.0, help="pattern run length")
    g.add_argument("--period-s", type=float, default=10.0, help="sawtooth/bursty period")
    g.add_argument("--burst-s", type=float, default=2.0, help="bursty: burst length")
    g = s.add_argument_group("requests")
    g.add_argument("--new-tokens", type=int, default=256)
    g.add_argument("--new-tokens-spread", type=float, default=0.0, metavar="F",
                   help="each request's max_new_tokens uniform in new_tokens * [1-F, 1+F] (same "
                        "per request for every system); > 0 keeps a closed loop's streams from "
                        "running in lockstep waves")
    g.add_argument("--prompt-len", type=_ints, default=[40, 128],
                   help="prompt lengths, used round-robin")
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--no-stream", action="store_true",
                   help="non-streamed requests (no TTFT/ITL; TPOT = e2e / tokens)")
    g.add_argument("--seed", type=int, default=0, help="prompt seed (same prompts for all)")
    g.add_argument("--vocab", type=int, default=None,
                   help="vocabulary size for prompts (default: the target's config.json)")
    g = s.add_argument_group("bounds")
    g.add_argument("--time-budget-s", type=float, default=6.0,
                   help="per level and system: no new request after this")
    g.add_argument("--repeat", type=int, default=1, metavar="R",
                   help="measure each level R times in a row (systems rotated each time); rows "
                        "get 'repeat' and the result 'paired_vs_plain': each system's tok/s over "
                        "plain's in the same repeat, mean and 95%% interval over the repeats")
    g.add_argument("--interleave", type=_arms, default=[], metavar="ARMS",
                   help="e.g. off,on,policy: one adaptive-spec server per level, its settings "
                        "switched between drafting forced off, forced on and its own policy "
                        "every --interleave-window-s seconds (benchmarks/interleave.py); rows per "
                        "arm and round, the result's 'paired_vs_static'")
    g.add_argument("--interleave-window-s", type=float, default=4.0)
    g.add_argument("--interleave-settle-s", type=float, default=1.0,
                   help="the start of each window left uncounted (the switch settling)")
    g.add_argument("--interleave-rounds", type=int, default=6,
                   help="rounds per level, each arm once a round, the order rotated")
    g.add_argument("--time-budget-from", type=_budgets, default={}, metavar="N:S,...",
                   help="longer levels at high load: from concurrency N on, S seconds "
                        "(e.g. 128:8,256:10)")
    g.add_argument("--drain-s", type=float, default=4.0,
                   help="per level: requests still running this long after the budget are cut off")
    g.add_argument("--requests-per-level", type=int, default=None,
                   help="default: max(2N, 8) capped at --max-requests")
    g.add_argument("--max-requests", type=int, default=512)
    g.add_argument("--deadline-s", type=float, default=None,
                   help="bound on the whole run (levels that would not fit are skipped)")
    g.add_argument("--no-warmup", action="store_true")
    g.add_argument("--warmup-tokens", type=int, default=64,
                   help="new tokens per warm-up request (one wave of 2N requests per level); "
                        "an online policy learns ~400 decode steps per batch-size bucket")
    g = s.add_argument_group("servers")
    g.add_argument("--system-steps", type=_system_steps, default={}, metavar="NAME=K,...",
                   help="a speculative system's own draft steps (its max), e.g. "
                        "adaptive-spec:goodput=7; others keep --spec-steps")
    g.add_argument("--spec-steps", type=int, default=3,
                   help="EAGLE-3 steps for eagle3 and adaptive-spec (their max)")
    g.add_argument("--builtin-adaptive-config", default=None,
                   help="JSON config for --speculative-adaptive; its largest candidate steps "
                        "become the start steps (default: SGLang's config, start steps 7)")
    g.add_argument("--server-arg", action="append", default=[], metavar="'ARGS'",
                   help="extra flags for every started server (shell-split; repeatable)")
    g.add_argument("--system-args", action="append", default=[], metavar="'NAME=ARGS'",
                   help="'name=--flag v' replaces that system's variant flags, 'name+=...' adds")
    g.add_argument("--mem-fraction-static", type=float, default=None,
                   help="per server (default 0.92 when several start together, else 0.85)")
    g.add_argument("--max-total-tokens", type=int, default=None,
                   help="KV cap per server (default: enough for the largest level)")
    g.add_argument("--start-mode", choices=["parallel", "serial"], default="parallel",
                   help="parallel: all servers up at once, measured one after another")
    g.add_argument("--start-stagger-s", type=float, default=15.0,
                   help="parallel: seconds between launches")
    g.add_argument("--start-timeout-s", type=float, default=420.0)
    g.add_argument("--min-start-s", type=float, default=150.0,
                   help="with --deadline-s: launch nothing when the deadline leaves the servers "
                        "less than this to start (cold H200 servers need more than 106 s)")
    g.add_argument("--pin-scheduler-cpus", type=_cpu_list, default=[], metavar="CPUS",
                   help="e.g. 3,4: while measured, every server's scheduler runs on these CPUs "
                        "(its main thread on the first) and the front-end, detokenizer and load "
                        "generator on the others, so no system gets a slower CPU than another")
    g.add_argument("--freeze-gc", type=_names, default=[], metavar="SYSTEMS|all",
                   help="after its warm-up, each of these servers gets SGLang's POST /freeze_gc "
                        "(its scheduler, tokenizer and detokenizer move every live object out "
                        "of the garbage collector's reach), as a deployment would after warming up")
    g.add_argument("--order", choices=["level", "system"], default="level",
                   help="parallel: every system at a level before the next level, or system by system")
    g.add_argument("--python", default=None, help="interpreter for servers (default: this one)")
    g.add_argument("--sglang-launcher", default="sglang.launch_server", metavar="MODULE")
    g.add_argument("--ours-launcher", default="adaptive_spec.launch_server", metavar="MODULE")
    g.add_argument("--log-dir", default=None, help="server logs (default /tmp/adaptive-spec-bench/<time>)")
    g.add_argument("--keep-model-registry", action="store_true",
                   help="do not set SGLANG_DISABLED_MODEL_ARCHS for Llama-only model pairs")
    g = s.add_argument_group("output")
    g.add_argument("--out", default=None,
                   help="result JSON (default benchmarks/results/YYYY-MM-DD-NAME.json)")
    g.add_argument("--name", default="sweep", help="NAME in the default --out")
    g.add_argument("--model-desc", default=None, help="override the model description")
    g.add_argument("--draft-desc", default=None, help="override the draft description")
    g.add_argument("--traces-out", default=None,
                   help="also write every request's trace (JSON lines; .gz to compress)")
    g.add_argument("--metrics-out", default=None,
                   help="append each server's adaptive_spec*/sglang:spec* /metrics series "
                        "after every level to this text file (servers need --enable-metrics)")
    g.add_argument("--profile-at", type=_ints, default=[], metavar="N,...",
                   help="after measuring these closed levels, run each system's load again "
                        "(unmeasured) with a torch profile inside; its summary goes into the "
                        "row (GPU busy vs span, the scheduler thread's runtime calls and "
                        "Python time; with --repeat, of the first repeat); traces in --log-dir")
    g.add_argument("--profile-steps", type=int, default=40, help="forward steps per profile")
    g.add_argument("--sample-interval-s", type=float, default=0.5)
    g.add_argument("--no-plot", action="store_true")
    g.add_argument("--quiet", action="store_true")

    so = sub.add_parser("soak", help="a long mixed run against running servers (reliability)",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    so.add_argument("--plain", required=True, metavar="URL", help="plain server (reference)")
    so.add_argument("--sut", required=True, metavar="URL", help="the server under test")
    so.add_argument("--sut-pid", type=int, default=None,
                    help="a process of the server's session: its memory is sampled")
    so.add_argument("--duration-s", type=float, default=660.0, help="load time")
    so.add_argument("--pattern-s", type=float, default=60.0, help="length of each pattern")
    so.add_argument("--low", type=int, default=1)
    so.add_argument("--high", type=int, default=128)
    so.add_argument("--new-tokens", type=int, default=128)
    so.add_argument("--prompt-len", type=_ints, default=[40, 128])
    so.add_argument("--probes", type=int, default=200, help="greedy probe prompts")
    so.add_argument("--probe-tokens", type=int, default=64)
    so.add_argument("--odd-every-s", type=float, default=2.0,
                    help="one request with unusual parameters this often")
    so.add_argument("--vocab", type=int, required=True, help="the target's vocabulary size")
    so.add_argument("--tp-size", type=int, default=1)
    so.add_argument("--seed", type=int, default=0)
    so.add_argument("--out", required=True, help="result JSON (adaptive-spec-soak/1)")

    pl = sub.add_parser("plot", help="FILE.json -> FILE.png")
    pl.add_argument("file")
    pl.add_argument("--out", default=None)

    v = sub.add_parser("validate", help="check result files against the schemas")
    v.add_argument("files", nargs="*")
    v.add_argument("--no-name-check", action="store_true",
                   help="skip the YYYY-MM-DD-<what>.json name and size checks")

    t = sub.add_parser("table", help="print a sweep result as a table")
    t.add_argument("file")

    pr = sub.add_parser("paired", help="pool a system's paired ratios to plain (--repeat runs) "
                                       "over several sweep files")
    pr.add_argument("files", nargs="+")
    pr.add_argument("--system", action="append", required=True, metavar="NAME",
                    help="the system (repeat for the names other runs gave it)")
    pr.add_argument("--of", default="plain", metavar="plain|envelope|SYSTEM[,SYSTEM...]",
                    help="each ratio's reference in its repeat: plain, the better of plain and "
                         "eagle3 (envelope; runs without eagle3 pair with plain alone), any "
                         "other system of the runs (e.g. builtin-adaptive), or the best of a "
                         "comma-separated list (e.g. envelope,adaptive-spec:forced-on: static "
                         "EAGLE-3 at two step counts)")

    sub.add_parser("models", help="build the synthetic target/draft pair (see models --help)",
                   add_help=False)
    return p


def _config_from(a: argparse.Namespace, argv: List[str]):
    from .sweep import SweepConfig, default_out

    attach = {}
    for name, url in a.attach:
        if name in attach:
            raise BenchError(f"--attach {name} given twice")
        attach[name] = url
    systems = list(a.systems)
    return SweepConfig(
        systems=systems, target=a.target, draft=a.draft, concurrency=a.concurrency,
        rates=a.rate, pattern=a.pattern, pattern_low=a.pattern_low, pattern_high=a.pattern_high,
        duration_s=a.duration_s, period_s=a.period_s, burst_s=a.burst_s,
        new_tokens=a.new_tokens, new_tokens_spread=a.new_tokens_spread,
        prompt_len=a.prompt_len, temperature=a.temperature,
        top_p=a.top_p, top_k=a.top_k, stream=not a.no_stream, seed=a.seed,
        out=a.out or default_out(a.name), name=a.name, attach=attach,
        server_args=a.server_arg, system_args=a.system_args, spec_steps=a.spec_steps,
        system_steps=a.system_steps,
        builtin_adaptive_config=a.builtin_adaptive_config,
        mem_fraction_static=a.mem_fraction_static, max_total_tokens=a.max_total_tokens,
        start_mode=a.start_mode, start_stagger_s=a.start_stagger_s,
        start_timeout_s=a.start_timeout_s, min_start_s=a.min_start_s,
        pin_scheduler_cpus=a.pin_scheduler_cpus, freeze_gc=a.freeze_gc, order=a.order, repeat=a.repeat,
        interleave=a.interleave, interleave_window_s=a.interleave_window_s,
        interleave_settle_s=a.interleave_settle_s, interleave_rounds=a.interleave_rounds,
        time_budget_s=a.time_budget_s,
        time_budget_from=a.time_budget_from,
        drain_s=a.drain_s, requests_per_level=a.requests_per_level,
        max_requests_cap=a.max_requests, warmup=not a.no_warmup,
        warmup_tokens=a.warmup_tokens, deadline_s=a.deadline_s,
        log_dir=a.log_dir, python=a.python, sglang_launcher=a.sglang_launcher,
        ours_launcher=a.ours_launcher, vocab=a.vocab, sample_interval_s=a.sample_interval_s,
        traces_out=a.traces_out, metrics_out=a.metrics_out, profile_at=a.profile_at,
        profile_steps=a.profile_steps, plot=not a.no_plot, quiet=a.quiet,
        llama_only_registry=not a.keep_model_registry, model_desc=a.model_desc,
        draft_desc=a.draft_desc, command=f"{PROG} " + shlex.join(argv),
    )


def _sigterm(signum, frame):  # turn SIGTERM into the KeyboardInterrupt path (servers stopped)
    raise KeyboardInterrupt


def cmd_sweep(a, argv) -> int:
    from .sweep import Sweep, table

    cfg = _config_from(a, argv)
    if cfg.requests_per_level is not None and cfg.requests_per_level < 1:
        raise BenchError("--requests-per-level must be >= 1")
    if cfg.max_requests_cap < 1:
        raise BenchError("--max-requests must be >= 1")
    if cfg.warmup_tokens < 1:
        raise BenchError("--warmup-tokens must be >= 1")
    if cfg.profile_steps < 1:
        raise BenchError("--profile-steps must be >= 1")
    unknown = set(cfg.freeze_gc) - set(cfg.systems) - {"all"}
    if unknown:
        raise BenchError(f"--freeze-gc {','.join(sorted(unknown))}: not among the systems")
    if set(cfg.profile_at) - set(cfg.concurrency):
        raise BenchError(f"--profile-at {sorted(set(cfg.profile_at) - set(cfg.concurrency))}: "
                         "not among the --concurrency levels")
    sw = Sweep(cfg)
    old = signal.signal(signal.SIGTERM, _sigterm)
    try:
        res = sw.run()
    finally:
        signal.signal(signal.SIGTERM, old)
    print(table(res))
    print(f"wrote {cfg.out} ({res['status']})")
    if cfg.plot and res.get("rows"):
        try:
            from .plot import plot_result

            png = plot_result(res, str(Path(cfg.out).with_suffix(".png")), title=Path(cfg.out).stem)
            print(f"wrote {png}")
        except BenchError as e:
            print(f"{PROG}: no plot: {e}", file=sys.stderr)
    if not res.get("rows"):
        return 1
    return 0


def cmd_soak(a, argv) -> int:
    import json

    from .loadgen import run_async
    from .soak import SoakConfig, soak

    for name in ("duration_s", "pattern_s", "odd_every_s"):
        if getattr(a, name) <= 0:
            raise BenchError(f"--{name.replace('_', '-')} must be > 0")
    if min(a.low, a.high, a.probes, a.probe_tokens, a.new_tokens, a.vocab, a.tp_size) < 1 \
            or a.low > a.high:
        raise BenchError("--low <= --high, and every count must be >= 1")
    cfg = SoakConfig(plain=a.plain, sut=a.sut, sut_pid=a.sut_pid, duration_s=a.duration_s,
                     pattern_s=a.pattern_s, low=a.low, high=a.high, new_tokens=a.new_tokens, prompt_len=a.prompt_len,
                     probes=a.probes, probe_tokens=a.probe_tokens, odd_every_s=a.odd_every_s,
                     vocab=a.vocab, seed=a.seed, tp_size=a.tp_size,
                     command=f"{PROG} " + shlex.join(argv))
    res = run_async(soak(cfg))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    odd_bad = {n: c["first_failure"] for n, c in res["odd_requests"].items() if c["failed"]}
    print(f"soak: {res['requests']} requests, {res['failed']} failed, probes identical to plain: "
          f"{res['probe_identical_to_plain']}, KV used {res['kv_used_start']} -> "
          f"{res['kv_used_end']}, RSS {res['rss_mb_start']} -> {res['rss_mb_end']} MB"
          + (f", odd-request failures: {odd_bad}" if odd_bad else ""))
    print(f"wrote {a.out}")
    ok = (res["failed"] == 0 and res["probe_identical_to_plain"] and res["health_at_end"] == 200
          and res["idle_at_end"] and res["kv_used_start"] == res["kv_used_end"])
    return 0 if ok else 1


def cmd_validate(a) -> int:
    from .schema import validate_file

    files = list(a.files)
    if not files:
        files = sorted(str(p) for p in Path("benchmarks/results").glob("*.json"))
        if not files:
            print("no result files under benchmarks/results/")
            return 0
    probs = []
    for f in files:
        probs += validate_file(f, check_name=False if a.no_name_check else None)
    for pr in probs:
        print(pr)
    if probs:
        return 2
    print(f"{len(files)} file(s) valid")
    return 0


def _reference_systems(of: str) -> tuple:
    """`paired --of`: the systems whose best reading in each repeat is the reference
    ("envelope" stands for plain and eagle3), in the order given, without repeats."""
    names = []
    for part in of.split(","):
        for name in (("plain", "eagle3") if part.strip() == "envelope" else (part.strip(),)):
            if name and name not in names:
                names.append(name)
    if not names:
        raise BenchError(f"bad --of {of!r}: name plain, envelope or systems of the runs")
    return tuple(names)


def cmd_paired(a: argparse.Namespace) -> int:
    import json

    runs = []
    for f in a.files:
        try:
            runs.append(json.loads(Path(f).read_text())["rows"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise BenchError(f"cannot read sweep rows from {f}: {e}") from None
    reference = _reference_systems(a.of)
    try:
        pooled = st.pooled_pairs(runs, a.system, reference)
    except (AttributeError, TypeError, ValueError, KeyError) as e:  # a damaged file's rows
        raise BenchError(f"rows of another shape than a sweep's ({type(e).__name__}: {e}); "
                         f"`{PROG} validate FILE` says where") from None
    if not pooled:
        raise BenchError(f"no paired repeats of {', '.join(a.system)} against {a.of} in these files")
    of = reference[0] if len(reference) == 1 else f"max({', '.join(reference)})"
    for p in pooled:
        ci = f" +-{p['ci95']:.3f}" if p["ci95"] is not None else ""
        print(f"N={p['concurrency']}: {p['mean']:.3f}x {of}{ci} over {p['pairs']} pairs "
              f"({', '.join(f'{q:.3f}' for q in p['ratios'])})")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "models":
        try:
            from .models import main as models_main
        except ImportError as e:
            print(f"{PROG} models: not available: {e}", file=sys.stderr)
            return 2
        return models_main(argv[1:]) or 0
    parser = build_parser()
    a = parser.parse_args(argv)
    if not a.cmd:
        parser.print_help(sys.stderr)
        return 2
    try:
        if a.cmd == "sweep":
            return cmd_sweep(a, argv)
        if a.cmd == "soak":
            return cmd_soak(a, argv)
        if a.cmd == "plot":
            from .plot import plot_file

            print(f"wrote {plot_file(a.file, a.out)}")
            return 0
        if a.cmd == "validate":
            return cmd_validate(a)
        if a.cmd == "paired":
            return cmd_paired(a)
        if a.cmd == "table":
            import json

            from .sweep import table

            try:
                d = json.loads(Path(a.file).read_text())
            except (OSError, ValueError) as e:
                raise BenchError(f"cannot read {a.file}: {e}") from None
            print(table(d))
            return 0
    except BenchError as e:
        msg = str(e)
        first = msg.splitlines()[0] if msg else type(e).__name__
        print(f"{PROG} {a.cmd}: error: {first}", file=sys.stderr)
        rest = msg.splitlines()[1:]
        if rest and a.cmd == "sweep":  # server log tails: useful, kept after the one line
            print("\n".join(rest), file=sys.stderr)
        return 1 if isinstance(e, RunError) else 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
