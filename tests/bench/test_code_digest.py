"""A result's code digest names the commit that ran (the GPU machine's copy has no .git)."""

import subprocess

from adaptive_spec.bench import code_digest as cd


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_a_checkouts_digest_is_its_commits_and_moves_with_the_code(tmp_path, capsys):
    root = tmp_path
    (root / "pyproject.toml").write_text("[project]\n")
    (root / "adaptive_spec").mkdir()
    (root / "adaptive_spec" / "core.py").write_text("X = 1\n")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "notes.md").write_text("not code\n")
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    first = cd.tree_digest(root)
    assert first == cd.rev_digest("HEAD", root)

    (root / "benchmarks" / "notes.md").write_text("still not code\n")
    assert cd.tree_digest(root) == first  # only the files that decide what runs count
    (root / "adaptive_spec" / "core.py").write_text("X = 2\n")
    assert cd.tree_digest(root) != first
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "two")

    assert cd.main(["--root", str(root), "--find", first]) == 0
    out = capsys.readouterr().out.split()
    assert len(out) == 1 and subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD~1"], capture_output=True,
                                            text=True).stdout.startswith(out[0])
    assert cd.main(["--root", str(root), "--find", "0" * 12]) == 1


def test_the_device_scripts_digest_wins_over_the_local_one(monkeypatch):
    monkeypatch.setenv("ADAPTIVE_SPEC_CODE_DIGEST", "abc123abc123")
    assert cd.run_digest() == "abc123abc123"
