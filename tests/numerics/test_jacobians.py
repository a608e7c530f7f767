"""Per-sample Jacobians vs autograd loops and central finite differences (tiny float64 models)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.numerics.ggn import GGN  # noqa: E402
from laplace_lab.numerics.jacobians import (  # noqa: E402
    jacobian_chunks,
    parameter_layout,
    per_sample_jacobian,
    to_cupy,
)
from laplace_lab.numerics.streamed_ggn import gradient_scores, subset_gram  # noqa: E402


def _mlp(d_in: int, d_out: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d_in, 5),
        torch.nn.Tanh(),
        torch.nn.Linear(5, 4),
        torch.nn.Tanh(),
        torch.nn.Linear(4, d_out),
    ).double()


def _cnn(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3),
        torch.nn.BatchNorm2d(2),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(2 * 3 * 3, 3),
    ).double()
    m.eval()
    with torch.no_grad():  # non-trivial running statistics
        m[1].running_mean.uniform_(-0.5, 0.5)
        m[1].running_var.uniform_(0.5, 2.0)
    return m


def _loop_jacobian(model: torch.nn.Module, X: torch.Tensor) -> torch.Tensor:
    """Reference: one torch.autograd.grad per sample and output."""
    params = [t for t in model.parameters() if t.requires_grad]
    rows = []
    for x in X:
        out = model(x[None]).reshape(-1)
        per_out = []
        for c in range(out.numel()):
            g = torch.autograd.grad(out[c], params, retain_graph=True)
            per_out.append(torch.cat([t.reshape(-1) for t in g]))
        rows.append(torch.stack(per_out))
    J = torch.stack(rows)
    return J[:, 0] if J.shape[1] == 1 else J


def _fd_jacobian(model: torch.nn.Module, X: torch.Tensor, h: float = 1e-6) -> torch.Tensor:
    """Reference: central finite differences in every parameter."""
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    cols = []
    with torch.no_grad():
        for i in range(theta.numel()):
            for sign in (1.0, -1.0):
                t = theta.clone()
                t[i] += sign * h
                torch.nn.utils.vector_to_parameters(t, model.parameters())
                if sign > 0:
                    up = model(X)
                else:
                    cols.append((up - model(X)) / (2 * h))
        torch.nn.utils.vector_to_parameters(theta, model.parameters())
    J = torch.stack(cols, dim=-1)
    return J[:, 0] if J.shape[1] == 1 else J


@pytest.mark.parametrize("method", ["vmap", "linear"])
@pytest.mark.parametrize("d_out", [1, 3])
def test_jacobian_equals_autograd_loop_and_finite_differences(d_out, method):
    model = _mlp(3, d_out)
    X = torch.randn(7, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    J = per_sample_jacobian(model, X, chunk_size=3, method=method)
    p = sum(t.numel() for t in model.parameters())
    assert J.shape == ((7, p) if d_out == 1 else (7, d_out, p))
    torch.testing.assert_close(J, _loop_jacobian(model, X), rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(J, _fd_jacobian(model, X), rtol=1e-6, atol=1e-8)


def test_conv_batchnorm_jacobian_and_eval_mode_required():
    model = _cnn()
    X = torch.randn(4, 1, 5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    J = per_sample_jacobian(model, X, chunk_size=2)
    torch.testing.assert_close(J, _fd_jacobian(model, X), rtol=1e-6, atol=1e-8)
    model.train()
    with pytest.raises(ValueError, match="eval mode"):
        per_sample_jacobian(model, X)


@pytest.mark.parametrize("method", ["vmap", "linear"])
def test_subset_columns_equal_full_columns_in_order(method):
    model = _mlp(3, 3)
    X = torch.randn(9, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    full = per_sample_jacobian(model, X, method="vmap")
    S = [40, 2, 17, 0, 58, 19, 20]  # weights and biases of several layers
    sub = per_sample_jacobian(model, X, subset=S, chunk_size=4, method=method)
    assert sub.shape == (9, 3, 7)
    torch.testing.assert_close(sub, full[..., S], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("method", ["vmap", "linear"])
def test_subset_memory_is_n_k_plus_chunk_p(method):
    """Sizes allocated by the subset path: no tensor as large as N×p is ever created."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(30, 60), torch.nn.ReLU(), torch.nn.Linear(60, 1))
    N, chunk, k = 512, 16, 10
    p = parameter_layout(model).p  # 1921
    X = torch.randn(N, 30)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True
    ) as prof:
        sub = per_sample_jacobian(model, X, subset=np.arange(k), chunk_size=chunk, method=method)
    assert sub.shape == (N, k)
    sizes = [e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0]
    item = 4
    # the largest single allocation is a chunk's Jacobian (chunk·p floats), far below N·p
    assert max(sizes) <= 4 * chunk * p * item
    assert max(sizes) < N * p * item / 8


