"""Say when a failure on a float64 case is an error of float32 size.

The commonest dtype bug of a Laplace library is a float64 model whose curvature (the GGN,
Kronecker factors or Jacobians) is formed in float32: every answer is then off by float32
rounding, 1e3–1e7 times the float64 rule of :mod:`laplace_lab.conformance.tolerance` and
far inside its float32 rule. So when a target fails a case whose model is more precise than
float32, its own answers (recorded by :class:`Recording` as the case ran) are judged again,
unchanged, by the same case under the rule at float32's unit roundoff
(:func:`~laplace_lab.conformance.tolerance.judged_at`); if they pass there, the failure's
message says that the error is consistent with float32 rounding. Statistical tests
(posterior samples, SBC, the sampling error of Monte Carlo probabilities) do not depend on
u and are judged as before. Rules of order √u say nothing about float32 rounding — the
location of the evidence's maximum (float32's rule allows 1.5–13% on log α) and the
eigensolver term of low-rank posteriors — so their capabilities are not diagnosed.

References
----------
.. [1] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM (2002),
   §2.1 (the unit roundoff u: 2⁻²⁴ in IEEE single, 2⁻⁵³ in double precision).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laplace_lab._checks import dtype_eps
from laplace_lab.conformance.contract import Target
from laplace_lab.conformance.registry import Check
from laplace_lab.conformance.tolerance import judged_at

__all__ = ["FLOAT32_SIZED", "ROOT_U_CAPABILITIES", "Recording", "Replay", "float32_sized"]

#: Capabilities whose rules are of order √u, where float32's rule is too loose to tell.
ROOT_U_CAPABILITIES = ("optimize_prior", "low_rank_predictive_variance")
#: The start of the message of a failure that passes the float32 rule.
FLOAT32_SIZED = "error consistent with float32 rounding (within the rule at float32's u): "


@dataclass(frozen=True, eq=False)
class Recording(Target):
    """``target`` keeping every answer it gives, in call order."""

    target: Target | None = None
    answers: list[Any] = field(default_factory=list)

    @classmethod
    def of(cls, target: Target) -> Recording:
        """Record the answers of ``target``."""
        return cls(target.name, target.predictive_variance, target.capabilities, target)

    def call(self, capability: str, *args: Any, method: str | None = None, **kwargs: Any) -> Any:
        """Call ``target`` and keep its answer."""
        out = self.target.call(capability, *args, method=method, **kwargs)
        self.answers.append(out)
        return out


_NONE = object()


@dataclass(frozen=True, eq=False)
class Replay(Target):
    """A target that gives the recorded answers again, in the same order."""

    answers: Iterator[Any] = field(default_factory=lambda: iter(()))

    def call(self, capability: str, *args: Any, method: str | None = None, **kwargs: Any) -> Any:
        out = next(self.answers, _NONE)
        if out is _NONE:
            raise RuntimeError("the case asked for more answers than the target gave")
        return out


def float32_sized(
    recording: Recording, dtype: Any, capability: str, run: Callable[[Target], Check]
) -> bool:
    """Whether the recorded answers pass the case ``run`` under the rule at float32's u.

    Parameters
    ----------
    recording : Recording
        The target as the case ran it (its answers).
    dtype : dtype
        The case's dtype: only a dtype more precise than float32 is judged again.
    capability : str
        The case's capability: none of :data:`ROOT_U_CAPABILITIES` is judged again.
    run : callable
        ``run(target) -> Check``: the case on its problem and oracle.
    """
    if dtype_eps(dtype) >= dtype_eps(np.float32) or capability in ROOT_U_CAPABILITIES:
        return False
    replay = Replay(
        recording.name,
        recording.predictive_variance,
        recording.capabilities,
        iter(recording.answers),
    )
    with judged_at(np.float32):
        return run(replay).passed
