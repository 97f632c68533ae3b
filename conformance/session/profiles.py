"""Hypothesis profiles: ``dev`` (default), ``ci`` (derandomized) and ``nightly`` (many examples).

Chosen by ``--conformance-profile``, else the ``CONFORMANCE_PROFILE`` environment variable,
else ``ci`` when ``CI`` is set to a true value, else ``dev``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

PROFILES = {
    "dev": {"max_examples": 12, "derandomize": False},
    # a derandomized run has nothing to save and nothing to replay
    "ci": {"max_examples": 12, "derandomize": True, "database": None},
    "nightly": {"max_examples": 200, "derandomize": False},
}

_COMMON = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                              HealthCheck.filter_too_much],
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
}

# Hypothesis' own defaults, not the profile in force: Hypothesis loads its "ci" profile (no
# example database) when it sees a CI environment, and "dev" or "nightly" there must still
# save and replay their failures.
_BASE = settings.get_profile("default")
for _name, _values in PROFILES.items():
    settings.register_profile(f"conformance-{_name}", _BASE, **_COMMON, **_values)


def choose(option: str | None) -> str:
    """The profile name in force (validated)."""
    name = option or os.environ.get("CONFORMANCE_PROFILE")
    if not name:
        ci = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
        name = "ci" if ci else "dev"
    if name not in PROFILES:
        raise ValueError(f"conformance profile {name!r} is unknown; choose one of {list(PROFILES)}")
    return name


def load(name: str, examples: int | None = None) -> settings:
    """Activate profile ``name``, with ``examples`` overriding its max_examples."""
    chosen = settings.get_profile(f"conformance-{name}")
    if examples is not None:
        if examples < 1:
            raise ValueError(f"--examples={examples} must be >= 1")
        chosen = settings(chosen, max_examples=examples)
        settings.register_profile(f"conformance-{name}-custom", chosen)
        name = f"{name}-custom"
    settings.load_profile(f"conformance-{name}")
    return settings()
