"""The count of Triton kernels built since a moment (kernel_builds.py): what a slow full
catch-up's log line says about its stall."""

import os

from adaptive_spec.sglang_plugin import kernel_builds


def make_entry(root, name, mtime):
    path = root / name
    path.mkdir(parents=True)
    (path / "kernel.json").write_text("{}")
    os.utime(path, (mtime, mtime))


def test_only_the_entries_written_since_the_moment_count(tmp_path):
    # three entries at 100 / 200 / 300 s: since 200 counts the two at 200 and 300 (at or after),
    # since 200.04 still the one at 200 (the file clock's 0.05-s slack), since 200.1 not
    for name, mtime in (("a", 100.0), ("b", 200.0), ("c", 300.0)):
        make_entry(tmp_path, name, mtime)
    assert kernel_builds.built_since(200.0, str(tmp_path)) == 2
    assert kernel_builds.built_since(200.04, str(tmp_path)) == 2
    assert kernel_builds.built_since(200.1, str(tmp_path)) == 1
    assert kernel_builds.built_since(300.5, str(tmp_path)) == 0
    assert kernel_builds.built_since(0.0, str(tmp_path)) == 3


def test_no_cache_directory_reads_as_none_not_zero(tmp_path):
    assert kernel_builds.built_since(0.0, str(tmp_path / "absent")) is None
    assert kernel_builds.built_since(0.0, str(tmp_path)) == 0  # there, empty: nothing built


def test_the_cache_is_tritons_own_directory_or_the_one_configured(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    assert kernel_builds.cache_dir() == str(tmp_path)
    monkeypatch.delenv("TRITON_CACHE_DIR")
    from triton import knobs  # the Triton SGLang 0.5.16 brings (3.6)

    assert kernel_builds.cache_dir() == str(knobs.cache.dir)


def test_the_walk_stops_at_its_bound(monkeypatch, tmp_path):
    for i in range(5):
        make_entry(tmp_path, f"k{i}", 500.0)
    monkeypatch.setattr(kernel_builds, "MAX_ENTRIES_READ", 3)
    assert kernel_builds.built_since(0.0, str(tmp_path)) == 3


def test_the_entries_written_since_the_moment_are_named_by_their_kernel(tmp_path):
    """Session 60: each of goodput's cold-start slow results met 1-2 builds; the names say which."""
    for name, files, mtime in (("A", ["__grp___fwd_kernel.json", "_fwd_kernel.cubin"], 300.0),
                               ("B", ["__triton_launcher.so"], 301.0),
                               ("C", ["__grp__old_kernel.json"], 100.0)):
        path = tmp_path / name
        path.mkdir()
        for f in files:
            (path / f).write_text("x")
        os.utime(path, (mtime, mtime))
    (tmp_path / "D").mkdir()
    os.utime(tmp_path / "D", (302.0, 302.0))  # an empty entry: its directory's name
    assert kernel_builds.names_since(200.0, str(tmp_path)) == ["D", "__triton_launcher.so",
                                                              "_fwd_kernel"]
    assert len(kernel_builds.names_since(200.0, str(tmp_path), limit=2)) == 2
    assert kernel_builds.names_since(0.0, str(tmp_path / "absent")) == []


def test_the_directory_itself_tells_whether_anything_was_written_since(tmp_path):
    make_entry(tmp_path, "a", 100.0)
    os.utime(tmp_path, (100.0, 100.0))
    assert kernel_builds.dir_written_since(99.0, str(tmp_path))
    assert kernel_builds.dir_written_since(100.04, str(tmp_path))  # the file clock's slack
    assert not kernel_builds.dir_written_since(101.0, str(tmp_path))
    assert not kernel_builds.dir_written_since(0.0, str(tmp_path / "absent"))
