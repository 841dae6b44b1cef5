"""Side-by-side sweep: start (or attach to) several servers and measure them in the same run.

Flow: start every server (by default all at once, launches staggered by a few seconds so
their GPU-memory phases do not overlap; they share the GPU, each with its own
``--mem-fraction-static`` and a ``--max-total-tokens`` cap) -> wait for ``/health`` (bounded,
early death noticed) -> warm each one up -> measure level by level (every system at one level,
then the next level) -> stop them -> write ``adaptive-spec-bench/1`` JSON (rewritten after
every level, so a run cut short still leaves its rows) and print a table.

Bounded: every level stops issuing at ``time_budget_s`` and cuts off what still runs
``drain_s`` later; ``deadline_s`` bounds the whole run (levels that would not fit are
skipped and listed).
"""
from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import interleave as il
from . import loadgen as lg
from . import stats as st
from .loadgen import BenchError, RunError
from .code_digest import run_digest
from .cpu_pin import SchedulerPin
from .cpu_usage import CorePlacement, CpuMeter, LoopLag, server_pid
from .servers import (SGLANG_LAUNCHER, OURS_LAUNCHER, ServerDied, ServerGroup, ServerProcess,
                      build_command, builtin_adaptive_steps, child_env, cuda_graph_bs,
                      default_python, free_port, llama_only_disabled_archs,
                      parse_system_args, spec_args, system_def, valid_system_name)

DEFAULT_SYSTEMS = ["plain", "eagle3", "builtin-adaptive", "adaptive-spec:threshold"]
MAX_REPEAT = 20
DEFAULT_LEVELS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def cuda_graph_backends(config) -> dict:
    """{"decode": backend, "prefill": backend} as the server resolved them (SGLang 0.5.16's
    /server_info `cuda_graph_config`; {} from a server without it). Since session 33 each row's
    server says whether its prefills could replay a CUDA graph: every sweep of sessions 1-32 ran
    them disabled, and the spec servers' plain prefills then missed them."""
    if not isinstance(config, dict):
        return {}
    return {phase: config[phase]["backend"] for phase in ("decode", "prefill")
            if isinstance(config.get(phase), dict) and "backend" in config[phase]}


SERVER_INFO_KEYS = (
    "version", "model_path", "speculative_algorithm", "speculative_num_steps",
    "speculative_num_draft_tokens", "speculative_eagle_topk", "speculative_adaptive",
    "speculative_adaptive_config", "speculative_draft_model_path", "mem_fraction_static",
    "max_running_requests", "max_total_tokens", "max_total_num_tokens", "attention_backend",
    "sampling_backend", "disable_overlap_schedule", "cuda_graph_max_bs", "context_length",
    "stream_interval", "incremental_streaming_output",
)


@dataclass
class SweepConfig:
    systems: List[str] = field(default_factory=lambda: list(DEFAULT_SYSTEMS))
    target: Optional[str] = None
    draft: Optional[str] = None
    concurrency: List[int] = field(default_factory=lambda: list(DEFAULT_LEVELS))
    rates: List[float] = field(default_factory=list)
    pattern: str = "steady"                   # steady|step|sawtooth|bursty
    pattern_low: int = 1
    pattern_high: int = 128
    duration_s: float = 30.0                  # pattern runs
    period_s: float = 10.0                    # sawtooth / bursty
    burst_s: float = 2.0                      # bursty
    new_tokens: int = 256
    new_tokens_spread: float = 0.0            # each request's max_new_tokens: new_tokens * (1 +- spread)
    prompt_len: List[int] = field(default_factory=lambda: [40, 128])
    temperature: float = 0.0
    top_p: Optional[float] = None
    top_k: Optional[int] = None
    stream: bool = True
    seed: int = 0
    out: Optional[str] = None
    name: str = "sweep"
    attach: Dict[str, str] = field(default_factory=dict)
    server_args: List[str] = field(default_factory=list)
    system_args: List[str] = field(default_factory=list)
    spec_steps: int = 3
    system_steps: Dict[str, int] = field(default_factory=dict)  # per-system override of spec_steps
    builtin_adaptive_config: Optional[str] = None
    mem_fraction_static: Optional[float] = None
    max_total_tokens: Optional[int] = None
    start_mode: str = "parallel"              # parallel|serial
    start_stagger_s: float = 15.0
    start_timeout_s: float = 420.0
    # with a deadline: refuse to launch when it leaves the servers less than this to start (GPU,
    # session 26: 106 s were too few for two cold servers, and the call's 156 device seconds
    # bought nothing)
    min_start_s: float = 0.0
    # CPUs every server's scheduler runs on while measured (cpu_pin.py); empty: the OS decides
    pin_scheduler_cpus: List[int] = field(default_factory=list)
    # systems (or "all") whose GC SGLang freezes after their warm-up (POST /freeze_gc)
    freeze_gc: List[str] = field(default_factory=list)
    order: str = "level"                      # level|system (parallel mode)
    repeat: int = 1                           # closed/open levels: each measured this many times in a row
    # arms switched on one server within each closed level (interleave.py); empty: off
    interleave: List[str] = field(default_factory=list)
    interleave_window_s: float = 4.0
    interleave_settle_s: float = 1.0
    interleave_rounds: int = 6
    time_budget_s: float = 6.0
    time_budget_from: Dict[int, float] = field(default_factory=dict)  # {N: s}: levels >= N
    drain_s: float = 4.0
    requests_per_level: Optional[int] = None  # None: max(2N, 8) capped at 512
    max_requests_cap: int = 512
    warmup: bool = True
    warmup_tokens: int = 64                   # new tokens per warm-up request (2N per level)
    deadline_s: Optional[float] = None
    log_dir: Optional[str] = None
    python: Optional[str] = None
    sglang_launcher: str = SGLANG_LAUNCHER
    ours_launcher: str = OURS_LAUNCHER
    vocab: Optional[int] = None
    sample_interval_s: float = 0.5
    traces_out: Optional[str] = None
    metrics_out: Optional[str] = None         # /metrics excerpt after every level
    profile_at: List[int] = field(default_factory=list)  # closed levels to profile after measuring
    profile_steps: int = 40
    plot: bool = True
    command: Optional[str] = None
    quiet: bool = False
    llama_only_registry: bool = True
    model_desc: Optional[str] = None
    draft_desc: Optional[str] = None


# ------------------------------------------------------------------------------------------
# facts about the machine and the models


def machine_string() -> str:
    parts = []
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=15).stdout
            names = [ln.split(",")[0].strip() for ln in out.splitlines() if ln.strip()]
            if names:
                mem = out.splitlines()[0].split(",")[1].strip() if "," in out else ""
                parts.append(f"{len(names)}x {names[0]}" + (f" ({mem})" if mem else ""))
        except (OSError, subprocess.SubprocessError):
            pass
    if not parts:
        parts.append(f"{platform.node() or 'host'} (no GPU seen)")
    v = _pkg_version("torch")
    if v:
        parts.append(f"torch {v}")
    parts.append(f"python {platform.python_version()}")
    return ", ".join(parts)


def gpu_memory_gib() -> Optional[float]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=15).stdout
        return float(out.splitlines()[0].strip()) / 1024.0
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _pkg_version(name: str) -> Optional[str]:
    try:
        from importlib import metadata

        return metadata.version(name)
    except Exception:  # noqa: BLE001 - any metadata problem: unknown
        return None


