"""The chex variants ``with_jit`` and ``without_jit`` as pytest parameters.

A test that runs a function with and without ``jax.jit`` takes a ``variant``
argument, parametrized over :data:`VARIANTS`, and calls ``variant(fn)`` where a
``chex.TestCase`` called ``self.variant(fn)``::

  @pytest.mark.parametrize("variant", VARIANTS)
  def test_f(variant):
    np.testing.assert_allclose(variant(f)(x), want)

Each variant takes the keyword arguments of chex's: ``with_jit`` passes
``static_argnums``, ``static_argnames``, ``device`` and ``backend`` to
``jax.jit``; ``without_jit`` ignores them and calls the function as it is.
"""

from collections.abc import Callable
import functools
from typing import Any

import jax
import pytest


def with_jit(fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
  """``jax.jit(fn, **kwargs)``, as chex's ``with_jit`` variant."""
  return jax.jit(fn, **kwargs)


def without_jit(fn: Callable[..., Any], **unused_kwargs: Any) -> Callable[..., Any]:
  """``fn`` itself behind a plain wrapper, as chex's ``without_jit`` variant."""

  @functools.wraps(fn)
  def wrapper(*args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)

  return wrapper


# chex.variants(with_jit=True, without_jit=True).
VARIANTS = [pytest.param(with_jit, id="with_jit"), pytest.param(without_jit, id="without_jit")]
# chex.variants(with_jit=True).
WITH_JIT = [pytest.param(with_jit, id="with_jit")]
