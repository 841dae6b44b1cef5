import pytest

from adaptive_spec.sglang_plugin import hooks_offpath, state


@pytest.fixture(autouse=True)
def fresh_plugin_state():
    """Each test starts without a controller or remembered spec workers (process globals)."""
    state.reset_for_tests()
    hooks_offpath._spec_workers.clear()
    hooks_offpath._decode_forward_active = False
    yield
    state.reset_for_tests()
    hooks_offpath._spec_workers.clear()
    hooks_offpath._decode_forward_active = False
