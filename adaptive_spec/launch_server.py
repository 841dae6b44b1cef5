"""`python -m adaptive_spec.launch_server ARGS`: same as `adaptive-spec-server ARGS`."""

from .sglang_plugin.launch import main

if __name__ == "__main__":
    main()
