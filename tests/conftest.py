"""Shared test configuration.

Hypothesis example counts come from ``HYPOTHESIS_MAX_EXAMPLES`` so CI can run more.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "membrane",
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("membrane")
