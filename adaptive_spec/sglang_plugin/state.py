"""The one Controller of this scheduler process (created by the worker hook)."""

from __future__ import annotations

import logging
from typing import Optional

from ..config import AdaptiveSpecConfig
from ..controller import Controller

logger = logging.getLogger("adaptive_spec")

_controller: Optional[Controller] = None


def get_controller() -> Optional[Controller]:
    return _controller


def init_controller(cfg: AdaptiveSpecConfig, rank: int, reducer=None) -> Controller:
    global _controller
    if _controller is None:
        _controller = Controller(cfg, rank=rank, reducer=reducer)
        logger.info("adaptive_spec: controller ready on rank %d: %s", rank, cfg.to_json())
    return _controller


def reset_for_tests() -> None:
    global _controller
    _controller = None
