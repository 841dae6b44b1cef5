"""Drop-in launcher: `adaptive-spec-server ARGS` == `python -m sglang.launch_server ARGS`
plus the --adaptive-spec-* flags. Without our flags it behaves exactly like SGLang's.

Bad input (ours or a setup we cannot serve) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

from ..config import ENV_VAR, ConfigError

PROG = "adaptive-spec-server"
logger = logging.getLogger("adaptive_spec")


class UsageError(Exception):
    pass


def parse_args(argv: list[str]):
    """argv -> (sglang ServerArgs, AdaptiveSpecConfig or None). Raises UsageError."""
    from .args import apply_to_namespace, check_sglang_setup, config_from_namespace, make_parser
    from .compat import UnsupportedVersion, check_sglang_version

    parser = make_parser(PROG)
    if "--config" in argv:  # SGLang's own YAML config file, merged like prepare_server_args does
        from sglang.srt.server_args_config_parser import ConfigArgumentMerger

        argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    ns = parser.parse_args(argv)
    try:
        cfg = config_from_namespace(ns)
        if cfg is not None:
            check_sglang_version()
            check_sglang_setup(ns, cfg)
            apply_to_namespace(ns, cfg)
    except (ConfigError, UnsupportedVersion) as exc:
        raise UsageError(str(exc)) from None

    logging.basicConfig(
        level=getattr(logging, str(ns.log_level).upper(), logging.INFO),
        format="[%(asctime)s] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
    from sglang.srt.server_args import ServerArgs

    try:
        server_args = ServerArgs.from_cli_args(ns)
    except (ValueError, AssertionError, TypeError, FileNotFoundError, OSError) as exc:
        raise UsageError(f"invalid server arguments: {exc}") from None
    if cfg is not None:
        from .extend_warmup import add_by_default
        from .switch_warmup import add_if_asked

        add_by_default(server_args, cfg)  # a full catch-up's kernels built at start
        add_if_asked(server_args)  # a switch back on's, opt-in (ADAPTIVE_SPEC_WARM_SWITCH=1)
    return server_args, cfg


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    # SGLang's kernel modules warn at import on machines without a GPU; keep stderr to the
    # one line that matters when the input is bad.
    warnings.filterwarnings("ignore", category=UserWarning, module=r"sglang\.kernels\..*")
    from sglang.srt.plugins import load_plugins

    load_plugins()  # as sglang.launch_server does; other plugins may change parsing
    try:
        server_args, cfg = parse_args(argv)
    except UsageError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        sys.exit(2)

    if cfg is not None:
        # Spawned scheduler processes inherit the environment; the plugin entry point reads it.
        os.environ[ENV_VAR] = cfg.to_json()
        logger.info("adaptive-spec: %s", cfg.to_json())
        from sglang.srt.entrypoints.http_server import app

        from .status import install_routes

        install_routes(app)

    from sglang.launch_server import run_server
    from sglang.srt.utils import kill_process_tree

    from .extend_warmup import register as register_extend_warmup
    from .switch_warmup import register as register_switch_warmup

    register_extend_warmup()  # `--warmups adaptive_spec_extend`, with or without our flags
    register_switch_warmup()  # `--warmups adaptive_spec_switch` (runs only with our flags)

    try:
        run_server(server_args)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)


if __name__ == "__main__":
    main()