def read_config(d: Optional[str]) -> dict:
    if not d:
        return {}
    p = Path(d) / "config.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def describe_model(d: Optional[str], cfg: dict, kind: str) -> Optional[str]:
    if not d:
        return None
    if not cfg:
        return f"{kind} at {Path(d).name} (no readable config.json)"
    arch = (cfg.get("architectures") or ["?"])[0]
    bits = []
    for k, label in (("hidden_size", "hidden"), ("num_hidden_layers", "layers"),
                     ("vocab_size", "vocab"), ("draft_vocab_size", "draft vocab")):
        if cfg.get(k) is not None:
            bits.append(f"{label} {cfg[k]}")
    s = f"{arch} ({', '.join(bits)}) from {Path(d).name}"
    # the synthetic pair (models.py) leaves adaptive_spec_dial.json next to config.json
    try:
        meta = json.loads((Path(d) / "adaptive_spec_dial.json").read_text())
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict):
        bits = [f"{k} {meta[k]}" for k in ("mode", "requested", "target_mode", "pair_id")
                if meta.get(k) is not None]
        exp = meta.get("expected") if isinstance(meta.get("expected"), dict) else {}
        if exp.get("greedy_per_position") is not None:
            bits.append(f"expected greedy acceptance/position {exp['greedy_per_position']}")
        s += "; synthetic: " + ", ".join(bits)
    return s


def today() -> str:
    return _dt.date.today().isoformat()


def log_stamp(wall_s: float) -> str:
    """A wall-clock moment as the servers' log lines stamp theirs (SGLang: local time, to the
    second), to the millisecond: where a level or a warm-up began among a server's lines.
    Session 64 could not tell whether a server's slow first second of decoding was its warm-up
    or its level."""
    return _dt.datetime.fromtimestamp(wall_s).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


# ------------------------------------------------------------------------------------------
# progress


