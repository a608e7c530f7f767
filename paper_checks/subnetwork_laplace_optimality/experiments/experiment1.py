"""Experiment 1 of the optimality paper on real networks: W2 and coverage of sub-network Laplace.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075,
§5.1 and App. C: train the MAP → per-sample Jacobians (torch.func) → GGN → every selection
method over a k-grid → per-test-point W2(x*) = |σ_full(x*) − σ_method(x*)| (σ² = σ0² + PV for
the regression target, PV for logits; docs/mathematics.md, "Metrics") averaged over the test
points, and 95% coverage mean 1{|f_ref − f_MAP| ≤ 1.96 σ} — mean ± standard error over seeds.
Full linearized Laplace is the reference; KFAC-Laplace (:mod:`laplace_lab.numerics.kfac`) and a
deep ensemble are k-independent references (App. B, C.1 "Deep-Ensemble overlay").

Methods come from the selection registry (:mod:`laplace_lab.numerics.selection_registry`):
a nested method (Gradient-Laplace, Subnet-Diagonal, Last-k, Random, largest magnitude, …) is
called once at the largest k and evaluated along its order by
:func:`~laplace_lab.numerics.predictive.subnetwork_variance_path`; any other (Greedy-Laplace) is
called per k, Greedy-Laplace with the paper's candidate count m = min(2k + 1000, p − 1) capped
at 30,000 (App. C.3) or 2k (``greedy_candidates``).

σ0² is the residual mean squared error of the MAP on the training split (App. C.1) or, with
``noise_from="test"``, on the test split (App. C.6, Setup D).

Coverage reference f_ref: the noiseless function for synthetic data; otherwise an "oracle"
network of the same architecture trained on a larger training pool (App. C.1 oracle), or
``"y"``: the held-out targets with the predictive σ² = σ0² + PV (regression only).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from laplace_lab._checks import one_of, optional_positive_int, positive_int
from laplace_lab._progress import progress_bar
from laplace_lab._random import keyed_seed, spawn
from laplace_lab.networks import data as data_mod
from laplace_lab.networks import models
from laplace_lab.networks.training import (
    TrainConfig,
    adam_recipe,
    build_seeded,
    noise_variance,
    predict,
)
from laplace_lab.networks.training import train_map as _train
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import parameter_layout, per_sample_jacobian
from laplace_lab.numerics.kfac import fit_kfac
from laplace_lab.numerics.predictive import (
    coverage,
    predictive_variance,
    subnetwork_variance,
    subnetwork_variance_path,
    wasserstein_gap,
)
from laplace_lab.numerics.selection_registry import (
    SubnetProblem,
    get_selection,
    select,
    selection_methods,
)
from laplace_lab.paper_checks.verification.cache import cached

__all__ = [
    "ExperimentConfig",
    "ExperimentResult",
    "SeedResult",
    "fitted_replications",
    "run_experiment",
    "run_seed",
    "sized_methods",
]


def sized_methods() -> tuple[str, ...]:
    """The sized selection methods registered now (NeuralLinear is a k-free reference)."""
    return tuple(name for name, m in selection_methods().items() if m.sized)


PAPER_METHODS = ("gradient_laplace", "greedy_laplace", "subnet_diagonal", "last_k")
_MODELS: dict[str, Callable[[int, int], Any]] = {
    "mlp_2x50": lambda d, c: models.mlp_2x50(d, c),
    "mlp_3x200": lambda d, c: models.mlp_3x200(d, c),
    "digits_cnn": lambda d, c: models.digits_cnn(c),
}


@dataclass(frozen=True)
class ExperimentConfig:
    """One Experiment-1 configuration (defaults: App. C.1 recipe on a package data set)."""

    dataset: str = "randhie"
    model: str = "mlp_3x200"
    n_train: int | None = 2000
    n_test: int | None = 1000
    test_fraction: float = 0.25
    ks: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000, 10000)
    methods: tuple[str, ...] = (*PAPER_METHODS, "random", "largest_magnitude")
    train: TrainConfig = field(default_factory=adam_recipe)
    prior_precision: float = 1.0
    greedy_candidates: str = "paper"
    noise_from: str = "train"
    coverage_target: str = "oracle"
    oracle_rows: int = 8000
    ensemble_size: int = 5
    kfac: bool = True
    neural_linear: bool = True
    chunk_size: int | None = None
    torch_threads: int | None = 1
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.model not in _MODELS:
            raise ValueError(f"model must be one of {sorted(_MODELS)}; got {self.model!r}")
        for name in self.methods:
            one_of(name, "methods", sized_methods())
        ks = np.asarray(self.ks)
        if ks.ndim != 1 or ks.size == 0 or np.any(ks < 1) or np.any(np.diff(ks) <= 0):
            raise ValueError(
                f"ks must be a strictly increasing sequence of sizes ≥ 1; got {self.ks}"
            )
        # tuples, whatever sequence was given: the config keys cached experiments
        object.__setattr__(self, "ks", tuple(int(k) for k in self.ks))
        object.__setattr__(self, "methods", tuple(self.methods))
        one_of(self.greedy_candidates, "greedy_candidates", ("paper", "2k"))
        for name in ("torch_threads", "blas_threads"):
            optional_positive_int(getattr(self, name), name)
        one_of(self.noise_from, "noise_from", ("train", "test"))
        if self.coverage_target not in ("oracle", "y", "truth"):
            raise ValueError(
                f"coverage_target must be 'oracle', 'y' or 'truth'; got {self.coverage_target!r}"
            )


@dataclass(frozen=True)
class SeedResult:
    """One replication: W2 and coverage per method along ks, references, timings (seconds);
    ``audit``: the kernels' error-to-tolerance ratios against the dense oracle (the first
    replication of a run; :mod:`.kernel_audit`)."""

    p: int
    ks: tuple[int, ...]
    w2: dict[str, np.ndarray]
    coverage: dict[str, np.ndarray]
    reference: dict[str, dict[str, float]]
    noise_var: float
    timings: dict[str, float]
    audit: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentResult:
    """Mean and standard error over seeds of every curve and reference."""

    config: ExperimentConfig
    seeds: tuple[SeedResult, ...]
    w2_mean: dict[str, np.ndarray]
    w2_se: dict[str, np.ndarray]
    coverage_mean: dict[str, np.ndarray]
    reference_mean: dict[str, dict[str, float]]

    def table(self) -> str:
        """A plain-text table of mean W2 (± s.e.) per method and k."""
        ks = self.seeds[0].ks
        head = f"{'method':<26}" + "".join(f"{k:>18}" for k in ks)
        rows = [head]
        for m, mean in self.w2_mean.items():
            se = self.w2_se[m]
            rows.append(
                f"{m:<26}"
                + "".join(f"{a:>10.4g} ±{b:<6.2g}" for a, b in zip(mean, se, strict=True))
            )
        for name, ref in self.reference_mean.items():
            rows.append(f"{name:<26}  W2 {ref['w2']:.4g}  coverage {ref['coverage']:.3f}")
        return "\n".join(rows)


def _data(config: ExperimentConfig, rng: np.random.Generator, n_train: int) -> data_mod.Dataset:
    return data_mod.load(
        config.dataset,
        n_train=n_train,
        n_test=config.n_test,
        test_fraction=config.test_fraction,
        rng=rng,
    )


def _ggn(task: str, J: np.ndarray, f: np.ndarray, noise_var: float, alpha: float) -> GGN:
    if task == "regression":
        return GGN.regression(J, noise_var=noise_var, prior_precision=alpha)
    if task == "binary":
        return GGN.binary(J, f, prior_precision=alpha)
    return GGN.multiclass(J, f, prior_precision=alpha, eps=0.0)  # App. C.5: no jitter


def _members(
    config: ExperimentConfig, build: Callable[[], Any], ds: Any, rng: np.random.Generator
) -> list[Any]:
    """The deep ensemble: each member from its own spawned (initialisation, batches) pair."""
    out = []
    for member in spawn(rng, config.ensemble_size):
        init, batches = spawn(member, 2)
        net = build_seeded(build, rng=init)
        _train(net, ds.X_train, ds.y_train, likelihood=ds.task, config=config.train, rng=batches)
        out.append(net)
    return out


def run_seed(
    config: ExperimentConfig, *, rng: np.random.Generator | int, audit: bool = False
) -> SeedResult:
    """One replication of Experiment 1 (all methods share the MAP of this seed, §5.1).

    Every random choice of the replication (data split, initialisations, mini-batches, the
    Random method, the oracle and the ensemble) comes from an independent stream spawned
    from ``rng`` (a ``numpy.random.Generator``, an integer seed or a ``SeedSequence``).

    ``audit`` checks the kernels the replication rests on against the dense oracle on a
    small instance of its own network and data (:mod:`.kernel_audit`) and raises
    :class:`~laplace_lab.paper_checks.verification.ImplementationError` if one fails.

    ``config.torch_threads`` (default 1) bounds torch's intra-op threads for the duration of
    the call (restored afterwards): small MLPs train several times faster on one thread on a
    shared 2-core machine. ``config.blas_threads`` (default 1) likewise bounds NumPy's BLAS
    pool (threadpoolctl): the N'×N' Cholesky and Gram products of one seed run faster on one
    thread when the two cores are shared (docs/performance.md, "One torch thread for small
    networks").

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §5.1 and App. C.
    """
    with _bounded_threads(config):
        return _run_seed(config, _Streams(rng), audit)


@contextmanager
def _bounded_threads(config: ExperimentConfig) -> Iterator[None]:
    """torch's intra-op and NumPy's BLAS threads bounded as ``config`` says, then restored."""
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    if config.torch_threads is not None:
        torch.set_num_threads(config.torch_threads)
    try:
        with threadpool_limits(limits=config.blas_threads, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(previous)


@dataclass(frozen=True)
class _Fit:
    """The trained part of one replication: its data split, its MAP network (as trained,
    never modified afterwards), the coverage oracle's outputs at the test points (None when
    no oracle is trained) and the training times (seconds)."""

    ds: Any
    model: torch.nn.Module
    f_oracle: np.ndarray | None
    seconds: dict[str, float]


def _needs_oracle(config: ExperimentConfig, ds: Any) -> bool:
    """An oracle network is the coverage reference (see :func:`_coverage_reference`)."""
    return config.coverage_target == "oracle" and ds.f_test is None


def _builder(config: ExperimentConfig, ds: Any) -> Callable[[], Any]:
    """A factory of fresh (untrained) networks of ``config.model`` for the data set ``ds``."""
    n_out = 1 if ds.task != "multiclass" else ds.n_classes
    return lambda: _MODELS[config.model](ds.n_features, n_out)


def _fit(config: ExperimentConfig, streams: _Streams) -> _Fit:
    """Load the split, train the MAP network and, if the coverage needs one, the oracle."""
    clock = time.perf_counter()
    ds = _data(config, streams.data(), config.n_train)
    build = _builder(config, ds)
    model = build_seeded(build, rng=streams.init)
    _train(
        model, ds.X_train, ds.y_train, likelihood=ds.task, config=config.train, rng=streams.batches
    )
    seconds = {"training": time.perf_counter() - clock}
    f_oracle = None
    if _needs_oracle(config, ds):
        clock = time.perf_counter()
        f_oracle = _oracle(config, ds, build, streams)
        seconds["oracle"] = time.perf_counter() - clock
    return _Fit(ds, model, f_oracle, seconds)


def _replication_seed(seed: int, replication: int) -> np.random.SeedSequence:
    """The seed sequence of replication ``replication`` of a run under base seed ``seed``."""
    return keyed_seed("subnet-experiment", replication, seed=seed)


@cached(maxsize=8)
def fitted_replications(
    config: ExperimentConfig, seed: int, replications: int
) -> tuple[_Fit, ...]:
    """The trained part of the first ``replications`` replications of :func:`run_experiment`
    (base seed ``seed``): what :func:`run_seed` would train, cached per argument so that the
    claims and mutants that change only later steps (selection, variances, decisions) read
    the same networks (``Mutant.reuses``). The returned networks must not be modified in
    place."""
    return tuple(_fit(config, _Streams(_replication_seed(seed, r))) for r in range(replications))


@cached(maxsize=8)
def first_audit(config: ExperimentConfig, seed: int, replications: int) -> dict[str, float]:
    """The kernel audit (:func:`_audit`) of the first of :func:`fitted_replications`'s
    networks, as :func:`run_experiment` runs it: cached per argument so that the mutants that
    change only the selection, which the audit never calls, reuse it (``Mutant.reuses``)."""
    fit = fitted_replications(config, seed, replications)[0]
    model = copy.deepcopy(fit.model).double().eval()
    reference = oracle_reference(config, seed, replications)
    return _audit(config, model, fit.ds, _noise_var(config, fit.ds, model), None, reference)


@cached(maxsize=8)
def oracle_reference(config: ExperimentConfig, seed: int, replications: int) -> Any:
    """The dense oracle's side of :func:`first_audit`
    (:func:`.kernel_audit.audit_reference`, an ``AuditReference``): cached per argument so
    that the mutants that change only our kernels, which the oracle never calls, reuse it
    (``Mutant.reuses``)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.kernel_audit import (
        audit_reference,
    )

    fit = fitted_replications(config, seed, replications)[0]
    model = copy.deepcopy(fit.model).double().eval()
    return audit_reference(
        model,
        fit.ds.X_train,
        fit.ds.X_test,
        task=fit.ds.task,
        noise_var=_noise_var(config, fit.ds, model),
        prior_precision=config.prior_precision,
        rng=_Streams(_replication_seed(seed, 0)).audit,
    )


