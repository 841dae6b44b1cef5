"""Start, watch and stop SGLang servers for a sweep (or attach to running ones).

Every started server:
- runs as ``<python> -m <launcher module> <args>`` in its own session (``setsid``), so it and
  all its children (scheduler, detokenizer) are stopped together by process group:
  SIGTERM, a bounded wait, then SIGKILL;
- listens on 127.0.0.1 on its own port and logs to its own file;
- is waited for with a bounded ``/health`` poll that notices early death (exit code and the
  tail of its log in the error).

Systems and their flags live in one table, :data:`SYSTEMS`: add a variant there, or override
from the command line with ``--system-args 'name=--flag value ...'`` (replace) or
``'name+=--flag value'`` (append).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence
from urllib.parse import urlsplit

from .loadgen import BenchError, RunError, check_loopback

SYSTEM_RE = re.compile(r"^(plain|eagle3|builtin-adaptive|adaptive-spec:[a-z0-9][a-z0-9._-]*)$")

SGLANG_LAUNCHER = "sglang.launch_server"
OURS_LAUNCHER = "adaptive_spec.launch_server"


@dataclass
class SystemDef:
    launcher: str                 # "sglang" or "ours"
    speculative: bool             # add the EAGLE-3 flags (draft, steps, topk 1)
    extra: List[str] = field(default_factory=list)
    note: str = ""


# The one table of systems -> flags.  Speculative systems get
#   --speculative-algorithm EAGLE3 --speculative-draft-model-path DRAFT
#   --speculative-num-steps S --speculative-eagle-topk 1 --speculative-num-draft-tokens S+1
# with S = --spec-steps (builtin-adaptive: see builtin_adaptive_steps()).
SYSTEMS: Dict[str, SystemDef] = {
    "plain": SystemDef("sglang", False, [], "no speculation"),
    "eagle3": SystemDef("sglang", True, [], "static EAGLE-3, same draft and steps"),
    "builtin-adaptive": SystemDef(
        "sglang", True, ["--speculative-adaptive"],
        "SGLang --speculative-adaptive; starts with CUDA graphs only when the start steps equal "
        "the largest candidate step count (7 with SGLang's default config)"),
    "adaptive-spec:threshold": SystemDef("ours", True, ["--adaptive-spec-threshold", "32"]),
    "adaptive-spec:goodput": SystemDef("ours", True, ["--adaptive-spec-policy", "goodput"]),
    "adaptive-spec:forced-off": SystemDef("ours", True, ["--adaptive-spec-force", "off"]),
    "adaptive-spec:forced-on": SystemDef("ours", True, ["--adaptive-spec-force", "on"]),
    "adaptive-spec:flapping": SystemDef("ours", True, ["--adaptive-spec-force", "flap:1"]),
    "adaptive-spec:flapping-8": SystemDef("ours", True, ["--adaptive-spec-force", "flap:8"]),
    "adaptive-spec:default": SystemDef("ours", True, []),
}

# SGLang's default --speculative-adaptive config: its largest candidate step count.
BUILTIN_ADAPTIVE_DEFAULT_MAX_STEPS = 7


def valid_system_name(name: str) -> bool:
    return bool(SYSTEM_RE.match(name))


def system_def(name: str, overrides: Optional[Dict[str, List[str]]] = None,
               appends: Optional[Dict[str, List[str]]] = None) -> SystemDef:
    if not valid_system_name(name):
        raise BenchError(f"bad system name {name!r}: use plain, eagle3, builtin-adaptive or "
                         f"adaptive-spec:<variant> (lower-case letters, digits, . _ -)")
    base = SYSTEMS.get(name)
    if base is None:
        if not name.startswith("adaptive-spec:"):
            raise BenchError(f"unknown system {name!r}")
        if not (overrides and name in overrides):
            known = ", ".join(k for k in SYSTEMS if k.startswith("adaptive-spec:"))
            raise BenchError(f"unknown variant {name!r}: known {known}; or define it with "
                             f"--system-args '{name}=--adaptive-spec-... ...'")
        base = SystemDef("ours", True, [])
    sd = SystemDef(base.launcher, base.speculative, list(base.extra), base.note)
    if overrides and name in overrides:
        sd.extra = list(overrides[name])
    if appends and name in appends:
        sd.extra += list(appends[name])
    return sd


def parse_system_args(items: Sequence[str]):
    """'name=--flag v ...' (replace) / 'name+=--flag v' (append) -> (overrides, appends)."""
    over: Dict[str, List[str]] = {}
    app: Dict[str, List[str]] = {}
    for it in items or []:
        m = re.match(r"^\s*([^=+\s]+)\s*(\+?=)(.*)$", it, re.S)
        if not m:
            raise BenchError(f"bad --system-args {it!r}: expected 'name=--flag value ...'")
        name, op, rest = m.group(1), m.group(2), m.group(3)
        if not valid_system_name(name):
            raise BenchError(f"bad system name {name!r} in --system-args")
        try:
            args = shlex.split(rest)
        except ValueError as e:
            raise BenchError(f"bad --system-args {it!r}: {e}") from None
        (app if op == "+=" else over).setdefault(name, []).extend(args)
    return over, app


def builtin_adaptive_steps(config_path: Optional[str]) -> int:
    """Start steps for SGLang's adaptive mode: the largest candidate step count of its config."""
    if not config_path:
        return BUILTIN_ADAPTIVE_DEFAULT_MAX_STEPS
    try:
        cfg = json.loads(Path(config_path).read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read --builtin-adaptive-config {config_path}: {e}") from None
    steps: List[int] = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "candidate_steps" and isinstance(v, list):
                    steps.extend(int(x) for x in v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(cfg)
    if not steps or max(steps) < 1:
        raise BenchError(f"{config_path}: no candidate_steps >= 1 found")
    return max(steps)


def free_port(host: str = "127.0.0.1", avoid: Sequence[int] = ()) -> int:
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            p = s.getsockname()[1]
        if p not in avoid:
            return p
    raise BenchError("no free port found")


def _opener():
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy


def http_get_json(url: str, timeout: float = 5.0):
    """(status, parsed json or None); (None, None) on connection failure.  Loopback only."""
    u = urlsplit(url)
    check_loopback(f"{u.scheme}://{u.netloc}")
    try:
        with _opener().open(url, timeout=timeout) as r:
            body = r.read()
            try:
                return r.status, json.loads(body)
            except ValueError:
                return r.status, None
    except urllib.error.HTTPError as e:
        return e.code, None
    except (urllib.error.URLError, OSError, ValueError):
        return None, None


def log_tail(path: Optional[Path], n: int = 15, width: int = 300) -> List[str]:
    if path is None:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    return [ln[:width] for ln in lines[-n:]]


class ServerDied(RunError):
    pass


class ServerProcess:
    """One server: started as a subprocess in its own process group, or attached to."""

    def __init__(self, name: str, cmd: Optional[List[str]] = None, port: Optional[int] = None,
                 log_path: Optional[Path] = None, env: Optional[dict] = None,
                 url: Optional[str] = None):
        self.name = name
        self.cmd = cmd
        self.port = port
        self.log_path = Path(log_path) if log_path else None
        self.env = env
        self.proc: Optional[subprocess.Popen] = None
        self.url = check_loopback(url) if url else f"http://127.0.0.1:{port}"
        self.attached = cmd is None
        self.t_launch: Optional[float] = None
        self.start_s: Optional[float] = None
        self.error: Optional[str] = None
        self._log_f = None

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        if self.attached:
            return
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_f = open(self.log_path, "ab")
            self._log_f.write(f"==== {self.name}: {shlex.join(self.cmd)}\n".encode())
            self._log_f.flush()
        out = self._log_f if self._log_f is not None else subprocess.DEVNULL
        self.t_launch = time.time()
        try:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env,
                                         start_new_session=True)
        except OSError as e:
            raise BenchError(f"{self.name}: cannot start {self.cmd[0]}: {e}") from None

    def alive(self) -> bool:
        return self.attached or (self.proc is not None and self.proc.poll() is None)

    def health(self, timeout: float = 5.0) -> bool:
        code, _ = http_get_json(self.url + "/health", timeout=timeout)
        return code == 200

    def poll_ready(self) -> bool:
        """One non-blocking-ish readiness check; raises ServerDied if the process exited."""
        if not self.attached and self.proc is not None and self.proc.poll() is not None:
            rc = self.proc.returncode
            tail = log_tail(self.log_path, 12)
            self.error = f"exited with code {rc} before it was ready"
            raise ServerDied(f"{self.name}: server {self.error} (log {self.log_path}); last "
                             f"lines:\n    " + "\n    ".join(tail))
        if self.health(timeout=3.0):
            if self.start_s is None:
                self.start_s = round(time.time() - self.t_launch, 2) if self.t_launch else 0.0
            return True
        return False

    def wait_ready(self, timeout_s: float, poll_s: float = 1.0) -> float:
        deadline = time.time() + timeout_s
        while True:
            if self.poll_ready():
                return self.start_s or 0.0
            if time.time() >= deadline:
                self.error = f"not ready within {timeout_s:.0f}s"
                raise ServerDied(f"{self.name}: {self.error} (log {self.log_path})")
            time.sleep(poll_s)

    def stop(self, term_timeout_s: float = 20.0) -> Optional[int]:
        """SIGTERM to the process group, bounded wait, then SIGKILL.  Returns the exit code."""
        if self.attached or self.proc is None:
            return None
        pid = self.proc.pid
        if self.proc.poll() is None:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=term_timeout_s)
            except subprocess.TimeoutExpired:
                pass
        # children may outlive the leader: always sweep the group with SIGKILL
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self._log_f is not None:
            try:
                self._log_f.close()
            except OSError:
                pass
            self._log_f = None
        return self.proc.returncode

    def describe(self) -> dict:
        d = {"url": self.url, "attached": self.attached, "start_s": self.start_s}
        if not self.attached:
            d["log"] = str(self.log_path) if self.log_path else None
            d["pid"] = self.proc.pid if self.proc else None
        if self.error:
            d["error"] = self.error
        return d


