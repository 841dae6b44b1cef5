from .base import REASONS, Decision, ForcedPolicy, Policy, make_policy

__all__ = ["REASONS", "Decision", "ForcedPolicy", "Policy", "make_policy"]