class Progress:
    def __init__(self, total: int, quiet: bool = False):
        self.total = max(total, 1)
        self.done = 0
        self.t0 = time.time()
        self.quiet = quiet
        self.bar = None
        if not quiet and sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=self.total, unit="level", file=sys.stderr,
                                dynamic_ncols=True)
            except ImportError:
                self.bar = None

    def say(self, msg: str) -> None:
        if self.quiet:
            return
        line = f"[sweep +{time.time() - self.t0:5.0f}s] {msg}"
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def step(self, msg: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_description(msg[:40])
            self.bar.update(1)
        self.say(f"({self.done}/{self.total}) {msg}")

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ------------------------------------------------------------------------------------------
# the sweep


class Sweep:
    def __init__(self, cfg: SweepConfig):
        self.cfg = cfg
        self.t_start = time.time()
        self.rows: List[dict] = []
        self.timeline: List[dict] = []
        self.skipped: List[str] = []
        self.notes: List[str] = []
        self.systems_info: Dict[str, dict] = {}
        self.outputs: Dict[str, Dict[tuple, array]] = {}
        self.servers: Dict[str, ServerProcess] = {}
        self.group: Optional[ServerGroup] = None
        self.status = "running"
        self.sglang_version = _pkg_version("sglang")
        self.traces_f = None
        self._validate()
        self.target_cfg = read_config(cfg.target)
        self.draft_cfg = read_config(cfg.draft)
        self.vocab = self._vocab()
        self.prog: Optional[Progress] = None
        self.failed: Dict[str, str] = {}
        self.machine = "unknown"
        self.common: List[str] = []
        self.user: List[str] = []
        self.log_dir: Optional[Path] = None
        self.pin = SchedulerPin(cfg.pin_scheduler_cpus) if cfg.pin_scheduler_cpus else None
        self._profiled: set = set()  # (system, N) whose level was profiled (--profile-at)
        self._interleave_passes: Dict[int, int] = {}  # N -> interleaved levels measured so far

    # -- checks -------------------------------------------------------------------------
    def _validate(self):
        c = self.cfg
        if not c.systems:
            raise BenchError("no systems given")
        seen = set()
        for s in c.systems:
            if not valid_system_name(s):
                raise BenchError(f"bad system name {s!r}: use plain, eagle3, builtin-adaptive "
                                 f"or adaptive-spec:<variant>")
            if s in seen:
                raise BenchError(f"system {s!r} given twice")
            seen.add(s)
        for name, url in c.attach.items():
            if name not in seen:
                raise BenchError(f"--attach {name}=...: {name!r} is not in --systems")
            lg.check_loopback(url)
        self.sys_over, self.sys_app = parse_system_args(c.system_args)
        started = [s for s in c.systems if s not in c.attach]
        self.defs = {s: system_def(s, self.sys_over, self.sys_app) for s in started}
        if started:
            if not c.target:
                raise BenchError("--target DIR is needed to start servers (or --attach all)")
            if not Path(c.target).is_dir():
                raise BenchError(f"--target {c.target}: not a directory")
            if any(d.speculative for d in self.defs.values()):
                if not c.draft:
                    raise BenchError("--draft DIR is needed for speculative systems")
                if not Path(c.draft).is_dir():
                    raise BenchError(f"--draft {c.draft}: not a directory")
        if any(n < 1 for n in c.concurrency):
            raise BenchError("concurrency levels must be >= 1")
        if any(r <= 0 for r in c.rates):
            raise BenchError("request rates must be > 0")
        if c.new_tokens < 1:
            raise BenchError("--new-tokens must be >= 1")
        if not c.prompt_len or any(p < 1 for p in c.prompt_len):
            raise BenchError("--prompt-len values must be >= 1")
        if c.temperature < 0:
            raise BenchError("--temperature must be >= 0")
        if c.pattern not in ("steady", "step", "sawtooth", "bursty"):
            raise BenchError(f"unknown pattern {c.pattern!r}")
        if c.pattern != "steady" and c.rates:
            raise BenchError("--pattern and --rate do not combine: patterns are closed-loop")
        if c.time_budget_s <= 0 or c.drain_s < 0:
            raise BenchError("--time-budget-s must be > 0 and --drain-s >= 0")
        if any(n < 1 or s <= 0 for n, s in c.time_budget_from.items()):
            raise BenchError("--time-budget-from: N >= 1 and seconds > 0 (e.g. 128:8,256:10)")
        if not 0 <= c.new_tokens_spread < 1:
            raise BenchError("--new-tokens-spread must be in [0, 1)")
        if c.start_mode not in ("parallel", "serial"):
            raise BenchError(f"--start-mode {c.start_mode!r}: parallel or serial")
        if c.order not in ("level", "system"):
            raise BenchError(f"--order {c.order!r}: level or system")
        if not 1 <= c.repeat <= MAX_REPEAT:
            raise BenchError(f"--repeat must be in 1..{MAX_REPEAT}")
        if c.repeat > 1 and c.pattern != "steady":
            raise BenchError("--repeat is for closed/open levels, not load patterns")
        if c.spec_steps < 1:
            raise BenchError("--spec-steps must be >= 1")
        for name, k in c.system_steps.items():
            if name not in self.defs or not self.defs[name].speculative or name == "builtin-adaptive":
                raise BenchError(f"--system-steps {name}: not a speculative system this sweep "
                                 "starts (builtin-adaptive takes its steps from its config)")
            if not 1 <= k <= 16:
                raise BenchError(f"--system-steps {name}={k}: steps must be in 1..16")
        if c.mem_fraction_static is not None and not 0 < c.mem_fraction_static < 1:
            raise BenchError("--mem-fraction-static must be in (0, 1)")
        if c.pattern != "steady" and (c.pattern_low < 0 or c.pattern_high < 1):
            raise BenchError("--pattern-low must be >= 0 and --pattern-high >= 1")
        if c.pattern in ("sawtooth", "bursty") and c.period_s <= 0:
            raise BenchError("--period-s must be > 0")
        if c.pattern == "bursty" and not 0 < c.burst_s < c.period_s:
            raise BenchError("--burst-s must be in (0, --period-s)")
        if c.builtin_adaptive_config:
            builtin_adaptive_steps(c.builtin_adaptive_config)  # readable, has candidates
        if c.interleave:
            if c.pattern != "steady" or c.rates:
                raise BenchError("--interleave runs closed levels (--concurrency), not patterns "
                                 "or rates")
            il.check_settings(c.interleave, c.systems, c.interleave_window_s,
                              c.interleave_settle_s, c.interleave_rounds)

    def _vocab(self) -> int:
        if self.cfg.vocab:
            return int(self.cfg.vocab)
        v = self.target_cfg.get("vocab_size")
        if isinstance(v, int) and v > 200:
            return v
        return 0  # resolved after attach from the server's model path, else an error

    # -- derived settings ---------------------------------------------------------------
    @property
    def max_concurrency(self) -> int:
        c = self.cfg
        if c.pattern != "steady":
            return max(c.pattern_high, c.pattern_low, 1)
        return max(c.concurrency) if c.concurrency else 1

    def _kv_tokens(self) -> int:
        c = self.cfg
        steps = max(c.spec_steps, *c.system_steps.values(),
                    builtin_adaptive_steps(c.builtin_adaptive_config)
                    if "builtin-adaptive" in self.defs else 0)
        # prompts are used round-robin, so the requests in flight have the mean length
        mean_prompt = -(-sum(c.prompt_len) // len(c.prompt_len))
        # with spread output lengths a request in flight is more likely a long one: its mean
        # length is E[L^2]/E[L] = new_tokens * (1 + spread^2 / 3) for the uniform spread
        # (sizing for the longest ran four servers out of GPU memory on 2026-11-29)
        in_flight = math.ceil(c.new_tokens * (1 + c.new_tokens_spread ** 2 / 3))
        per_req = mean_prompt + in_flight + 2 * (steps + 1) + 8
        t = int(self.max_concurrency * per_req * 1.05) + 1024
        return max(16384, (t + 1023) // 1024 * 1024)

    def memory_estimate(self) -> Optional[dict]:
        """Rough GPU memory per started server (weights from the safetensors sizes, KV from
        the config and --max-total-tokens, plus ~3 GiB of graphs/activations/context)."""
        def weights(d):
            try:
                return sum(p.stat().st_size for p in Path(d).glob("*.safetensors"))
            except OSError:
                return 0

        def kv_per_token(cfg):
            try:
                layers = int(cfg["num_hidden_layers"])
                heads = int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
                hd = int(cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                return None
            return layers * heads * hd * 2 * 2  # K and V, bf16

        if not self.defs or not self.cfg.target:
            return None
        kvt = kv_per_token(self.target_cfg)
        if kvt is None:
            return None
        tokens = self.cfg.max_total_tokens or self._kv_tokens()
        gib = 1024 ** 3
        wt = weights(self.cfg.target)
        wd = weights(self.cfg.draft) if self.cfg.draft else 0
        kvd = kv_per_token(dict(self.target_cfg, num_hidden_layers=1)) or 0
        per = {}
        for name, d in self.defs.items():
            b = wt + tokens * kvt + 3 * gib
            if d.speculative:
                b += wd + tokens * kvd
            per[name] = round(b / gib, 1)
        return {"per_server_gib": per, "total_gib": round(sum(per.values()), 1),
                "kv_tokens": tokens}

    def _context_len(self) -> int:
        c = self.cfg
        need = max(c.prompt_len) + c.new_tokens + 64
        mp = self.target_cfg.get("max_position_embeddings")
        ctx = max(4096, need)
        if isinstance(mp, int) and mp > 0:
            if need > mp:
                raise BenchError(f"prompt {max(c.prompt_len)} + {c.new_tokens} new tokens exceed "
                                 f"the target's max_position_embeddings {mp}")
            ctx = min(ctx, mp)
        return ctx

    def common_args(self) -> List[str]:
        c = self.cfg
        n_started = len(self.defs)
        frac = c.mem_fraction_static
        if frac is None:
            frac = 0.92 if (c.start_mode == "parallel" and n_started > 1) else 0.85
        maxbs = self.max_concurrency
        cg = cuda_graph_bs(min(maxbs, 512))
        return ["--skip-tokenizer-init", "--dtype", "bfloat16", "--attention-backend", "triton",
                "--sampling-backend", "pytorch", "--grammar-backend", "none",
                "--context-length", str(self._context_len()),
                "--max-running-requests", str(maxbs),
                "--max-total-tokens", str(c.max_total_tokens or self._kv_tokens()),
                "--mem-fraction-static", f"{frac:g}",
                # prefill CUDA graphs: SGLang's own default (0.5.16: breakable; sessions 1-32
                # ran them disabled, and the spec servers' plain prefills would not replay them:
                # hooks_offpath.prefill_graph_capture_mode)
                "--cuda-graph-backend-decode", "full",
                "--cuda-graph-bs-decode", *[str(b) for b in cg],
                "--random-seed", str(c.seed), "--log-level", "info",
                # several servers share the host: idle ones must not spin on a CPU core
                *(["--sleep-on-idle"] if n_started > 1 else [])]

    def user_server_args(self) -> List[str]:
        out: List[str] = []
        for s in self.cfg.server_args:
            try:
                out += shlex.split(s)
            except ValueError as e:
                raise BenchError(f"bad --server-arg {s!r}: {e}") from None
        return out

    def build_servers(self) -> List[ServerProcess]:
        c = self.cfg
        python = c.python or default_python()
        log_dir = Path(c.log_dir or f"/tmp/adaptive-spec-bench/{time.strftime('%Y%m%d-%H%M%S')}")
        common = self.common_args()
        user = self.user_server_args()
        extra_env = {}
        if c.llama_only_registry and "SGLANG_DISABLED_MODEL_ARCHS" not in os.environ:
            archs = list(self.target_cfg.get("architectures") or []) + \
                list(self.draft_cfg.get("architectures") or [])
            v = llama_only_disabled_archs(archs)
            if v:
                extra_env["SGLANG_DISABLED_MODEL_ARCHS"] = v
        env = child_env(extra_env)
        ports: List[int] = []
        out = []
        # plain first: its start (no draft, no verify graphs) is the quickest and least
        # memory-hungry, which keeps the staggered starts apart
        order = sorted(c.systems, key=lambda s: (s != "plain",))
        for name in order:
            if name in c.attach:
                sp = ServerProcess(name, url=c.attach[name])
                self.systems_info[name] = {"launch": "attached", "url": sp.url}
                out.append(sp)
                continue
            d = self.defs[name]
            port = free_port(avoid=ports)
            ports.append(port)
            steps = c.system_steps.get(name, c.spec_steps)
            extra = list(d.extra)
            notes = d.note
            if name == "builtin-adaptive":
                steps = builtin_adaptive_steps(c.builtin_adaptive_config)
                if c.builtin_adaptive_config:
                    extra += ["--speculative-adaptive-config", c.builtin_adaptive_config]
                notes = (f"SGLang --speculative-adaptive, start steps {steps} = largest candidate "
                         f"of {'config ' + c.builtin_adaptive_config if c.builtin_adaptive_config else 'SGLang default config (candidates 1,3,7 / 0,1,3 / 0,1 / 0 by batch size)'}"
                         f"; with fewer start steps it fails CUDA-graph capture on this vocab")
            spec = spec_args(c.draft, steps) if d.speculative else None
            module = c.sglang_launcher if d.launcher == "sglang" else c.ours_launcher
            cmd = build_command(python, module, c.target, port, common, spec, extra, user)
            safe = name.replace(":", "_")
            sp = ServerProcess(name, cmd=cmd, port=port, log_path=log_dir / f"server-{safe}.log",
                               env=env)
            self.systems_info[name] = {
                "launch": module, "variant_args": extra,
                "spec_steps": steps if d.speculative else 0,
                "notes": notes or None,
            }
            out.append(sp)
        self.common = common
        self.user = user
        self.log_dir = log_dir
        return out

    # -- output ------------------------------------------------------------------------
    def result(self) -> dict:
        c = self.cfg
        any_spec = any(s != "plain" for s in c.systems)
        sim = "SGLANG_SIMULATE_ACC_LEN" in os.environ or any(
            "SGLANG_SIMULATE_ACC_LEN" in a for a in c.server_args + c.system_args)
        wl = {"kind": "closed", "new_tokens": c.new_tokens, "prompt_tokens": list(c.prompt_len),
              "temperature": c.temperature, "stream": c.stream, "seed": c.seed,
              "time_budget_s": c.time_budget_s, "drain_s": c.drain_s,
              **({"time_budget_from": {str(n): v for n, v in sorted(c.time_budget_from.items())}}
                 if c.time_budget_from else {}),
              **({"new_tokens_spread": c.new_tokens_spread} if c.new_tokens_spread else {}),
              "requests_per_level": c.requests_per_level or
              f"max(2N, 8) capped at {c.max_requests_cap}",
              "order": c.order if c.start_mode == "parallel" else "system",
              "start_mode": c.start_mode}
        if c.top_p is not None:
            wl["top_p"] = c.top_p
        if c.top_k is not None:
            wl["top_k"] = c.top_k
        if c.rates:
            wl["kind"] = "open"
            wl["request_rates"] = list(c.rates)
            wl["max_concurrency"] = self.max_concurrency
        elif c.pattern != "steady":
            wl["kind"] = c.pattern
            wl["schedule"] = self.schedule().describe()
            wl["pattern"] = {"low": c.pattern_low, "high": c.pattern_high,
                             "duration_s": c.duration_s, "period_s": c.period_s,
                             "burst_s": c.burst_s}
        else:
            wl["concurrency"] = list(c.concurrency)
            wl["throughput_window"] = ("steady: from the moment every one of the level's first N "
                                       "requests has its first token until issuing stops (row "
                                       "'window'; 'whole' when that span is under 1 s); "
                                       "output_tok_s_whole includes ramp-up and drain")
        res = {
            "schema": "adaptive-spec-bench/1",
            "date": today(),
            "machine": self.machine,
            "sglang_version": self.sglang_version or "unknown",
            "code_digest": run_digest(),  # code_digest.py: which commit ran
            "model": c.model_desc or describe_model(c.target, self.target_cfg, "target")
            or self._attached_model_desc() or "unknown",
            "draft": c.draft_desc or describe_model(c.draft, self.draft_cfg, "draft"),
            "acceptance": ("simulated" if sim else "real") if any_spec else "none",
            "workload": wl,
            "command": c.command or "adaptive-spec-bench sweep",
            "status": self.status,
            "duration_s": round(time.time() - self.t_start, 1),
            "systems": self.systems_info,
            "rows": self.rows,
        }
        if self.common:
            res["server_args"] = {"common": self.common, "user": self.user}
        if self.timeline:
            res["timeline"] = self.timeline
        elif c.pattern == "step":
            res["timeline"] = []
        if c.temperature == 0 and "plain" in self.outputs:
            res["lossless"] = st.lossless_check(self.outputs)
        if c.interleave:
            wl["interleave"] = {"arms": list(c.interleave), "window_s": c.interleave_window_s,
                                "settle_s": c.interleave_settle_s, "rounds": c.interleave_rounds}
            wl["throughput_window"] = ("interleaved: each row one arm's window, from its "
                                       "switch plus settle_s to the next switch")
            forced = [il.ARM_SYSTEMS[a] for a in c.interleave if a in il.ARM_SYSTEMS]
            res["paired_vs_static"] = st.paired_ratios(self.rows, forced)
            if il.NOTE not in self.notes:
                self.notes.append(il.NOTE)
        elif c.repeat > 1:
            res["paired_vs_plain"] = st.paired_ratios(self.rows)
            if "eagle3" in c.systems:  # the envelope in each repeat: the issues' 0.98x claims
                res["paired_vs_envelope"] = st.paired_ratios(self.rows, ("plain", "eagle3"))
            # mean over repeats against the better reference's mean (no per-repeat max bias)
            res["means_vs_envelope"] = st.means_vs_envelope(self.rows)
        if self.skipped:
            res["skipped"] = self.skipped
        if self.notes:
            res["notes"] = self.notes
        return res

    def _attached_model_desc(self) -> Optional[str]:
        for info in self.systems_info.values():
            mp = (info.get("server_info") or {}).get("model_path")
            if mp:
                return describe_model(mp, read_config(mp), "target")
        return None

    def write(self) -> None:
        if not self.cfg.out:
            return
        out = Path(self.cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.rows.sort(key=self._row_order())  # measured in rotation; stored level by level
        rows = self.rows
        st.add_ratios(rows)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(self.result(), indent=1, sort_keys=False) + "\n")
        os.replace(tmp, out)

    def _row_order(self):
        """Sort key: a row's (level, repeat, system) position in the configured order (stable
        within)."""
        levels = {lv[1]: i for i, lv in enumerate(self.levels())} if self.cfg.pattern == "steady" else {}
        systems = {name: i for i, name in enumerate(self.cfg.systems)}
        field = "request_rate" if self.cfg.rates else "concurrency"
        return lambda row: (levels.get(row.get(field), 0), row.get("repeat", 0),
                            systems.get(row.get("system"), len(systems)))

    # -- measuring ---------------------------------------------------------------------
    def time_left(self) -> float:
        if self.cfg.deadline_s is None:
            return float("inf")
        return self.cfg.deadline_s - (time.time() - self.t_start)

    def schedule(self) -> lg.Schedule:
        c = self.cfg
        return lg.pattern_schedule(c.pattern, c.pattern_low, c.pattern_high, c.duration_s,
                                   c.period_s, c.burst_s)

    def levels(self) -> List[tuple]:
        c = self.cfg
        if c.rates:
            return [("open", r) for r in c.rates for _ in range(c.repeat)]
        if c.pattern != "steady":
            return [(c.pattern, None)]
        return [("closed", n) for n in c.concurrency for _ in range(c.repeat)]

    def level_budget_s(self, level: tuple) -> float:
        """Issuing time of a closed/open level: --time-budget-s, or the --time-budget-from
        entry of the largest N <= the level's concurrency (high loads need longer levels: a
        request lives longer and the streams take longer to spread out)."""
        kind, val = level
        c = self.cfg
        if c.interleave:  # the rounds, after the ramp to N streaming requests (~1-5 s)
            return il.planned_s(c.interleave, c.interleave_window_s, c.interleave_rounds) + 5.0
        n = int(val) if kind == "closed" else self.max_concurrency
        keys = [k for k in c.time_budget_from if k <= n]
        return c.time_budget_from[max(keys)] if keys else c.time_budget_s

    def _profiles(self, name: Optional[str], level: tuple) -> bool:
        """Whether `name`'s next measurement of this level is profiled: the first of its
        repeats only (each profile costs ~40 s of the sweep's time; one per system answers
        where its time goes)."""
        kind, val = level
        return (kind == "closed" and int(val) in self.cfg.profile_at
                and (name, int(val)) not in self._profiled)

    def level_cost_s(self, level: tuple, name: Optional[str] = None) -> float:
        kind, _ = level
        c = self.cfg
        if kind in ("closed", "open"):
            extra = 0.0
            if self._profiles(name, level):
                from .level_profile import LOAD_S
                extra = LOAD_S + c.drain_s + 30.0  # the profiled run and writing its trace
            return self.level_budget_s(level) + c.drain_s + 2.0 + extra
        return c.duration_s + c.drain_s + 2.0

    def new_tokens_fn(self, level_key: str):
        c = self.cfg
        if c.new_tokens_spread <= 0:
            return None
        return lambda idx: lg.spread_new_tokens(c.seed, level_key, idx, c.new_tokens,
                                                c.new_tokens_spread)

    def client(self, sp: ServerProcess) -> lg.Client:
        c = self.cfg
        return lg.Client(sp.url, new_tokens=c.new_tokens, temperature=c.temperature,
                         top_p=c.top_p, top_k=c.top_k, stream=c.stream,
                         request_timeout_s=max(60.0, max([c.time_budget_s, *c.time_budget_from.values()])
                                               + c.drain_s + 30),
                         max_connections=self.max_concurrency + 16)

    def prompt_fn(self, level_key: str):
        c = self.cfg
        vocab = self.vocab

        def fn(idx: int) -> List[int]:
            return lg.make_prompt(c.seed, level_key, idx, c.prompt_len, vocab)
        return fn

    async def warmup(self, sp: ServerProcess) -> None:
        """One short wave at every level's batch size: the first batch of a new size can
        compile kernels (Triton specialises on sizes) and adaptive servers learn their cost
        model; neither should land inside a measured level."""
        c = self.cfg
        sizes = sorted({min(4, self.max_concurrency), self.max_concurrency,
                        *(n for kind, n in self.levels() if kind == "closed")})
        records = []
        if self.pin:
            # on the CPUs the levels run on: an adaptive server learns its step costs here. GPU,
            # session 64 (H100, one request): in the first second of decoding forced-on's k = 3
            # steps read 4.7 ms, 3.6 after; goodput's probes, all in that second, 4.4-4.6, and
            # it ran plain through the level. Whether that second was the unpinned warm-up is
            # not in the logs; pinned, it cannot be
            self.pin.pin(server_pid(sp))
        async with self.client(sp) as cl:
            cl.sp = dict(cl.sp, max_new_tokens=min(c.warmup_tokens, c.new_tokens))
            for n in sizes:
                r = await lg.run_closed(cl, self.prompt_fn(f"warmup-{n}"), lg.steady(n, 30.0),
                                        max_requests=2 * n, time_budget_s=20.0, drain_s=20.0)
                records += r.records
            await lg.wait_idle(cl, 30.0)
        errs = [r.error for r in records if r.error]
        if errs:
            raise RunError(f"{sp.name}: warm-up requests failed ({len(errs)}): {errs[0]}")

    async def server_info(self, sp: ServerProcess) -> None:
        async with self.client(sp) as cl:
            code, obj = await cl.get_json("/server_info", timeout=10.0)
            info = {}
            if code == 200 and isinstance(obj, dict):
                for k in SERVER_INFO_KEYS:
                    if k in obj:
                        info[k] = obj[k]
                for k, v in obj.items():
                    if k.startswith("adaptive_spec") and isinstance(v, (int, float, str, bool,
                                                                          type(None))):
                        info[k] = v
                backends = cuda_graph_backends(obj.get("cuda_graph_config"))
                if backends:
                    info["cuda_graph_backends"] = backends
                ist = obj.get("internal_states")
                if isinstance(ist, list) and ist and isinstance(ist[0], dict):
                    for k in ("avg_spec_accept_length",):
                        if k in ist[0]:
                            info["start_" + k] = ist[0][k]
                if info.get("version") and (self.sglang_version is None or sp.attached):
                    self.sglang_version = str(info["version"])
            code2, _ = await cl.get_json(lg.STATUS_PATH, timeout=5.0)
            info["adaptive_spec_status_endpoint"] = code2 == 200
        self.systems_info.setdefault(sp.name, {})["server_info"] = info
        if not self.vocab:
            mp = info.get("model_path")
            v = read_config(mp).get("vocab_size") if mp else None
            if isinstance(v, int) and v > 200:
                self.vocab = v

    async def measure_level(self, sp: ServerProcess, level: tuple) -> None:
        c = self.cfg
        kind, val = level
        name = sp.name
        async with self.client(sp) as cl:
            idle = await lg.wait_idle(cl, 30.0)
            if not idle:
                self.notes.append(f"{name}: server not idle 30 s before level {kind} {val}")
            poller = lg.Poller(cl, c.sample_interval_s)
            poller.start()
            pin = self.pin.pin(server_pid(sp)) if self.pin else {}
            meter, lag, place = CpuMeter(server_pid(sp)), LoopLag(), CorePlacement(server_pid(sp))
            meter.start()
            lag.start()
            place.start()
            try:  # stopped even when the level fails (a server died): no stray timer task
                t_wall = time.time()
                windows = None
                if kind == "closed":
                    n = int(val)
                    key = f"c{n}"
                    if c.interleave:
                        res, windows = await self._interleaved(cl, n, key)
                    else:
                        budget = self.level_budget_s(level)
                        mr = c.requests_per_level or lg.level_requests(n, cap=c.max_requests_cap)
                        res = await lg.run_closed(cl, self.prompt_fn(key), lg.steady(n, budget),
                                                  max_requests=mr, time_budget_s=budget,
                                                  drain_s=c.drain_s,
                                                  new_tokens_fn=self.new_tokens_fn(key))
                    sched = None
                elif kind == "open":
                    rate = float(val)
                    key = f"r{rate:g}"
                    budget = self.level_budget_s(level)
                    mr = c.requests_per_level or lg.open_requests(rate, budget, c.max_requests_cap)
                    res = await lg.run_open(cl, self.prompt_fn(key), rate=rate,
                                            max_concurrency=self.max_concurrency, max_requests=mr,
                                            time_budget_s=budget, drain_s=c.drain_s,
                                            seed=c.seed, new_tokens_fn=self.new_tokens_fn(key))
                    sched = None
                else:
                    key = kind
                    sched = self.schedule()
                    res = await lg.run_closed(cl, self.prompt_fn(key), sched,
                                              max_requests=c.requests_per_level or 100000,
                                              time_budget_s=sched.duration, drain_s=c.drain_s,
                                              new_tokens_fn=self.new_tokens_fn(key))
            finally:
                cpu = meter.stop()
                lags = await lag.stop()
                placement = await place.stop()
            samples = await poller.stop()
            level_wall_s = round(time.time() - t_wall, 2)
            # before the next level, of whichever server: the cut-off requests must not keep
            # decoding on the shared GPU
            leftover = await lg.end_level(cl)
            if leftover.get("idle") is False:
                self.notes.append(f"{name}: not idle 30 s after level {kind} {val} ({leftover})")
        recs = res.records
        base = {"system": name}
        if windows is not None:
            self._window_rows(name, int(val), recs, res, windows, samples)
        elif kind in ("closed", "open"):
            row = dict(base, concurrency=int(val) if kind == "closed" else self.max_concurrency)
            if kind == "open":
                row["request_rate"] = float(val)
            steady = res.steady_window(int(val)) if kind == "closed" else None
            row.update(st.summarize(recs, window=steady or res.window, stream=c.stream))
            row["window"] = "steady" if steady else "whole"
            if steady:  # the whole level too (ramp-up and drain included), for reference
                row["output_tok_s_whole"] = st.output_tok_s(recs, res.window)
            self._server_side(row, samples, steady)
            row["level_wall_s"] = level_wall_s
            row["level_began"] = log_stamp(t_wall)
            if leftover:  # what the cut-off left running and how long it took to clear
                row["left_at_cutoff"] = leftover
            # the host's 1-minute load at the level's end: the same plain server's TPOT moved
            # 12.9-16.9 ms between repeats of one run (session 9) while the other GPU's sweep
            # shared the host's cores; this tells later runs whether the host was busy
            row["host_load_1m"] = round(os.getloadavg()[0], 2)
            # which CPU processes were busy (a saturated client or front-end caps a level)
            row["cpu_util"] = cpu
            row.update(lags)
            row.update(placement)  # where the scheduler ran and that CPU's clock
            row.update(pin)  # where it was told to run (--pin-scheduler-cpus)
            if c.repeat > 1:  # the k-th measurement of this system at this level (pairs with plain's k-th)
                row["repeat"] = sum(1 for r in self.rows if r["system"] == name
                                    and st.level_key(r)[:3] == st.level_key(row)[:3])
            err = st.first_error(recs)
            if err:
                row["first_error"] = err[:200]
            if self._profiles(name, level):
                self._profiled.add((name, int(val)))
                row["profile"] = await self._profile(sp, int(val))
            self.rows.append(row)
        else:
            self._pattern_rows(name, recs, res, sched, samples)
        self._trace(name, key, recs)
        self._keep_outputs(name, key, recs)

    async def _interleaved(self, cl: lg.Client, n: int, key: str) -> tuple:
        """A closed loop of n requests while the server's settings switch between the arms
        (interleave.py): (the loop's result, the counted windows)."""
        c = self.cfg
        total = il.planned_s(c.interleave, c.interleave_window_s, c.interleave_rounds)
        records: list = []
        stop = asyncio.Event()

        def ready() -> bool:
            return lg.first_streaming(records, n) is not None

        loop = lg.run_closed(cl, self.prompt_fn(key), lg.steady(n, total + il.READY_TIMEOUT_S),
                             max_requests=c.requests_per_level or 1_000_000,
                             time_budget_s=total + il.READY_TIMEOUT_S, drain_s=c.drain_s,
                             new_tokens_fn=self.new_tokens_fn(key), records=records, stop=stop)
        loop_task = asyncio.ensure_future(loop)
        try:
            windows = await il.run_windows(cl, c.interleave, c.interleave_rounds,
                                           c.interleave_window_s, c.interleave_settle_s, ready,
                                           stop)
        finally:  # `stop` is set either way: the loop ends within its requests' drain
            res = await loop_task
        return res, windows

    def _window_rows(self, name: str, n: int, recs, res, windows, samples) -> None:
        """One row per arm and round; `repeat` numbers rounds on across passes."""
        c = self.cfg
        passes = self._interleave_passes.get(n, 0)
        self._interleave_passes[n] = passes + 1
        for w in windows:
            row = {"system": il.arm_system(w.arm, name), "concurrency": n, "arm": w.arm,
                   "repeat": passes * c.interleave_rounds + w.round, "window": "interleaved",
                   "t_start_s": round(w.t0 - res.t0, 3), "t_end_s": round(w.t1 - res.t0, 3)}
            row.update(st.summarize(recs, window=(w.t0, w.t1), stream=c.stream))
            self._server_side(row, [s for s in samples if w.t0 <= s["t"] <= w.t1])
            self.rows.append(row)

    def _server_side(self, row: dict, samples: List[dict], steady=None) -> None:
        live = [s for s in samples if not s.get("final")]
        runs = [s["running"] for s in live if s.get("running") is not None]
        row["mean_running"] = round(sum(runs) / len(runs), 2) if runs else None
        hists = [s["steps_histogram"] for s in samples if s.get("steps_histogram") is not None]
        steps = [s["steps"] for s in live if s.get("steps") is not None]
        if len(hists) >= 2:
            row["steps_histogram"] = st.histogram_diff(hists[-1], hists[0])
        elif steps:
            row["steps_histogram"] = st.histogram_of(steps)
            row["steps_histogram_source"] = "sampled"
        # what the level's steps were: probes vs the cost model's choices, and how the worker
        # ran them (a level that drafted less than its histogram says paid for re-entries)
        for key in ("decisions", "step_modes"):
            seen = [s[key] for s in samples if s.get(key) is not None]
            if len(seen) >= 2:
                row[key] = st.histogram_diff(seen[-1], seen[0])
            # ... and in the steady window alone (the samples inside it): a level's ramp-up and
            # drain pass through small batches, where drafting is right (session 17: 13-59
            # drafting steps of a 128-request level, most of them there)
            inside = [s[key] for s in samples if steady and s.get(key) is not None
                      and steady[0] <= s["t"] <= steady[1]]
            if len(inside) >= 2:
                row[key + "_steady"] = st.histogram_diff(inside[-1], inside[0])

    def _pattern_rows(self, name, recs, res, sched, samples):
        c = self.cfg
        t0 = res.t0
        segs = sched.segments
        groups: Dict[object, List[tuple]] = {}
        if c.pattern == "step":
            for i, (a, b, n) in enumerate(segs):
                groups[(i, n)] = [(t0 + a, t0 + b)]
        else:
            for a, b, n in segs:
                groups.setdefault(n, []).append((t0 + a, t0 + b))
        for gk, wins in groups.items():
            n = gk[1] if isinstance(gk, tuple) else gk
            row = {"system": name, "concurrency": int(n)}
            if isinstance(gk, tuple):
                row["phase"] = gk[0]
                row["t_start_s"] = round(wins[0][0] - t0, 3)
                row["t_end_s"] = round(wins[0][1] - t0, 3)
            row.update(st.summarize(recs, windows=wins, stream=c.stream))
            sub = [s for s in samples if any(a <= s["t"] <= b for a, b in wins)]
            self._server_side(row, sub)
            self.rows.append(row)
        whole = st.summarize(recs, window=(t0, t0 + sched.duration), stream=c.stream)
        self.systems_info.setdefault(name, {})["pattern_summary"] = {
            k: whole[k] for k in ("output_tok_s", "tpot_ms_p50", "tpot_ms_p99", "ttft_ms_p50",
                                  "mean_accept_len", "requests", "errors")}
        self.timeline += lg.timeline_from(samples, recs, t0, sched, system=name)

    def _keep_outputs(self, name: str, key: str, recs) -> None:
        if self.cfg.temperature != 0:
            return
        d = self.outputs.setdefault(name, {})
        for r in recs:
            if r.error is None and r.output_ids:
                d[(key, r.idx)] = array("l", r.output_ids)
            r.output_ids = None

    def _trace(self, name: str, key: str, recs) -> None:
        if self.traces_f is None:
            return
        for r in recs:
            d = r.to_dict()
            d["output_digest"] = digest(r.output_ids) if r.output_ids else None
            d["system"] = name
            d["level"] = key
            self.traces_f.write(json.dumps(d) + "\n")

    # -- orchestration -----------------------------------------------------------------
    def run(self) -> dict:
        c = self.cfg
        self.machine = machine_string()
        if c.traces_out:
            import gzip

            self.traces_f = gzip.open(c.traces_out, "wt") if c.traces_out.endswith(".gz") \
                else open(c.traces_out, "w")
        servers = self.build_servers()
        self.servers = {s.name: s for s in servers}
        levels = self.levels()
        n_units = len(levels) * len(servers)
        self.prog = Progress(n_units, c.quiet)
        say = self.prog.say
        plan_s = sum(self.level_cost_s(l) for l in levels) * len(servers)
        say(f"{len(servers)} systems x {len(levels)} levels; measuring takes at most "
            f"~{plan_s:.0f} s; server logs in {self.log_dir}")
        mem = self.memory_estimate()
        if mem:
            self.notes.append(f"GPU memory estimate: {mem}")
            gpu = gpu_memory_gib()
            msg = (f"GPU memory estimate: {mem['total_gib']} GiB for {len(mem['per_server_gib'])} "
                   f"servers ({mem['kv_tokens']} KV tokens each)")
            if gpu and c.start_mode == "parallel" and mem["total_gib"] > 0.92 * gpu:
                msg += (f" > 92% of the GPU's {gpu:.0f} GiB: starts may fail; use --start-mode "
                        f"serial, fewer systems or a lower --max-total-tokens")
            say(msg)
        self.group = ServerGroup(servers)
        try:
            if c.start_mode == "parallel":
                self._start(servers)
                live = [s for s in servers if s.name not in self.failed]
                lg.run_async(self._measure(live, levels, per_system_start=False))
            else:
                lg.run_async(self._measure(servers, levels, per_system_start=True))
            self.status = "partial" if (self.skipped or self.failed) else "complete"
        except KeyboardInterrupt:
            self.status = "interrupted"
            say("interrupted: stopping servers, writing what was measured")
            raise
        finally:
            if self.status == "running":
                self.status = "failed"
            self.group.stop_all()
            if self.traces_f is not None:
                self.traces_f.close()
            self.write()
            self.prog.close()
        return self.result()

    def _event(self, sp: ServerProcess, what: str) -> None:
        if what == "ready":
            self.systems_info[sp.name]["start_s"] = sp.start_s
            self.prog.say(f"{sp.name}: ready after {sp.start_s:.1f} s" if not sp.attached
                          else f"{sp.name}: attached at {sp.url}")
        elif what == "launched":
            self.prog.say(f"{sp.name}: launched on port {sp.port} (log {sp.log_path})")
        elif what == "died":
            self.prog.say(f"{sp.name}: FAILED to start: {sp.error}")

    def _start(self, servers: List[ServerProcess]) -> None:
        c = self.cfg
        self.failed = {}
        timeout = c.start_timeout_s
        if c.deadline_s is not None:
            timeout = min(timeout, max(10.0, self.time_left() - 30))
            if timeout < c.min_start_s:
                raise RunError(f"the deadline leaves the servers {timeout:.0f} s to start, under "
                               f"--min-start-s {c.min_start_s:.0f}: nothing launched")
        self.group.start_all(stagger_s=c.start_stagger_s, on_event=self._event)
        errors = self.group.wait_all(timeout, on_event=self._event)
        for name, e in errors.items():
            self.failed[name] = e
            self.systems_info[name]["error"] = e.splitlines()[0][:300]
            self.prog.say(e)
        for s in servers:
            self.systems_info[s.name].update({k: v for k, v in s.describe().items()
                                              if k in ("start_s", "log", "url", "attached")})
        if len(self.failed) == len(servers):
            raise RunError("no server started: " + "; ".join(
                e.splitlines()[0] for e in self.failed.values()))

    async def _measure(self, servers: List[ServerProcess], levels: List[tuple],
                       per_system_start: bool) -> None:
        c = self.cfg
        say = self.prog.say
        if not per_system_start:
            for sp in servers:
                await self.server_info(sp)
            self._check_vocab()
            ready = []
            for sp in servers:
                if await self._warm(sp):
                    ready.append(sp)
            if c.order == "level":
                for i, lv in enumerate(levels):
                    # who goes first meets a level's first-use costs (kernel builds for new
                    # shapes) and who goes last any deadline cut: rotate, level by level
                    for j in range(len(ready)):
                        await self._one(ready[(i + j) % len(ready)], lv)
            else:
                for sp in ready:
                    for lv in levels:
                        await self._one(sp, lv)
            for sp in ready:
                await self._final_status(sp)
            return
        for sp in servers:
            if self.time_left() < 60:
                self.skipped += [f"{sp.name} (all levels: deadline)"]
                continue
            timeout = c.start_timeout_s
            if c.deadline_s is not None:
                timeout = min(timeout, max(10.0, self.time_left() - 30))
            sp.start()
            self._event(sp, "launched")
            try:
                await asyncio.get_running_loop().run_in_executor(None, sp.wait_ready, timeout)
                self._event(sp, "ready")
                self.systems_info[sp.name].update(
                    {k: v for k, v in sp.describe().items() if k in ("start_s", "log", "url")})
                await self.server_info(sp)
                self._check_vocab()
                if await self._warm(sp):
                    for lv in levels:
                        await self._one(sp, lv)
                    await self._final_status(sp)
            except ServerDied as e:
                self.failed[sp.name] = str(e)
                self.systems_info[sp.name]["error"] = str(e).splitlines()[0][:300]
                say(str(e))
            finally:
                await asyncio.get_running_loop().run_in_executor(None, sp.stop)

    def _check_vocab(self):
        if not self.vocab:
            raise BenchError("vocabulary size unknown: give --vocab N (or --target DIR with a "
                             "config.json)")

    async def _warm(self, sp: ServerProcess) -> bool:
        if not self.cfg.warmup:
            return True
        t = time.time()
        self.systems_info[sp.name]["warmup_began"] = log_stamp(t)
        try:
            await self.warmup(sp)
        except BenchError as e:
            self.failed[sp.name] = str(e)
            self.systems_info[sp.name]["error"] = str(e)[:300]
            self.prog.say(str(e))
            return False
        self.systems_info[sp.name]["warmup_s"] = round(time.time() - t, 2)
        if "all" in self.cfg.freeze_gc or sp.name in self.cfg.freeze_gc:
            await self.freeze_gc(sp)
        return True

    async def freeze_gc(self, sp: ServerProcess) -> None:
        """SGLang's /freeze_gc (0.5.16: scheduler, tokenizer manager, detokenizer); a server that
        refuses it is measured anyway, marked gc_frozen false."""
        async with self.client(sp) as cl:
            code, _ = await cl.post_json("/freeze_gc", {}, timeout=30.0)
        self.systems_info[sp.name]["gc_frozen"] = code == 200
        if code != 200:
            self.prog.say(f"{sp.name}: /freeze_gc answered {code}; measured with its GC as it was")

    async def _one(self, sp: ServerProcess, lv: tuple) -> None:
        kind, val = lv
        label = f"{sp.name} {kind}={val}" if val is not None else f"{sp.name} {kind}"
        if self.time_left() < self.level_cost_s(lv, sp.name):
            self.skipped.append(f"{label} (deadline)")
            self.prog.step(f"{label}: skipped (deadline)")
            return
        if not sp.alive():
            self.skipped.append(f"{label} (server gone)")
            self.prog.step(f"{label}: skipped (server gone)")
            return
        n0 = len(self.rows)
        await self.measure_level(sp, lv)
        await self._scrape_metrics(sp, label)
        await self._level_cost_model(sp, self.rows[n0:])
        self.write()
        new = self.rows[n0:]
        msg = "; ".join(_row_text(r) for r in new)
        self.prog.step(f"{label}: {msg}")


    async def _profile(self, sp: ServerProcess, n: int) -> dict:
        """--profile-at: the level's load again, unmeasured, with a torch profile inside."""
        from .level_profile import profile_under_load

        safe = sp.name.replace(":", "_")  # as the server logs are named
        out_dir = str((self.log_dir or Path("/tmp")) / f"profile-{safe}-c{n}")
        async with self.client(sp) as cl:
            return await profile_under_load(cl, self.prompt_fn(f"profile-{n}"), n,
                                            self.cfg.profile_steps, out_dir,
                                            self.new_tokens_fn(f"profile-{n}"), self.cfg.drain_s)

    async def _status_ranks(self, sp: ServerProcess, keys) -> Optional[list]:
        """Our status route's per-rank entries cut to `keys`; None when it did not answer."""
        async with self.client(sp) as cl:
            code, obj = await cl.get_json(lg.STATUS_PATH, timeout=10.0)
        return lg.status_ranks(obj, keys) if code == 200 else None

    async def _final_status(self, sp: ServerProcess) -> None:
        """Keep what an adaptive-spec server learned (cost table, acceptance, decisions)."""
        ranks = await self._status_ranks(sp, (
                "cost_model", "acceptance", "decisions", "steps_histogram", "step_modes", "reentry",
                "switches", "follow", "decide_us_mean", "decide_us_p50", "decide_us_p99", "decide_cpu_us_p50",
                "decide_cpu_us_p99", "decide_policy_cpu_us_p50", "decide_policy_cpu_us_p99",
                "decide_selftest", "rank_check", "fallback",
                # the decode results that held a Triton kernel build (no samples) and the slow ones
                "stalled_results", "slow_results"))
        if ranks is not None:
            self.systems_info[sp.name]["final_status"] = ranks

    async def _level_cost_model(self, sp: ServerProcess, new_rows: list) -> None:
        """The goodput server's step-time table and prefill term as they stood after this level
        (rank 0), kept with the system: the final table alone cannot say what the policy read
        when it chose at 128 requests (session 18, TP = 2: k = 2 there on 120 of 127 steady
        steps, plain ahead on the final table)."""
        if not sp.name.startswith("adaptive-spec") or not new_rows:
            return
        model = ((await self._status_ranks(sp, ("cost_model",))) or [{}])[0].get("cost_model")
        if not isinstance(model, dict):
            return
        row = new_rows[-1]
        entry = {"concurrency": row.get("concurrency"), "repeat": row.get("repeat", 0)}
        entry.update({k: model[k] for k in LEVEL_COST_MODEL_KEYS if k in model})
        self.systems_info[sp.name].setdefault("level_cost_model", []).append(entry)

    async def _scrape_metrics(self, sp: ServerProcess, label: str) -> None:
        """Append the server's adaptive-spec and speculative series from /metrics (once per
        level, after it, so the scrape never overlaps a measurement)."""
        if not self.cfg.metrics_out:
            return
        async with self.client(sp) as cl:
            text = await cl.get_text("/metrics", timeout=10.0)
        if text is None:
            return
        keep = [ln for ln in text.splitlines() if ln.startswith(METRIC_PREFIXES)]
        with open(self.cfg.metrics_out, "a") as f:
            f.write(f"# {time.strftime('%H:%M:%S')} {label}\n")
            f.write("".join(ln + "\n" for ln in keep))


# what `_level_cost_model` keeps of the goodput status's cost model after each level (~1 KB)
LEVEL_COST_MODEL_KEYS = ("step_ms", "step_samples", "prefill_ms_admitted_tokens_per_step",
                         "last_goodput_tok_per_s_per_req")

# /metrics series kept by --metrics-out: ours, and SGLang's speculative / load gauges.
METRIC_PREFIXES = ("adaptive_spec", "sglang:spec", "sglang:num_running_reqs",
                   "sglang:num_queue_reqs", "sglang:gen_throughput")


def _fmt(v, nd=1):
    return "-" if v is None else f"{v:.{nd}f}"


def _row_text(r: dict) -> str:
    s = f"{_fmt(r.get('output_tok_s'), 0)} tok/s, tpot p50 {_fmt(r.get('tpot_ms_p50'))} ms"
    if r.get("mean_accept_len") is not None:
        s += f", accept {r['mean_accept_len']:.2f}"
    if r.get("errors"):
        s += f", {r['errors']} errors"
    if r.get("phase") is not None:
        s = f"phase {r['phase']} (N={r['concurrency']}): " + s
    return s


def table(result: dict) -> str:
    """Plain-text table of a result's rows (one line per row)."""
    hdr = f"{'system':<26} {'N':>5} {'rate':>6} {'tok/s':>9} {'+-95%':>6} {'vs env':>7} " \
          f"{'tpot50':>7} {'tpot99':>7} {'ttft50':>8} {'accept':>6} {'err':>4}"
    lines = [hdr, "-" * len(hdr)]
    for r in result.get("rows", []):
        lines.append(
            f"{r.get('system', '?'):<26} {r.get('concurrency', ''):>5} "
            f"{_fmt(r.get('request_rate'), 1) if r.get('request_rate') else '':>6} "
            f"{_fmt(r.get('output_tok_s'), 0):>9} {_fmt(r.get('output_tok_s_ci95'), 0):>6} "
            f"{_fmt(r.get('tok_s_vs_envelope'), 2):>7} "
            f"{_fmt(r.get('tpot_ms_p50')):>7} {_fmt(r.get('tpot_ms_p99')):>7} "
            f"{_fmt(r.get('ttft_ms_p50')):>8} {_fmt(r.get('mean_accept_len'), 2):>6} "
            f"{r.get('errors', 0):>4}")
    for key, of in (("paired_vs_plain", "plain"), ("paired_vs_envelope", "max(plain, eagle3)"),
                    ("paired_vs_static", "the better forced arm")):
        for p in result.get(key, []):
            ci = f"{p['ci95']:.3f}" if p.get("ci95") is not None else "?"
            lines.append(f"paired {p['system']} N={p['concurrency']}: {p['mean']:.3f}x {of} "
                         f"+- {ci} over {p['repeats']} repeats "
                         f"(each {', '.join(f'{x:.3f}' for x in p['ratios'])})")
    for p in result.get("means_vs_envelope") or st.means_vs_envelope(result.get("rows", [])):
        ci = "[{:.3f}, {:.3f}]".format(*p["ci95"]) if p.get("ci95") else "?"
        lines.append(f"means {p['system']} N={p['concurrency']}: {p['ratio']:.3f}x the better "
                     f"mean ({p['envelope_system']}) 95% {ci} over {p['repeats']} repeats "
                     f"({p['mean_tok_s']:.0f} vs {p['envelope_tok_s']:.0f} tok/s)")
    ll = result.get("lossless")
    if ll:
        for k, v in ll.items():
            lines.append(f"lossless {k}: identical_to_plain={v['identical_to_plain']} "
                         f"({v['requests']} requests, {v.get('tokens', 0)} tokens compared)")
    return "\n".join(lines)


def default_out(name: str) -> str:
    return f"benchmarks/results/{today()}-{name}.json"


def digest(ids: Sequence[int]) -> str:
    return hashlib.sha1(array("l", ids).tobytes()).hexdigest()[:16]