class ServerGroup:
    """Several servers: launched (optionally staggered), waited for together, stopped together."""

    def __init__(self, servers: List[ServerProcess]):
        self.servers = servers

    def start_all(self, stagger_s: float = 0.0, on_event=None) -> None:
        for i, s in enumerate(self.servers):
            if i and stagger_s > 0 and not s.attached:
                # keep watching the ones already launched while staggering
                t_end = time.time() + stagger_s
                while time.time() < t_end:
                    time.sleep(min(0.5, max(0.0, t_end - time.time())))
            s.start()
            if on_event:
                on_event(s, "launched")

    def wait_all(self, timeout_s: float, poll_s: float = 1.0, on_event=None,
                 fail_fast: bool = False) -> Dict[str, str]:
        """Wait until every server is ready, died, or timed out.  Returns {name: error}."""
        deadline = time.time() + timeout_s
        pending = list(self.servers)
        errors: Dict[str, str] = {}
        while pending:
            for s in list(pending):
                try:
                    if s.poll_ready():
                        pending.remove(s)
                        if on_event:
                            on_event(s, "ready")
                except ServerDied as e:
                    pending.remove(s)
                    errors[s.name] = str(e)
                    if on_event:
                        on_event(s, "died")
                    if fail_fast:
                        return errors
            if not pending:
                break
            if time.time() >= deadline:
                for s in pending:
                    s.error = f"not ready within {timeout_s:.0f}s"
                    errors[s.name] = f"{s.name}: {s.error} (log {s.log_path})"
                break
            time.sleep(poll_s)
        return errors

    def stop_all(self) -> None:
        for s in self.servers:
            try:
                s.stop()
            except Exception:  # noqa: BLE001 - stopping must go on for the others
                pass