@pytest.mark.parametrize("method", ["vmap", "linear"])
def test_gradient_scores_equal_column_mean_squares_and_ggn_scores(method):
    X = torch.randn(11, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    reg = _mlp(3, 1)
    J = per_sample_jacobian(reg, X, method="vmap").numpy()
    s = gradient_scores(reg, X, likelihood="regression", chunk_size=4, method=method).numpy()
    np.testing.assert_allclose(s, (J**2).mean(0), rtol=1e-12)
    ggn = GGN.regression(J, noise_var=0.3, prior_precision=2.0)
    np.testing.assert_allclose(s, ggn.scores(), rtol=1e-12)

    f = reg(X).detach().numpy()[:, 0]
    w = 1 / (1 + np.exp(-f))
    w = w * (1 - w)
    sb = gradient_scores(reg, X, likelihood="binary", chunk_size=5, method=method).numpy()
    np.testing.assert_allclose(sb, (w[:, None] * J**2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(sb, GGN.binary(J, f, prior_precision=1.0).scores(), rtol=1e-12)

    mc = _mlp(3, 4)
    Jm = per_sample_jacobian(mc, X, method="vmap").numpy()
    logits = mc(X).detach().numpy()
    sm = gradient_scores(mc, X, likelihood="multiclass", chunk_size=3, method=method).numpy()
    pi = np.exp(logits - logits.max(1, keepdims=True))
    pi /= pi.sum(1, keepdims=True)
    H = np.stack([np.diag(q) - np.outer(q, q) for q in pi])
    ref = np.einsum("nci,ncd,ndi->i", Jm, H, Jm) / 11
    np.testing.assert_allclose(sm, ref, rtol=1e-10)
    np.testing.assert_allclose(
        sm, GGN.multiclass(Jm, logits, prior_precision=1.0).scores(), rtol=1e-10
    )


@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
def test_ggn_of_real_model_equals_dense_jt_h_j_plus_v(likelihood):
    """GGN from torch.func Jacobians equals torch's dense Jᵀ H J + V built by autograd."""
    C = 3 if likelihood == "multiclass" else 1
    model = _mlp(3, C, seed=5)
    X = torch.randn(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    V = np.linspace(0.5, 2.0, parameter_layout(model).p)
    J = per_sample_jacobian(model, X).numpy()
    f = model(X).detach()
    Jt = torch.as_tensor(_loop_jacobian(model, X))  # autograd reference Jacobian
    if likelihood == "regression":
        ggn = GGN.regression(J, noise_var=0.5, prior_precision=V)
        H = torch.eye(8, dtype=torch.float64) / 0.5
        dense = Jt.T @ H @ Jt
    elif likelihood == "binary":
        ggn = GGN.binary(J, f[:, 0].numpy(), prior_precision=V)
        # Hessian of the BCE loss in the logits, by autograd
        y = torch.zeros(8, dtype=torch.float64)
        hess = torch.autograd.functional.hessian(
            lambda z: torch.nn.functional.binary_cross_entropy_with_logits(z, y, reduction="sum"),
            f[:, 0],
        )
        dense = Jt.T @ hess @ Jt
    else:
        ggn = GGN.multiclass(J, f.numpy(), prior_precision=V, eps=0.0)
        y = torch.zeros(8, dtype=torch.long)
        hess = torch.autograd.functional.hessian(
            lambda z: torch.nn.functional.cross_entropy(z.reshape(8, C), y, reduction="sum"),
            f.reshape(-1),
        )
        Jflat = Jt.reshape(8 * C, -1)
        dense = Jflat.T @ hess @ Jflat
    np.testing.assert_allclose(ggn.dense(), dense.numpy() + np.diag(V), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["vmap", "linear"])
@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
def test_subset_gram_equals_dense_jt_h_j_block(likelihood, method, monkeypatch):
    """Σ_n J_n[:, S]ᵀ H_n J_n[:, S] streamed in chunks (3 rows) and float64 blocks (2 rows)
    equals the S block of Jᵀ H J from autograd's Jacobian and the loss Hessian."""
    import laplace_lab.numerics.streamed_ggn as streamed

    monkeypatch.setattr(streamed, "_GRAM_ROWS", 2)
    C = 3 if likelihood == "multiclass" else 1
    model = _mlp(3, C, seed=7)
    X = torch.randn(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    f = model(X).detach()
    Jt = torch.as_tensor(_loop_jacobian(model, X)).reshape(8 * C, -1)
    loss = {
        "regression": lambda z: 0.5 * (z**2).sum(),
        "binary": lambda z: torch.nn.functional.binary_cross_entropy_with_logits(
            z, torch.zeros(8, dtype=torch.float64), reduction="sum"
        ),
        "multiclass": lambda z: torch.nn.functional.cross_entropy(
            z.reshape(8, C), torch.zeros(8, dtype=torch.long), reduction="sum"
        ),
    }[likelihood]
    H = torch.autograd.functional.hessian(loss, f.reshape(-1))
    S = np.array([40, 2, 17, 33, 5])  # out of order, across the three layers
    ref = (Jt.T @ H @ Jt).numpy()[np.ix_(S, S)]
    G = subset_gram(model, X, S, likelihood=likelihood, chunk_size=3, eps=0.0, method=method)
    assert G.dtype == np.float64 and G.shape == (5, 5)
    np.testing.assert_allclose(G, ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(G, G.T)


def test_subset_gram_of_a_float32_model_is_float64_of_its_columns():
    """The columns are the model's float32 values; only their Gram is accumulated in
    float64 (so it matches J[:, S] of per_sample_jacobian to float64 roundoff)."""
    model = _mlp(3, 1, seed=9).float()
    X = torch.randn(3000, 3, generator=torch.Generator().manual_seed(10))
    S = np.arange(0, 49, 3)
    J = per_sample_jacobian(model, X, subset=S).double().numpy()
    G = subset_gram(model, X, S)
    np.testing.assert_allclose(G, J.T @ J, rtol=1e-12, atol=1e-12 * np.abs(J.T @ J).max())
    with pytest.raises(ValueError, match="likelihood='binary' does not match"):
        subset_gram(_mlp(3, 2, seed=9), X.double(), S, likelihood="binary")
    with pytest.raises(ValueError, match="subset"):
        subset_gram(model, X, [1, 1])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_subset_gram_on_a_cuda_model_equals_the_host_one():
    model = _mlp(3, 1, seed=11)
    X = torch.randn(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    S = np.array([30, 1, 12])
    host = subset_gram(model, X, S, chunk_size=7)
    np.testing.assert_allclose(
        subset_gram(model.cuda(), X.cuda(), S, chunk_size=7), host, rtol=1e-12
    )


class _Shared(torch.nn.Module):
    """One Linear applied twice (weight sharing): not a per-sample outer product."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.head = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.lin(torch.tanh(self.lin(x)))))


class _Coupled(torch.nn.Module):
    """Centres the batch: samples interact, so one backward does not give per-sample δ."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.lin(x - x.mean(0, keepdim=True) + torch.sin(x))


@pytest.mark.parametrize("cls", [_Shared, _Coupled])
def test_auto_falls_back_to_torch_func_when_outer_products_do_not_apply(cls):
    torch.manual_seed(0)
    model = cls().double()
    X = torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    J = per_sample_jacobian(model, X)  # auto
    ref = torch.stack(
        [per_sample_jacobian(model, X[i : i + 1], method="vmap")[0] for i in range(6)]
    )
    torch.testing.assert_close(J, ref, rtol=1e-12, atol=1e-13)
    if cls is _Shared:
        with pytest.raises(ValueError, match="once per sample"):
            per_sample_jacobian(model, X, method="linear")


def test_parameter_layout_slices_and_layers():
    model = _cnn()
    lay = parameter_layout(model)
    names = [b.name for b in lay.blocks]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"]
    assert lay.layer_sizes() == [2 * 9 + 2, 2 + 2, 18 * 3 + 3]
    assert lay.p == sum(lay.layer_sizes())
    np.testing.assert_array_equal(lay.layer_indices(-1), np.arange(lay.p - 57, lay.p))
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    b = lay.block("4.weight")
    torch.testing.assert_close(theta[b.slice].reshape(b.shape), model[4].weight.detach())


def test_jacobian_chunks_yield_outputs():
    model = _mlp(3, 1)
    X = torch.randn(5, 3, dtype=torch.float64)
    starts, fs = [], []
    for start, J, f in jacobian_chunks(model, X, chunk_size=2):
        starts.append(start)
        fs.append(f)
        assert J.shape[0] == f.shape[0]
    assert starts == [0, 2, 4]
    torch.testing.assert_close(torch.cat(fs), model(X).detach()[:, 0])


def test_bad_input_raises_naming_the_argument():
    model = _mlp(3, 1)
    X = torch.randn(4, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="model"):
        per_sample_jacobian("net", X)
    with pytest.raises(ValueError, match="X"):
        per_sample_jacobian(model, X[:0])
    with pytest.raises(ValueError, match="X"):
        per_sample_jacobian(model, X * float("nan"))
    with pytest.raises(ValueError, match="subset"):
        per_sample_jacobian(model, X, subset=[1, 1])
    with pytest.raises(ValueError, match="subset"):
        per_sample_jacobian(model, X, subset=[10**6])
    with pytest.raises(ValueError, match="chunk_size"):
        per_sample_jacobian(model, X, chunk_size=0)
    with pytest.raises(ValueError, match="likelihood"):
        gradient_scores(model, X, likelihood="poisson")
    with pytest.raises(ValueError, match="likelihood"):
        gradient_scores(model, X, likelihood="multiclass")
    with pytest.raises(ValueError, match="layer"):
        parameter_layout(model).layer_indices(7)
    with pytest.raises(ValueError, match="trainable"):
        per_sample_jacobian(torch.nn.ReLU(), X)
    with pytest.raises(ValueError, match="CUDA"):
        to_cupy(X)
    with pytest.raises(ValueError, match="method"):
        per_sample_jacobian(model, X, method="jvp")
    with pytest.raises(ValueError, match="Linear"):
        per_sample_jacobian(_cnn(), torch.zeros(2, 1, 5, 5, dtype=torch.float64), method="linear")


@pytest.mark.parametrize("method", ["auto", "vmap"])
def test_one_dimensional_x_is_refused_with_the_reshape_to_use(method):
    # Linear(1, ·) would accept a 1-D X of N values as one sample of N features (or fail
    # inside torch with "mat1 and mat2 shapes cannot be multiplied").
    for d_in in (1, 3):
        with pytest.raises(ValueError, match=r"X must have shape \(N, \.\.\.\).*reshape"):
            per_sample_jacobian(_mlp(d_in, 1), torch.randn(7, dtype=torch.float64), method=method)
    with pytest.raises(ValueError, match=r"X does not fit the model.*\(4, 2\)"):
        per_sample_jacobian(_mlp(3, 1), torch.randn(4, 2, dtype=torch.float64), method=method)


@pytest.mark.parametrize("method", ["auto", "vmap", "linear"])
def test_dropout_in_training_mode_is_refused_naming_the_layer(method):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.Dropout(0.5), torch.nn.Linear(5, 1)
    ).double()
    X = torch.randn(6, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="dropout layer '1' is in training mode"):
        per_sample_jacobian(model, X, method=method)
    with pytest.raises(ValueError, match="dropout layer '1'"):
        gradient_scores(model, X, likelihood="regression")
    model.eval()  # dropout is the identity in eval mode: the Jacobian of the Linear stack
    plain = torch.nn.Sequential(model[0], model[2])
    torch.testing.assert_close(
        per_sample_jacobian(model, X, method=method), _loop_jacobian(plain, X)
    )


def test_random_forward_passes_get_a_clear_error():
    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 1).double()

        def forward(self, x):
            return self.lin(x + torch.randn_like(x))

    with pytest.raises(ValueError, match="draws random numbers in its forward pass"):
        per_sample_jacobian(Noisy(), torch.randn(4, 3, dtype=torch.float64), method="vmap")


@pytest.mark.parametrize("seed", range(12))
def test_auto_refuses_a_functional_dropout_whatever_its_masks(seed):
    """A dropout outside an nn.Dropout module escapes the eval-mode check; the outer-product
    path's one-row check must still refuse it, not accept it when two passes happen to draw
    the same mask on that row (a one-row mask of 8 units at p = 0.1 agrees ~1 time in 3)."""

    class MCDropout(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = torch.nn.Linear(3, 8), torch.nn.Linear(8, 1)

        def forward(self, x):
            h = torch.nn.functional.dropout(torch.tanh(self.l1(x)), p=0.1, training=True)
            return self.l2(h)

    torch.manual_seed(seed)
    model = MCDropout().double()
    with pytest.raises(ValueError, match="draws random numbers in its forward pass"):
        per_sample_jacobian(model, torch.randn(6, 3, dtype=torch.float64))


@pytest.mark.gpu
def test_dlpack_handoff_to_cupy():
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available() or not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    t = torch.arange(6.0, device="cuda")
    c = to_cupy(t)
    c[0] = 42.0  # shares memory: no copy
    assert float(t[0]) == 42.0


@pytest.mark.parametrize("d_out", [1, 3])
def test_out_buffer_is_filled_and_returned(d_out):
    model = _mlp(3, d_out)
    X = torch.randn(7, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    ref = per_sample_jacobian(model, X, method="vmap")
    buf = torch.full_like(ref, float("nan"))
    got = per_sample_jacobian(model, X, chunk_size=3, out=buf)
    assert got is buf
    torch.testing.assert_close(buf, ref, rtol=1e-13, atol=1e-15)
    S = [4, 0, 30]
    sub = torch.empty(ref[..., S].shape, dtype=torch.float64)
    assert per_sample_jacobian(model, X, subset=S, out=sub) is sub
    torch.testing.assert_close(sub, ref[..., S], rtol=1e-13, atol=1e-15)


def test_out_buffer_is_checked():
    model = _mlp(3, 1)
    X = torch.randn(4, 3, dtype=torch.float64)
    p = parameter_layout(model).p
    with pytest.raises(TypeError, match="out"):
        per_sample_jacobian(model, X, out=np.zeros((4, p)))
    with pytest.raises(ValueError, match="out must have shape"):
        per_sample_jacobian(model, X, out=torch.zeros(4, p + 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="dtype"):
        per_sample_jacobian(model, X, out=torch.zeros(4, p))
    with pytest.raises(ValueError, match="contiguous"):
        per_sample_jacobian(model, X, out=torch.zeros(p, 4, dtype=torch.float64).T)