def _noise_var(config: ExperimentConfig, ds: Any, model: Any) -> float:
    """σ0²: the MAP's training residuals (App. C.1) or test residuals (C.6); 1 unless
    regression."""
    if ds.task != "regression":
        return 1.0
    Xs, ys = (ds.X_train, ds.y_train) if config.noise_from == "train" else (ds.X_test, ds.y_test)
    return noise_variance(model, Xs, ys)


def _run_seed(
    config: ExperimentConfig,
    streams: _Streams,
    audit: bool,
    fit: _Fit | None = None,
    run: tuple[int, int] | None = None,
) -> SeedResult:
    """One replication; ``run`` = (base seed, replications) of :func:`fitted_replications`
    when ``fit`` is its first network, whose audit :func:`first_audit` then caches."""
    t: dict[str, float] = {}
    fit = _fit(config, streams) if fit is None else fit
    ds = fit.ds
    t["training"] = fit.seconds["training"]

    clock = time.perf_counter()
    model = copy.deepcopy(fit.model).double().eval()
    J = per_sample_jacobian(model, ds.X_train, chunk_size=config.chunk_size).numpy()
    G = per_sample_jacobian(model, ds.X_test, chunk_size=config.chunk_size).numpy()
    f_train, f_test = predict(model, ds.X_train), predict(model, ds.X_test)
    t["jacobians"] = time.perf_counter() - clock

    clock = time.perf_counter()
    s2 = _noise_var(config, ds, model)
    ggn = _ggn(ds.task, J, f_train, s2, config.prior_precision)
    scores = ggn.scores()
    p = ggn.p
    ks = [k for k in config.ks if k <= p]
    t["ggn"] = time.perf_counter() - clock
    audited = {}
    if audit and run is None:
        audited = _audit(config, model, ds, s2, streams.audit)
    elif audit:
        audited = dict(first_audit(config, *run))

    clock = time.perf_counter()
    var_full = predictive_variance(ggn, G)
    t["full_laplace"] = time.perf_counter() - clock
    noise = s2 if ds.task == "regression" else 0.0

    clock = time.perf_counter()
    f_ref, cov_noise = _coverage_reference(config, ds, fit.f_oracle, s2)
    t["coverage_reference"] = time.perf_counter() - clock + fit.seconds.get("oracle", 0.0)

    def metrics(var: np.ndarray) -> tuple[float, float]:
        w2 = float(np.mean(wasserstein_gap(var_full, var, noise_var=noise)))
        cov = np.nan if f_ref is None else coverage(f_ref, f_test, var + cov_noise)
        return w2, cov

    w2: dict[str, np.ndarray] = {}
    cov: dict[str, np.ndarray] = {}
    problem = SubnetProblem(
        ggn,
        scores=scores,
        theta=torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy(),
        layer_sizes=parameter_layout(model).layer_sizes(),
    )
    shared = {"candidates": config.greedy_candidates}
    for name in config.methods:
        clock = time.perf_counter()

        def subnet(k: int, name: str = name) -> np.ndarray:
            return select(name, problem, k, rng=streams.random, shared=shared)

        if get_selection(name).nested:  # one order serves the whole k-grid
            pv = subnetwork_variance_path(ggn, G, subnet(max(ks)), ks)
        else:
            pv = np.stack([subnetwork_variance(ggn, G, subnet(k)) for k in ks])
        res = [metrics(v) for v in pv]
        w2[name] = np.array([r[0] for r in res])
        cov[name] = np.array([r[1] for r in res])
        t[name] = time.perf_counter() - clock

    reference: dict[str, dict[str, float]] = {}
    reference["full_laplace"] = dict(zip(("w2", "coverage"), metrics(var_full), strict=True))
    if config.neural_linear:
        clock = time.perf_counter()
        S = select("neural_linear", problem, 1)
        w, c = metrics(subnetwork_variance(ggn, G, S))
        reference["neural_linear"] = {"w2": w, "coverage": c, "k": float(S.size)}
        t["neural_linear"] = time.perf_counter() - clock
    if config.kfac and ds.task != "multiclass" and config.model.startswith("mlp"):
        clock = time.perf_counter()
        kf = fit_kfac(
            model,
            ds.X_train,
            likelihood=ds.task,
            prior_precision=config.prior_precision,
            noise_var=s2,
        )
        reference["kfac_laplace"] = dict(
            zip(("w2", "coverage"), metrics(kf.variance(model, ds.X_test)), strict=True)
        )
        t["kfac_laplace"] = time.perf_counter() - clock
    if config.ensemble_size >= 2:
        clock = time.perf_counter()
        members = _members(config, _builder(config, ds), ds, streams.ensemble)
        outs = np.stack([predict(net, ds.X_test) for net in members])
        var_ens, f_ens = outs.var(axis=0, ddof=1), outs.mean(axis=0)
        w = float(np.mean(wasserstein_gap(var_full, var_ens, noise_var=noise)))
        c = np.nan if f_ref is None else coverage(f_ref, f_ens, var_ens + cov_noise)
        reference["deep_ensemble"] = {"w2": w, "coverage": c}
        t["deep_ensemble"] = time.perf_counter() - clock
    return SeedResult(p, tuple(ks), w2, cov, reference, s2, t, audited)