def build_command(python: str, module: str, model: str, port: int, common: Sequence[str],
                  spec: Optional[Sequence[str]], extra: Sequence[str],
                  user: Sequence[str]) -> List[str]:
    cmd = [python, "-m", module, "--model-path", model, "--host", "127.0.0.1",
           "--port", str(port)]
    cmd += list(common)
    if spec:
        cmd += list(spec)
    cmd += list(extra)
    cmd += list(user)  # last: later flags win in SGLang's argparse
    return cmd


def spec_args(draft: str, steps: int) -> List[str]:
    return ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", draft,
            "--speculative-num-steps", str(steps), "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", str(steps + 1)]


def cuda_graph_bs(max_bs: int) -> List[int]:
    out = []
    b = 1
    while b < max_bs:
        out.append(b)
        b *= 2
    out.append(max_bs)
    return sorted(set(out))


def llama_only_disabled_archs(arch_names: Sequence[str]) -> Optional[str]:
    """SGLANG_DISABLED_MODEL_ARCHS value that keeps only llama/llama_eagle3 (SGLang otherwise
    imports ~300 model modules at start).  None unless every architecture is a Llama one."""
    if not arch_names or not all(a in ("LlamaForCausalLM", "LlamaForCausalLMEagle3")
                                 for a in arch_names):
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "srt" / "models"
    if not d.is_dir():
        return None
    keep = {"llama", "llama_eagle3", "__init__", "registry"}
    names = sorted(p.stem for p in d.glob("*.py") if p.stem not in keep)
    return ",".join(names) if names else None


def child_env(extra: Optional[dict] = None) -> dict:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    for k in ("NO_PROXY", "no_proxy"):
        v = env.get(k, "")
        parts = [p for p in v.split(",") if p]
        for h in ("127.0.0.1", "localhost"):
            if h not in parts:
                parts.append(h)
        env[k] = ",".join(parts)
    if extra:
        env.update(extra)
    return env


def default_python() -> str:
    return sys.executable or "python3"
