"""scripts/device/setup_local.sh: the team's device recipe copied into .device/ with this repo's
edits, the bundle built, and the 64-MiB check of what a device call carries (session 44: the
recipe's bundle with the grown tree passed it, and a call was refused). Run against a fake recipe
whose make_bundle.sh writes a bundle of a given size (sparse: no disk used)."""
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device" / "setup_local.sh"

FAKE_RECIPE = """#!/usr/bin/env bash
set -euo pipefail
REPO="${REPO:-$PWD}"
OUTDIR="$REPO/.bundle"
STAGE="$(mktemp -d)"; mkdir "$STAGE/site"  # the real one installs the site here
mkdir -p "$OUTDIR"
rm -f "$OUTDIR/sglang-site.tar.xz"
: tar -C "$STAGE" -cf - site | xz -T0 -6 > "$OUTDIR/sglang-site.tar.xz"
truncate -s "$FAKE_BUNDLE_BYTES" "$OUTDIR/sglang-site.tar.xz"
"""


def make_repo(tmp_path, recipe=FAKE_RECIPE):
    repo, shared = tmp_path / "repo", tmp_path / "shared"
    (repo / "scripts" / "device").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "device" / "setup_local.sh")
    (repo / "tracked.txt").write_text("x" * 1000)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "tracked.txt", "scripts"], check=True)
    shared.mkdir()
    (shared / "make_bundle.sh").write_text(recipe)
    (shared / "make_bundle.sh").chmod(0o444)  # the shared recipe is read-only
    return repo, shared


def run(repo, shared, bundle_bytes, *args):
    env = {"PATH": "/usr/bin:/bin", "ADAPTIVE_SPEC_SHARED_DEVICE": str(shared),
           "FAKE_BUNDLE_BYTES": str(bundle_bytes)}
    return subprocess.run(["bash", str(repo / "scripts" / "device" / "setup_local.sh"), *args],
                          cwd="/", env=env, capture_output=True, text=True, timeout=60)


def test_the_recipe_is_copied_edited_built_and_its_travel_checked(tmp_path):
    repo, shared = make_repo(tmp_path)
    r = run(repo, shared, 50 * 2 ** 20)
    assert r.returncode == 0, r.stderr
    edited = (repo / ".device" / "make_bundle.sh").read_text()
    assert "xz -T2 -9e >" in edited and "xz -T0 -6" not in edited
    assert edited.index('rm -rf "$STAGE/site/jedi/third_party"') < edited.index('rm -f "$OUTDIR')
    # session 47: SGLang's diffusion runtime (never imported by the server) dropped before packing
    assert edited.index('rm -rf "$STAGE/site/sglang/multimodal_gen"') < edited.index('rm -f "$OUTDIR')
    # session 49: DeepGEMM's JIT headers and third-party test folders, before packing too
    drop = edited.index("for d in deep_gemm/include/cute deep_gemm/include/cutlass")
    assert drop < edited.index('rm -f "$OUTDIR') and 'rm -rf "$STAGE/site/$d"' in edited
    # session 50: CUTLASS's examples under flashinfer's data (its JIT reads include/, tools/)
    examples = edited.index('rm -rf "$STAGE/site/flashinfer/data/cutlass/examples"')
    assert examples < edited.index('rm -f "$OUTDIR') and '"$STAGE/site"/jedi*' in edited
    # session 52: the shared objects' debug info stripped before packing (xgrammar's: 50 MB)
    strip = edited.index('-name "*.so*" -type f -exec strip --strip-debug {} +')
    assert examples < strip < edited.index('rm -f "$OUTDIR')
    assert (repo / ".bundle" / "sglang-site.tar.xz").stat().st_size == 50 * 2 ** 20  # built there
    assert "B of 67108864" in r.stdout.splitlines()[-1]
    assert run(repo, shared, 0, "--check").returncode == 0


def test_a_bundle_over_the_limit_is_one_line_and_exit_2(tmp_path):
    repo, shared = make_repo(tmp_path)
    r = run(repo, shared, 64 * 2 ** 20)  # with the tracked file and .device: over
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "over the 64-MiB limit by" in r.stderr


def test_the_check_counts_tar_blocks_not_bytes(tmp_path):
    """A call sends a tar of the tree: each file takes a 512-B header and is padded to 512 B
    (session 52: a tree 0.60 MB under the limit by its bytes was refused). A bundle leaving 100 B
    by bytes is over once the tracked file (1,000 B -> 1,536 B with its header) and the two
    scripts are counted in blocks."""
    repo, shared = make_repo(tmp_path)
    assert run(repo, shared, 1000).returncode == 0  # builds .device/ (the edited recipe)
    files = [repo / "tracked.txt", *(repo / "scripts").rglob("*"), *(repo / ".device").rglob("*")]
    sent = sum(f.stat().st_size for f in files if f.is_file())
    r = run(repo, shared, 64 * 2 ** 20 - sent - 100)
    assert r.returncode == 2 and "over the 64-MiB limit by" in r.stderr
    r = run(repo, shared, 64 * 2 ** 20 - sent - 100 - 8 * 1024)  # room for the blocks
    assert r.returncode == 0, r.stderr


def test_the_check_counts_untracked_files_that_travel(tmp_path):
    """A call sends the untracked files git does not ignore too (results not committed yet):
    a bundle leaving ~12 KB passes, and is over once a 16-KB untracked file is beside it; an
    ignored one does not count."""
    repo, shared = make_repo(tmp_path)
    (repo / ".git" / "info" / "exclude").write_text("/.bundle/\n/.device/\n/ignored.bin\n")
    assert run(repo, shared, 1000).returncode == 0  # builds .device/ (the edited recipe)
    room = 64 * 2 ** 20 - 24 * 1024  # the tracked file, the scripts and their headers: < 12 KB
    assert run(repo, shared, room).returncode == 0
    (repo / "ignored.bin").write_bytes(b"x" * 16 * 1024)
    assert run(repo, shared, room).returncode == 0
    (repo / "results.json").write_bytes(b"x" * 16 * 1024)
    r = run(repo, shared, room)
    assert r.returncode == 2 and "over the 64-MiB limit by" in r.stderr


@pytest.mark.parametrize("recipe, args, says", [
    (FAKE_RECIPE.replace("xz -T0 -6", "xz -T0 -7"), (), "changed"),
    (FAKE_RECIPE, ("--bogus",), "unknown argument"),
    (None, (), "no device recipe"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, recipe, args, says):
    repo, shared = make_repo(tmp_path, recipe or FAKE_RECIPE)
    if recipe is None:
        shutil.rmtree(shared)
    r = run(repo, shared, 1000, *args)
    assert r.returncode == 2 and says in r.stderr and r.stderr.strip().count("\n") == 0
