"""Import BoTorch without letting it import JAX.

BoTorch's ``botorch.models.fully_bayesian`` tries ``import jax`` (for optional NumPyro models that
tune_risk never uses). In an environment with the ``rl`` extra installed that import succeeds, and
JAX would then be loaded (seconds of start-up, memory, thread pools) by every process that merely
uses the searcher. ``tune_risk`` promises not to import JAX, so BoTorch is imported once here with
``jax`` masked as absent; the mask is removed right after, so user code can still ``import jax``.
"""

from __future__ import annotations

import sys


def _import_botorch_without_jax() -> None:
    if "botorch" in sys.modules or "jax" in sys.modules:
        return  # already imported (or the user already uses JAX): nothing to protect
    masked = [name for name in ("jax", "numpyro") if name not in sys.modules]
    for name in masked:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` raise ImportError
    try:
        import botorch  # noqa: F401
        import botorch.acquisition  # noqa: F401
        import botorch.fit  # noqa: F401
        import botorch.models  # noqa: F401
        import botorch.models.fully_bayesian  # noqa: F401  (the module that tries `import jax`)
        import botorch.optim  # noqa: F401
    finally:
        for name in masked:
            if sys.modules.get(name) is None:
                del sys.modules[name]


_import_botorch_without_jax()
