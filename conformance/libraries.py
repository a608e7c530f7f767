"""The libraries the conformance cases run on, by name: ``validate --target laplace-torch``.

laplace-lab's own kernels, laplace-torch 0.3, curvlinops 3.0.1 (its curvature operators
with the prior and the test Jacobian added by the adapter), posteriors 0.1.3 (its GGN Laplace
states) and laplax 0.0.2 (JAX; the torch model converted to a JAX function).

Each :class:`Library` maps a name to the adapter that puts it behind the contract of
:mod:`laplace_lab.conformance.contract`, the module that tells whether it is installed, the
distribution whose version is reported, and how to install it. :data:`LIBRARIES` is the one
registry; ``MODULE:CALLABLE`` targets still work beside the names (:func:`target_spec`).
Nothing here imports a library: :meth:`Library.installed` only looks its module up.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["FINDING_KINDS", "LIBRARIES", "Finding", "Library", "get_library", "target_spec"]

#: What a finding is: a *bug* (the library is wrong on something it offers), a *documented
#: limitation* (it says it does not do this, yet the defect named is real, e.g. a missing
#: input check), a *default* (right when asked, wrong as shipped: a default setting falls
#: short) or *not offered* (the adapter refuses the request before calling the library, with
#: the reason: the scoreboard's N/A).
FINDING_KINDS = ("bug", "documented limitation", "default", "not offered")


@dataclass(frozen=True)
class Finding:
    """A documented disagreement of a library with the cases.

    Parameters
    ----------
    id : str
        ``"<library> F<n>"``, unique across libraries, the same in ``docs/validation.md``
        (its section's anchor is :attr:`link`).
    kind : str
        One of :data:`FINDING_KINDS`.
    title : str
        One line: what is wrong.
    cases : tuple of str
        Case names or name prefixes (ending in ``/``) it explains.
    """

    id: str
    kind: str
    title: str
    cases: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in FINDING_KINDS:
            raise ValueError(f"kind must be one of {FINDING_KINDS}; got kind={self.kind!r}")

    @property
    def link(self) -> str:
        """Its section in ``docs/validation.md``, relative to ``docs/``
        (``"laplace-torch F1"`` → ``validation.md#laplace-torch-f1``)."""
        return "validation.md#" + self.id.lower().replace(" ", "-")

    def explains(self, case: str) -> bool:
        """Whether the case ``case`` is one this finding explains."""
        return any(case == c or (c.endswith("/") and case.startswith(c)) for c in self.cases)


@dataclass(frozen=True)
class Library:
    """A library behind the contract.

    Parameters
    ----------
    name : str
        Its name on the command line (``--target NAME``).
    target : str
        The adapter, ``MODULE:CALLABLE``.
    module : str
        The module the library installs (looked up, not imported, by :meth:`installed`).
    distribution : str
        The distribution whose version is reported.
    install : str
        How to install it (one line).
    dependencies : tuple of str
        Further distributions whose versions the scoreboard reports.
    findings : tuple of Finding
        Its documented findings.
    """

    name: str
    target: str
    module: str
    distribution: str
    install: str
    dependencies: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default=())

    def installed(self) -> bool:
        """Whether the library's module can be imported (it is not imported here)."""
        try:
            return importlib.util.find_spec(self.module) is not None
        except (ImportError, ValueError):
            return False

    def version(self) -> str:
        """The installed version of its distribution, or ``"not installed"``."""
        return _version(self.distribution)

    def versions(self) -> dict[str, str]:
        """Its version and those of its :attr:`dependencies`, by distribution."""
        return {d: _version(d) for d in (self.distribution, *self.dependencies)}

    def finding(self, case: str) -> Finding | None:
        """The documented finding that explains ``case``, if any."""
        return next((f for f in self.findings if f.explains(case)), None)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


_LAPLACE_TORCH_INSTALL = (
    "pip install 'laplace-lab[laplace-torch]' && pip install --no-deps laplace-torch==0.3 "
    "backpack-for-pytorch==1.7.1 curvlinops-for-pytorch==3.0.1 asdfghjkl==0.1a4 "
    "(docs/validation.md#installing-laplace-torch)"
)

#: Findings of laplace-torch 0.3 (docs/validation.md, "laplace-torch 0.3").
_LAPLACE_TORCH_FINDINGS = (
    Finding(
        "laplace-torch F1",
        "bug",
        "float64 models get a GGN (or a Hessian) formed in float32",
        (
            "predictive/linear-gaussian",
            "predictive/linear-gaussian-diagonal-prior",
            "predictive/mlp-regression",
            "predictive/mlp-binary",
            "predictive/mlp-multiclass",
            "evidence/linear-gaussian",
            "evidence/linear-gaussian-diagonal-prior",
            "evidence/mlp-regression",
            "evidence/mlp-binary",
            "evidence/mlp-multiclass",
            "prior-mean/predictive-mlp-regression",
            "prior-mean/evidence-linear-gaussian",
            "prior-mean/evidence-mlp-regression",
            "probabilities/probit/mlp-binary",
            "probabilities/probit/mlp-multiclass",
            "probabilities/bridge/mlp-multiclass",
            "last-layer/mlp-regression-full",
            "last-layer/mlp-multiclass-full",
            "empirical-fisher/mlp-binary-full",
            "empirical-fisher/mlp-multiclass-full",
            "hessian/",
            "predictive/cnn-multiclass",
            "last-layer/cnn-multiclass-full",
        ),
    ),
    Finding(
        "laplace-torch F2",
        "bug",
        "a diagonal prior cannot be used on a subnetwork",
        (
            "predictive/mlp-regression-diagonal-prior",
            "diagonal-subnetwork/mlp-regression-diagonal-prior",
        ),
    ),
    Finding(
        "laplace-torch F3",
        "bug",
        "LowRankLaplace does not run from laplace-torch's own pins "
        "(its asdfghjkl 0.1a4 installs the module asdl)",
        ("low-rank/", "structured-samples/low-rank/", "low-rank-evidence/"),
    ),
    Finding(
        "laplace-torch F4",
        "default",
        "the default prior-precision optimisation stops short of the optimum",
        ("empirical-bayes/",),
    ),
    Finding(
        "laplace-torch F5",
        "bug",
        "the empirical Fisher of a Gaussian likelihood is off by the factor 2σ0²",
        (
            "empirical-fisher/linear-gaussian-diagonal-prior-full",
            "empirical-fisher/mlp-regression-full",
            "empirical-fisher/mlp-regression-diag",
            "empirical-fisher/mlp-regression-diagonal-prior-diag",
        ),
    ),
    Finding(
        "laplace-torch F6",
        "not offered",
        "KronLaplace offers the separate weight–bias convention only",
        (
            "kfac/linear-gaussian-joint",
            "kfac/mlp-regression-joint",
            "kfac/mlp-regression-float32-joint",
            "kfac/mlp-binary-joint",
            "kfac/mlp-multiclass-joint",
            "structured-samples/kron/mlp-regression-joint",
            "structured-samples/kron/mlp-binary-joint",
            "structured-samples/kron/mlp-multiclass-joint",
            "kfac/cnn-multiclass-joint-expand",
            "kfac/cnn-multiclass-joint-reduce",
            "kfac/conv-linear-gaussian-joint-reduce",
            "kfac/conv-linear-gaussian-joint-expand",
        ),
    ),
    Finding(
        "laplace-torch F7",
        "not offered",
        "last-layer Laplace has no one-logit Bernoulli likelihood",
        ("last-layer/mlp-binary-full", "last-layer/mlp-binary-diag", "last-layer/mlp-binary-kron"),
    ),
    Finding(
        "laplace-torch F8",
        "not offered",
        "one observation noise for all outputs: no per-output noise variances",
        (
            "predictive/linear-gaussian-multi-output",
            "predictive/mlp-regression-multi-output",
            "evidence/linear-gaussian-multi-output",
            "evidence/mlp-regression-multi-output",
        ),
    ),
    Finding(
        "laplace-torch F9",
        "bug",
        "the full GGN of C = 1,000 logits takes 4.7 GB above the set-up (5 N·C × p arrays), "
        "ten times the case's budget",
        ("many-outputs/",),
    ),
)

#: Findings of curvlinops 3.0.1 (docs/validation.md, "curvlinops 3.0.1").
_CURVLINOPS_FINDINGS = ()

#: Findings of posteriors 0.1.3 (docs/validation.md, "posteriors 0.1.3").
_POSTERIORS_FINDINGS = (
    Finding(
        "posteriors F1",
        "not offered",
        "no Kronecker-factored curvature (upstream work open: normal-computing/posteriors#55)",
        (
            "last-layer/mlp-regression-kron",
            "last-layer/mlp-regression-float32-kron",
            "last-layer/mlp-binary-kron",
            "last-layer/mlp-multiclass-kron",
            "last-layer/cnn-multiclass-kron",
        ),
    ),
    Finding(
        "posteriors F2",
        "bug",
        "dense_ggn forms the Hessian of the loss in all N·C outputs at once, (N·C)² dense: "
        "12.8 GB for C = 1,000 logits and N = 40",
        ("many-outputs/",),
    ),
)

#: Findings of laplax 0.0.2 (docs/validation.md, "laplax 0.0.2").
_LAPLAX_FINDINGS = (
    Finding(
        "laplax F1",
        "bug",
        "the low-rank curvature is not the top-r eigenpairs of the GGN",
        (  # on mlp-binary its error is 0.36 critical excesses: a FAIL at some seeds
            "low-rank/",
            "structured-samples/low-rank/mlp-multiclass",
            "structured-samples/low-rank/mlp-binary",
            # its LOBPCG lowers the rank to 1 for p = 7 < 5r: this error dominates F9's
            "low-rank-evidence/linear-gaussian-spectrum",
        ),
    ),
    Finding(
        "laplax F2",
        "bug",
        "the marginal likelihood has no classification likelihood",
        ("evidence/mlp-binary", "evidence/mlp-multiclass"),
    ),
    Finding(
        "laplax F3",
        "documented limitation",
        "the marginal likelihood takes an isotropic prior only, and a vector prior silently "
        "returns a length-p 'evidence' (no input check)",
        ("evidence/linear-gaussian-diagonal-prior",),
    ),
    Finding(
        "laplax F4",
        "bug",
        "the Laplace bridge fails on one test input's logits",
        ("probabilities/bridge/",),
    ),
    Finding(
        "laplax F5",
        "not offered",
        "the low-rank posterior takes an isotropic prior only",
        (
            "structured-samples/low-rank/mlp-regression-diagonal-prior",
            "low-rank-evidence/mlp-regression-diagonal-prior",
        ),
    ),
    Finding(
        "laplax F6",
        "not offered",
        "no Kronecker-factored curvature (upstream work open: laplax-org/laplax#46)",
        (
            "last-layer/mlp-regression-kron",
            "last-layer/mlp-regression-float32-kron",
            "last-layer/mlp-binary-kron",
            "last-layer/mlp-multiclass-kron",
            "structured-samples/kron/",
            "last-layer/cnn-multiclass-kron",
        ),
    ),
    Finding(
        "laplax F7",
        "not offered",
        "the marginal likelihood's prior is centred at zero: no prior mean",
        ("prior-mean/evidence-linear-gaussian", "prior-mean/evidence-mlp-regression"),
    ),
    Finding(
        "laplax F8",
        "bug",
        "laplax.laplace scales the curvature of a subsample by n/N, not N/n",
        ("minibatch/",),
    ),
    Finding(
        "laplax F9",
        "bug",
        "the low-rank evidence's log-determinant is r log α + Σ log(1 + α λ_i), exact at "
        "α = 1 only (p log α + Σ log(1 + λ_i/α) is the right one)",
        ("low-rank-evidence/mlp-regression",),
    ),
    Finding(
        "laplax F10",
        "bug",
        "the Hessian-vector product has no Bernoulli loss, and its 'cross_entropy' is an "
        "elementwise sigmoid cross-entropy, not summed: no Hessian for classification",
        ("hessian/mlp-binary", "hessian/mlp-multiclass"),
    ),
)

#: The libraries by name, in the order of the scoreboard's columns.
LIBRARIES: Mapping[str, Library] = {
    "laplace-lab": Library(
        name="laplace-lab",
        target="laplace_lab.conformance.adapters.numerics:predictive_variance",
        module="laplace_lab.numerics",
        distribution="laplace-lab",
        install="pip install laplace-lab",
        dependencies=("torch", "numpy", "scipy"),
    ),
    "laplace-torch": Library(
        name="laplace-torch",
        target="laplace_lab.conformance.adapters.laplace_torch:predictive_variance",
        module="laplace",
        distribution="laplace-torch",
        install=_LAPLACE_TORCH_INSTALL,
        dependencies=("curvlinops-for-pytorch", "backpack-for-pytorch", "torch"),
        findings=_LAPLACE_TORCH_FINDINGS,
    ),
    "curvlinops": Library(
        name="curvlinops",
        target="laplace_lab.conformance.adapters.curvlinops:predictive_variance",
        module="curvlinops",
        distribution="curvlinops-for-pytorch",
        install=(
            "pip install 'laplace-lab[laplace-torch]' && pip install --no-deps "
            "curvlinops-for-pytorch==3.0.1 (docs/validation.md#installing-laplace-torch)"
        ),
        dependencies=("torch",),
        findings=_CURVLINOPS_FINDINGS,
    ),
    "posteriors": Library(
        name="posteriors",
        target="laplace_lab.conformance.adapters.posteriors:predictive_variance",
        module="posteriors",
        distribution="posteriors",
        install="pip install 'laplace-lab[posteriors]' (posteriors==0.1.3)",
        dependencies=("torch", "tensordict", "optree"),
        findings=_POSTERIORS_FINDINGS,
    ),
    "laplax": Library(
        name="laplax",
        target="laplace_lab.conformance.adapters.laplax:predictive_variance",
        module="laplax",
        distribution="laplax",
        install="pip install 'laplace-lab[laplax]' (laplax==0.0.2, jax==0.10.2, jaxlib==0.10.2)",
        dependencies=("jax", "jaxlib"),
        findings=_LAPLAX_FINDINGS,
    ),
}


def get_library(name: str) -> Library:
    """The library ``name``, installed; a ValueError otherwise.

    Parameters
    ----------
    name : str
        A key of :data:`LIBRARIES`.

    Returns
    -------
    Library

    Raises
    ------
    ValueError
        If ``name`` is not registered (the message lists the names), or the library is not
        installed (the message says how to install it).
    """
    library = LIBRARIES.get(name)
    if library is None:
        raise ValueError(
            f"target must be a library among {list(LIBRARIES)} or MODULE:CALLABLE; "
            f"got target={name!r}"
        )
    if not library.installed():
        raise ValueError(
            f"target {name!r}: {library.name} is not installed (no module "
            f"{library.module!r}); install it with: {library.install}"
        )
    return library


def target_spec(target: str) -> str:
    """The ``MODULE:CALLABLE`` of ``target``: a library name resolved, anything else as given.

    Parameters
    ----------
    target : str
        A key of :data:`LIBRARIES` or ``MODULE:CALLABLE``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        As :func:`get_library` for a name without ``:``.
    """
    if not isinstance(target, str) or not target:
        raise TypeError(f"target must be a library name or MODULE:CALLABLE; got {target!r}")
    return target if ":" in target else get_library(target).target
