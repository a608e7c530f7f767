"""NetworkGGN as an operator: ``matvec``, ``as_linear_operator``, ``dense`` and the low-rank
Laplace built from it, each against a dense float64 oracle on small networks.

The oracle is :func:`laplace_lab.conformance.oracle.jacobian` (one ``torch.autograd.grad`` call
per row and output on a float64 copy of the model) with the output Hessians written out:
Ω = Σ_n J_nᵀ H_n J_n + V, H_n = 1/σ0², σ(f_n)(1 − σ(f_n)) or diag(π_n) − π_nπ_nᵀ: NetworkGGN is
exact by default; with an explicit ``jitter`` ε its multiclass Ω carries ε Σ_n J_nᵀJ_n, and a
separate test shows that term against the exact oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg
import torch

from laplace_lab.conformance.oracle import jacobian, outputs
from laplace_lab.numerics import GGN, LowRankLaplace, NetworkGGN
from laplace_lab.numerics.ggn import DENSE_MAX_P
from tests.numerics.conftest import traced_peak

EPS = 1e-6  # a multiclass jitter some libraries add (NetworkGGN's is 0 unless asked)


class Twice(torch.nn.Module):
    """A Linear layer applied twice: the outer-product Jacobian does not apply, so the
    "auto" method falls back to materialised torch.func Jacobian chunks."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.a, self.b, self.c = (
            torch.nn.Linear(4, 8),
            torch.nn.Linear(8, 8),
            torch.nn.Linear(8, c),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x))
        return self.c(torch.tanh(self.b(torch.tanh(self.b(h)))))


def _model(kind: str, c: int, dtype: torch.dtype = torch.float64) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "mlp":  # Linear layers only: the layer-signal path
        layers = [torch.nn.Linear(4, 9), torch.nn.Tanh(), torch.nn.Linear(9, 7), torch.nn.Tanh()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(7, c))
    elif kind == "norm":  # a LayerNorm: the torch.func (jvp/vjp) path
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 9), torch.nn.LayerNorm(9), torch.nn.Tanh(), torch.nn.Linear(9, c)
        )
    else:
        model = Twice(c)
    return model.to(dtype).eval()


_SETUPS = {  # likelihood: (outputs C, network kwargs)
    "regression": (1, {"noise_var": 0.3}),
    "binary": (1, {}),
    "multiclass": (3, {}),
}


def _case(
    likelihood: str,
    kind: str = "mlp",
    *,
    n: int = 37,
    chunk_size: int = 10,
    jitter: float = 0.0,
    **kw,
):
    """(NetworkGGN, the oracle's Ω (jitter term included), its GGN part, J (N, C, p), f)."""
    c, extra = _SETUPS[likelihood]
    model = _model(kind, c, kw.pop("dtype", torch.float64))
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 4))
    p = sum(t.numel() for t in model.parameters())
    V = rng.uniform(0.5, 3.0, p)  # a non-isotropic prior
    ggn = NetworkGGN(
        model,
        X,
        likelihood=likelihood,
        prior_precision=V,
        chunk_size=chunk_size,
        jitter=jitter,
        **extra,
        **kw,
    )
    J, f = jacobian(model, X), outputs(model, X)
    if likelihood == "regression":
        H = np.full((n, 1, 1), 1.0 / extra["noise_var"])
    elif likelihood == "binary":
        s = 1.0 / (1.0 + np.exp(-f[:, 0]))
        H = (s * (1.0 - s))[:, None, None]
    else:
        z = np.exp(f - f.max(axis=1, keepdims=True))
        pi = z / z.sum(axis=1, keepdims=True)
        H = pi[:, :, None] * np.eye(c) - pi[:, :, None] * pi[:, None, :] + jitter * np.eye(c)
    A = np.einsum("ncp,ncd,ndq->pq", J, H, J)
    A = 0.5 * (A + A.T)
    return ggn, A + np.diag(V), A, J, f


def _rel(a: np.ndarray, b: np.ndarray, scale: float) -> float:
    """Largest column error ‖a − b‖ relative to ``scale``."""
    return float(np.max(np.linalg.norm(np.atleast_2d((a - b).T), axis=1)) / scale)


