"""A digest of the code a benchmark ran, so a result file names its code revision.

The GPU machine gets a copy of the working tree without `.git`, so a result cannot record a
commit; it records this digest of the files that decide what runs (the package, kernels,
benchmarks, patches, device scripts). Here, with git, find the commit of a digest:

    python -m adaptive_spec.bench.code_digest                 # this working tree
    python -m adaptive_spec.bench.code_digest --rev 9e426db   # a commit
    python -m adaptive_spec.bench.code_digest --find DIGEST --last 30   # which recent commit

On the GPU machine the package runs from a copy outside the checkout, so the device scripts
compute the digest of the checkout (`--root`) and export it as `ADAPTIVE_SPEC_CODE_DIGEST`,
which the sweep writes into its result (`code_digest`).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Optional, Tuple

ROOTS = ("adaptive_spec/", "kernels/", "benchmarks/", "patches/", "scripts/device/")
SUFFIXES = (".py", ".sh", ".patch")


def _wanted(path: str) -> bool:
    return path.startswith(ROOTS) and path.endswith(SUFFIXES) and "__pycache__" not in path


def digest_of(files: Iterable[Tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for path, data in sorted(files):
        h.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:12]


def repo_root(start: Optional[Path] = None) -> Optional[Path]:
    """The checkout this module runs from (None when installed without one)."""
    here = (start or Path(__file__)).resolve()
    for d in here.parents:
        if (d / "pyproject.toml").is_file() and (d / "adaptive_spec").is_dir():
            return d
    return None


def tree_digest(root: Optional[Path] = None) -> Optional[str]:
    root = root or repo_root()
    if root is None:
        return None
    files = []
    for sub in ROOTS:
        for p in (root / sub).rglob("*"):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and _wanted(rel):
                files.append((rel, p.read_bytes()))
    return digest_of(files)


def run_digest() -> Optional[str]:
    """What a result records: the digest the device scripts exported, else this checkout's."""
    return os.environ.get("ADAPTIVE_SPEC_CODE_DIGEST") or tree_digest()


def rev_digest(rev: str, root: Path) -> str:
    def git(*args) -> bytes:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True).stdout

    names = [n for n in git("ls-tree", "-r", "--name-only", rev).decode().splitlines() if _wanted(n)]
    return digest_of((n, git("show", f"{rev}:{n}")) for n in names)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="adaptive-spec-bench code-digest")
    p.add_argument("--rev", help="a git revision (default: the working tree)")
    p.add_argument("--find", help="print the recent commits whose digest is this")
    p.add_argument("--last", type=int, default=30, help="commits searched by --find")
    p.add_argument("--root", type=Path, help="the checkout (default: the one this file is in)")
    a = p.parse_args(argv)
    root = a.root or repo_root()
    if root is None:
        print("code-digest: not running from a checkout", file=sys.stderr)
        return 2
    try:
        if a.find:
            revs = subprocess.run(["git", "-C", str(root), "rev-list", f"-{a.last}", "HEAD"], check=True,
                                  capture_output=True).stdout.decode().split()
            hits = [r[:9] for r in revs if rev_digest(r, root) == a.find]
            print(" ".join(hits) if hits else f"no commit among the last {a.last} has digest {a.find}")
            return 0 if hits else 1
        print(rev_digest(a.rev, root) if a.rev else tree_digest(root))
    except subprocess.CalledProcessError as exc:
        print(f"code-digest: git failed: {exc.stderr.decode().strip()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
