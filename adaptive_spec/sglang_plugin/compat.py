"""Which SGLang versions we run on, checked once at start."""

from __future__ import annotations

from importlib import metadata

# 0.5.16: tested on the GPU machine. 0.5.23: import-level (hook targets checked in CI).
SUPPORTED = ("0.5.16", "0.5.23")


class UnsupportedVersion(RuntimeError):
    pass


def sglang_version() -> str:
    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:
        import sglang  # a source checkout on PYTHONPATH (e.g. the GPU machine's bundle)

        return getattr(sglang, "__version__", "unknown")


def check_sglang_version(version: str | None = None) -> str:
    version = version or sglang_version()
    if version not in SUPPORTED:
        raise UnsupportedVersion(
            f"sglang {version} is not supported by adaptive-spec (supported: {', '.join(SUPPORTED)})"
        )
    return version