@pytest.mark.parametrize("likelihood", list(_SETUPS))
@pytest.mark.parametrize("kind", ["mlp", "norm", "twice"])
def test_matvec_equals_the_dense_oracle_for_vectors_and_blocks(likelihood, kind):
    ggn, Omega, A, _, _ = _case(likelihood, kind)
    rng = np.random.default_rng(2)
    v, block = rng.standard_normal(ggn.p), rng.standard_normal((ggn.p, 4))
    norm = np.linalg.norm(Omega, 2)
    w = ggn.matvec(v)
    assert w.shape == (ggn.p,) and w.dtype == np.float64
    # float64 model: J_wᵀ(J_w v) agrees with the oracle's Ω v to roundoff (measured ≤ 1e-16)
    assert _rel(w, Omega @ v, norm * np.linalg.norm(v)) < 1e-13
    W = ggn.matvec(block)
    assert W.shape == (ggn.p, 4)
    assert _rel(W, Omega @ block, norm * np.linalg.norm(block, axis=0).max()) < 1e-13
    # each column of a block equals the product with that column alone
    np.testing.assert_allclose(W[:, 1], ggn.matvec(block[:, 1]), rtol=1e-12, atol=1e-12 * norm)
    # without the prior: the likelihood part J_wᵀJ_w only
    u = ggn.matvec(v, include_prior=False)
    assert _rel(u, A @ v, norm * np.linalg.norm(v)) < 1e-13
    # a (p, 1) block keeps its shape
    assert ggn.matvec(v[:, None]).shape == (ggn.p, 1)


def test_matvec_is_consistent_with_subset_gram_and_diagonal():
    ggn = _case("multiclass")[0]
    idx = np.array([3, 50, 7, 101, 0])
    E = np.zeros((ggn.p, idx.size))
    E[idx, np.arange(idx.size)] = 1.0
    cols = ggn.matvec(E, include_prior=False)  # J_wᵀ J_w e_i
    np.testing.assert_allclose(cols[idx], ggn.subset_gram(idx), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        ggn.matvec(E)[idx, np.arange(idx.size)], ggn.diagonal()[idx], rtol=1e-12
    )


def test_float32_model_matches_the_float64_oracle_to_float32_accuracy():
    ggn, Omega, _, _, _ = _case("multiclass", dtype=torch.float32)
    v = np.random.default_rng(3).standard_normal((ggn.p, 2))
    err = _rel(
        ggn.matvec(v), Omega @ v, np.linalg.norm(Omega, 2) * np.linalg.norm(v, axis=0).max()
    )
    assert err < 1e-6  # measured 2e-9: float32 signals (entries to eps32), float64 products


@pytest.mark.parametrize("likelihood", list(_SETUPS))
def test_dense_equals_the_oracle(likelihood):
    ggn, Omega, _, _, _ = _case(likelihood, chunk_size=8)
    D = ggn.dense()
    assert D.shape == (ggn.p, ggn.p) and D.dtype == np.float64
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_allclose(D, Omega, rtol=0, atol=1e-13 * np.abs(Omega).max())


def test_the_multiclass_jitter_is_eps_times_the_jacobian_gram():
    ggn, Omega, _, J, _ = _case("multiclass", jitter=EPS)
    jitter = EPS * np.einsum("ncp,ncq->pq", J, J)
    D = ggn.dense()
    # against the oracle without jitter the difference is exactly ε Σ_n J_nᵀJ_n
    np.testing.assert_allclose(D - (Omega - jitter), jitter, rtol=0, atol=1e-13 * np.abs(D).max())
    assert np.abs(jitter).max() > 1e-3 * EPS * np.abs(D).max()  # visible, not below roundoff


def test_dense_refuses_a_large_p_by_name():
    model = torch.nn.Linear(200, 100).double().eval()  # p = 20,100
    ggn = NetworkGGN(model, torch.zeros(3, 200, dtype=torch.float64), likelihood="multiclass")
    with pytest.raises(ValueError, match=rf"p=20100 .*DENSE_MAX_P={DENSE_MAX_P}"):
        ggn.dense()


@pytest.mark.parametrize("likelihood", ["regression", "multiclass"])
def test_linear_operator_eigsh_matches_dense_eigh(likelihood):
    ggn, Omega, _, _, _ = _case(likelihood)
    op = ggn.as_linear_operator()
    assert op.shape == (ggn.p, ggn.p) and op.dtype == np.float64
    v0 = np.random.default_rng(4).standard_normal(ggn.p)
    vals = scipy.sparse.linalg.eigsh(op, k=5, v0=v0, return_eigenvectors=False)
    ref = np.linalg.eigvalsh(Omega)[-5:]
    np.testing.assert_allclose(np.sort(vals), ref, rtol=1e-10)
    # symmetric: the adjoint is the operator itself; matmat and matvec agree with Ω
    x = np.random.default_rng(5).standard_normal((ggn.p, 3))
    norm = np.linalg.norm(Omega, 2) * np.linalg.norm(x, axis=0).max()
    assert _rel(op.matmat(x), Omega @ x, norm) < 1e-13
    assert _rel(op.rmatvec(x[:, 0]), Omega @ x[:, 0], norm) < 1e-13
    assert _rel(op @ x[:, 0], Omega @ x[:, 0], norm) < 1e-13
    lik = ggn.as_linear_operator(include_prior=False)
    np.testing.assert_allclose(lik.matvec(x[:, 0]) + ggn.prior_precision * x[:, 0], op @ x[:, 0])