def _audit(
    config: ExperimentConfig, model: Any, ds: Any, s2: float, rng: Any, reference: Any = None
) -> dict:
    """The kernel audit of :mod:`.kernel_audit` (the oracle's side drawn from ``rng``, or
    ``reference``); a ratio above 1 is an ImplementationError."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.kernel_audit import (
        audit_kernels,
    )
    from laplace_lab.paper_checks.verification import require

    ratios = audit_kernels(
        model,
        ds.X_train,
        ds.X_test,
        task=ds.task,
        noise_var=s2,
        prior_precision=config.prior_precision,
        make_ggn=_ggn,
        rng=rng,
        reference=reference,
    )
    bad = {k: v for k, v in ratios.items() if not v <= 1.0}
    require(
        not bad,
        "Experiment-1 kernels disagree with the dense oracle on the replication's own inputs "
        "(error / tolerance): " + ", ".join(f"{k} {v:.3g}" for k, v in bad.items()),
    )
    return ratios


def _coverage_reference(
    config: ExperimentConfig, ds: Any, f_oracle: np.ndarray | None, s2: float
) -> tuple[np.ndarray | None, float]:
    """(f_ref at the test points, variance added to σ²): truth, oracle network or targets y."""
    target = config.coverage_target
    if ds.f_test is not None and target in ("truth", "oracle"):
        return ds.f_test, 0.0
    if target == "y":
        return (ds.y_test, s2) if ds.task == "regression" else (None, 0.0)
    if target == "truth":
        return None, 0.0
    return f_oracle, 0.0


def _oracle(
    config: ExperimentConfig, ds: Any, build: Callable[[], Any], streams: _Streams
) -> np.ndarray:
    """The oracle's outputs at the test points: the same architecture trained on a larger
    training pool drawn from the same split (App. C.1)."""
    # the same random split (same stream) without subsampling: the pool excludes every test row
    big = _data(config, streams.data(), None)
    rows = min(config.oracle_rows, big.X_train.shape[0])
    idx = streams.oracle_rows.choice(big.X_train.shape[0], size=rows, replace=False)
    oracle = build_seeded(build, rng=streams.oracle_init)
    # oracle inputs must be on the working split's scale
    Xo = (big.X_train[idx] * big.x_std + big.x_mean - ds.x_mean) / ds.x_std
    yo = big.y_train[idx]
    if ds.task == "regression":
        yo = (yo * big.y_std + big.y_mean - ds.y_mean) / ds.y_std
    _train(oracle, Xo, yo, likelihood=ds.task, config=config.train, rng=streams.oracle_batches)
    return predict(oracle, ds.X_test)


class _Streams:
    """The independent random streams of one replication, spawned from its generator.

    ``data()`` returns a fresh generator of the data stream each time, so the oracle's larger
    training pool is cut from the same random split as the working data.
    """

    def __init__(self, rng: np.random.Generator | int) -> None:
        data, self.random, self.init, self.batches, *rest = spawn(rng, 9)
        self._data = data.bit_generator.seed_seq
        self.oracle_rows, self.oracle_init, self.oracle_batches, self.ensemble, self.audit = rest

    def data(self) -> np.random.Generator:
        return np.random.default_rng(self._data)


def run_experiment(
    config: ExperimentConfig,
    replications: int = 10,
    *,
    seed: int = 0,
    progress: bool = True,
    audit: bool = True,
) -> ExperimentResult:
    """Run ``replications`` replications of :func:`run_seed` and aggregate mean ± s.e.

    The paper uses ten. Replication r draws from ``keyed_seed("subnet-experiment", r,
    seed=seed)``: the same data split and MAP for every configuration at the same r, so
    configurations can be compared replication by replication. ``progress`` shows a bar
    over the replications (each trains a MAP network, an ensemble and KFAC). ``audit`` checks
    the kernels on the first replication (:func:`run_seed`).
    """
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"config must be an ExperimentConfig; got {type(config).__name__}")
    replications = positive_int(replications, "replications")
    desc = f"Experiment 1 ({config.dataset}, {config.model})"
    seeds = []
    with _bounded_threads(config):
        fits = fitted_replications(config, seed, replications)
    with progress_bar(total=replications, desc=desc, unit="rep", enabled=progress) as bar:
        for r, fit in enumerate(fits):
            with _bounded_threads(config):
                streams = _Streams(_replication_seed(seed, r))
                seeds.append(
                    _run_seed(config, streams, audit and r == 0, fit, (seed, replications))
                )
            bar.update(1)
    res = tuple(seeds)
    n = len(res)
    w2_mean = {m: np.mean([r.w2[m] for r in res], axis=0) for m in res[0].w2}
    w2_se = {
        m: (
            np.std([r.w2[m] for r in res], axis=0, ddof=1) / np.sqrt(n)
            if n > 1
            else np.zeros_like(w2_mean[m])
        )
        for m in res[0].w2
    }
    cov_mean = {m: np.mean([r.coverage[m] for r in res], axis=0) for m in res[0].coverage}
    ref_mean = {
        name: {key: float(np.mean([r.reference[name][key] for r in res])) for key in vals}
        for name, vals in res[0].reference.items()
    }
    return ExperimentResult(config, res, w2_mean, w2_se, cov_mean, ref_mean)