@pytest.mark.parametrize("likelihood", list(_SETUPS))
def test_low_rank_laplace_from_a_network_ggn_equals_the_dense_factor(likelihood):
    ggn, _, _, J, f = _case(likelihood)
    V = ggn.prior_precision
    if likelihood == "regression":
        dense = GGN.regression(J[:, 0], noise_var=ggn.noise_var, prior_precision=V)
    elif likelihood == "binary":
        dense = GGN.binary(J[:, 0], f[:, 0], prior_precision=V)
    else:
        dense = GGN.multiclass(J, f, prior_precision=V)
    rank = 6
    a = LowRankLaplace.from_ggn(ggn, rank, rng=np.random.default_rng(0))
    b = LowRankLaplace.from_ggn(dense, rank, rng=np.random.default_rng(0))
    assert a.lanczos.converged and a.rank == rank
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=1e-10)  # measured 4e-15
    G = jacobian(ggn.model, np.random.default_rng(6).standard_normal((5, 4)))
    G = G.reshape(-1, ggn.p)
    # eigenvectors converged to a relative residual of 1e-10 (measured agreement 2e-14)
    np.testing.assert_allclose(a.predictive_variance(G), b.predictive_variance(G), rtol=1e-8)
    np.testing.assert_allclose(a.logdet(), b.logdet(), rtol=1e-12)


def test_low_rank_laplace_from_matvec_is_the_matrix_free_route():
    ggn, _, A, _, _ = _case("binary")
    a = LowRankLaplace.from_matvec(
        lambda v: A @ v, ggn.p, ggn.prior_precision, 4, rng=np.random.default_rng(7)
    )
    lam = np.linalg.eigvalsh(A)[::-1][:4]
    np.testing.assert_allclose(a.eigenvalues, lam, rtol=1e-9)


def test_matvec_never_forms_the_weighted_jacobian():
    """A 10-class MLP with N·C·p·8 = 150 MB: no allocation near a Jacobian chunk, let alone J_w.

    tracemalloc sees NumPy only, so torch's allocations are read from its profiler (measured:
    largest 0.24 MB, one chunk's float64 δ of the first layer; NumPy peak 17 kB).
    """
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(20, 60), torch.nn.Tanh(), torch.nn.Linear(60, 10)
    ).eval()
    N, C = 1000, 10
    X = torch.randn(N, 20)
    ggn = NetworkGGN(model, X, likelihood="multiclass", chunk_size=50)
    p = ggn.p  # 1,870
    full = N * C * p * 8
    v = np.random.default_rng(8).standard_normal(p)
    ggn.matvec(v)  # the first pass keeps the layer signals
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True
    ) as prof:
        _, peak = traced_peak(lambda: ggn.matvec(v))
    sizes = [e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0]
    # torch side: the largest allocation is a chunk's layer product (50·60·C·8 bytes),
    # not a chunk of the Jacobian (50·C·p·4 = 3.7 MB) and nowhere near N·C·p
    assert max(sizes) < 50 * C * p * 4 / 10
    assert peak < full / 1000  # NumPy side: the (p,) result and its copies only


def test_bad_vectors_are_refused_by_name():
    ggn, _, _, _, _ = _case("regression", n=5)
    p = ggn.p
    for bad in (np.ones(p + 1), np.ones((p, 2, 1)), np.ones((p, 0)), np.ones(()), np.ones((1, p))):
        with pytest.raises(ValueError, match=rf"v must have shape \(p,\) or \(p, r\).*p={p}"):
            ggn.matvec(bad)
    nan = np.ones(p)
    nan[3] = np.nan
    with pytest.raises(ValueError, match="v must be finite"):
        ggn.matvec(nan)
    with pytest.raises(TypeError, match="v must be a real"):
        ggn.matvec(np.ones(p, dtype=complex))
    with pytest.raises(TypeError, match="include_prior must be a bool"):
        ggn.matvec(np.ones(p), include_prior=1)
