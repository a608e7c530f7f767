"""Per-sample Jacobians, the streamed GGN and layer-based selections on models that are not a
plain registration-ordered MLP: each against a dense ``torch.autograd`` reference, or refused
with an error that names the problem."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.numerics import (
    GGN,
    LinearizedLaplace,
    NetworkGGN,
    ScaLLA,
    SubnetProblem,
    parameter_layout,
    per_sample_jacobian,
    select,
)


def _autograd_jacobian(model: torch.nn.Module, X: torch.Tensor) -> torch.Tensor:
    """J[n, c] = ∇_θ f_c(x_n) over the trainable parameters, one backward pass per entry."""
    params = [t for t in model.parameters() if t.requires_grad]
    out = model(X).reshape(X.shape[0], -1)
    rows = [
        [
            torch.cat(
                [g.reshape(-1) for g in torch.autograd.grad(out[n, c], params, retain_graph=True)]
            )
            for c in range(out.shape[1])
        ]
        for n in range(X.shape[0])
    ]
    return torch.stack([torch.stack(r) for r in rows])


class Squeezed(torch.nn.Module):
    """Three outputs through a final ``squeeze()``: (N, 3) for a batch, (3,) for one row."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.norm, self.b = (
            torch.nn.Linear(3, 4),
            torch.nn.LayerNorm(4),
            torch.nn.Linear(4, 3),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.norm(self.a(x)))).squeeze()


def test_a_squeezed_output_keeps_every_class_row():
    torch.manual_seed(0)
    model = Squeezed().double().eval()
    X = torch.randn(5, 3, dtype=torch.float64)
    ref = _autograd_jacobian(model, X)
    torch.testing.assert_close(per_sample_jacobian(model, X), ref, rtol=1e-12, atol=1e-14)
    idx = [0, 5, 30]
    torch.testing.assert_close(
        per_sample_jacobian(model, X, subset=idx), ref[..., idx], rtol=1e-12, atol=1e-14
    )
    # one row: the squeeze removes the batch axis too, and the (3,) output is one row's
    torch.testing.assert_close(per_sample_jacobian(model, X[:1]), ref[:1], rtol=1e-12, atol=1e-14)


def test_frozen_parameters_are_not_part_of_theta():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    model = model.double()
    model[0].weight.requires_grad_(False)
    with torch.no_grad():
        model[0].weight.mul_(100)  # large, frozen: must not be selected
    ggn = NetworkGGN(model, torch.randn(8, 3, dtype=torch.float64))
    trainable = torch.cat([model[0].bias, model[2].weight.reshape(-1), model[2].bias])
    np.testing.assert_array_equal(ggn.theta(), trainable.detach().numpy())
    S = select("largest_magnitude", SubnetProblem(ggn), 3)
    want = np.argsort(-np.abs(trainable.detach().numpy()), kind="stable")[:3]
    np.testing.assert_array_equal(S, want)
    with pytest.raises(ValueError, match=r"theta must have one entry per parameter \(p=9\)"):
        select("largest_magnitude", SubnetProblem(ggn, theta=np.ones(21)), 3)


def test_binary_scores_of_confident_points_match_the_dense_ggn_in_float32():
    """A logit of +25 gives p(1 − p) = 0 in float32 unless the weight is σ(f)σ(−f)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model.eval()
    with torch.no_grad():
        model[2].bias.fill_(25.0)
    X = torch.randn(10, 2)
    f = model(X).detach().double().numpy().ravel()
    J = per_sample_jacobian(model, X).double().numpy()
    dense = np.asarray(GGN.binary(J, f, prior_precision=1.0).scores())
    streamed = NetworkGGN(model, X, likelihood="binary").scores()
    assert dense.min() > 0
    np.testing.assert_allclose(streamed, dense, rtol=1e-4)


def test_batch_norm_without_running_statistics_is_refused():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3, padding=1),
        torch.nn.BatchNorm2d(2, track_running_stats=False),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 1),
    ).eval()
    with pytest.raises(ValueError, match="batch-norm layer '1' has no running statistics"):
        per_sample_jacobian(model, torch.randn(6, 1, 4, 4))


class Tied(torch.nn.Module):
    """A weight shared by two Linear layers."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 1)
        self.c = torch.nn.Linear(3, 3, bias=False)
        self.c.weight = self.a.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.c(torch.tanh(self.a(x)))))


def test_tied_weights_take_the_torch_func_path_and_linear_refuses_them():
    torch.manual_seed(0)
    model = Tied().double()
    X = torch.randn(6, 3, dtype=torch.float64)
    ref = _autograd_jacobian(model, X)[:, 0]
    torch.testing.assert_close(per_sample_jacobian(model, X), ref, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="not shared with another module"):
        per_sample_jacobian(model, X, method="linear")


class HeadFirst(torch.nn.Module):
    """Registers its output layer before the layer it applies first."""

    def __init__(self) -> None:
        super().__init__()
        self.head, self.body = torch.nn.Linear(8, 1), torch.nn.Linear(2, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.body(x)))


def test_the_last_layer_is_the_last_one_called_not_the_last_registered():
    torch.manual_seed(0)
    model = HeadFirst().double().eval()
    X = torch.randn(10, 2, dtype=torch.float64)
    lla = LinearizedLaplace.fit(
        model, X, likelihood="regression", prior_precision=1.0, subset="last_layer"
    )
    head = parameter_layout(model).layer_indices(0)  # registered first
    np.testing.assert_array_equal(lla.subset, head)
    problem = SubnetProblem(NetworkGGN(model, X))
    for method in ("neural_linear", "last_k"):
        with pytest.raises(ValueError, match="called: 'body', 'head'"):
            select(method, problem, 3)


class RootOwned(torch.nn.Module):
    """A parameter on the root module, applied before its child head."""

    def __init__(self) -> None:
        super().__init__()
        self.w0 = torch.nn.Parameter(torch.randn(2, 4, dtype=torch.float64))
        self.head = torch.nn.Linear(4, 1).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(x @ self.w0))


class Reused(torch.nn.Module):
    """a, then b, then a again: the output layer is a."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(torch.tanh(self.b(torch.tanh(self.a(x))))).sum(1, keepdim=True)


class Unused(torch.nn.Module):
    """A registered layer the forward pass never calls (an auxiliary training head)."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head, self.aux = (torch.nn.Linear(2, 4), torch.nn.Linear(4, 1),
                                          torch.nn.Linear(4, 3))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.body(x)))


@pytest.mark.parametrize(
    ("model_class", "last", "accepted"),
    [(RootOwned, "head", True), (Reused, "a", False), (Unused, "head", False)],
)
def test_the_last_layer_of_root_owned_reused_and_unused_layers(model_class, last, accepted):
    torch.manual_seed(0)
    model = model_class().double().eval()
    X = torch.randn(6, 3 if model_class is Reused else 2, dtype=torch.float64)
    lla = LinearizedLaplace.fit(
        model, X, likelihood="regression", prior_precision=1.0, subset="last_layer"
    )
    layout = parameter_layout(model)
    want = np.concatenate(
        [np.arange(b.slice.start, b.slice.stop) for b in layout.blocks if b.module == last]
    )
    np.testing.assert_array_equal(np.sort(lla.subset), want)
    problem = SubnetProblem(NetworkGGN(model, X))
    if accepted:
        np.testing.assert_array_equal(np.sort(select("neural_linear", problem, 1)), want)
    else:
        with pytest.raises(ValueError, match="call each of its parameterised layers once"):
            select("neural_linear", problem, 1)


def test_finding_the_last_layer_leaves_batch_norm_statistics_alone():
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1)
    )
    before = model[1].running_mean.clone()
    with pytest.raises(ValueError, match="training mode"):
        LinearizedLaplace.fit(
            model, torch.randn(5, 2), likelihood="regression", prior_precision=1.0,
            subset="last_layer",
        )  # fmt: skip
    torch.testing.assert_close(model[1].running_mean, before, rtol=0, atol=0)


def test_kfac_pairs_each_layer_with_its_own_signals_whatever_the_registration_order():
    from laplace_lab.numerics.kfac import layer_signals

    torch.manual_seed(0)
    model = HeadFirst().double().eval()
    X = torch.randn(7, 2, dtype=torch.float64)
    _, sig = layer_signals(model, X.numpy())
    (a_head, _), (a_body, _) = sig  # registration order: head, then body
    assert a_head.shape == (7, 8 + 1) and a_body.shape == (7, 2 + 1)
    np.testing.assert_allclose(a_body[:, :2], X.numpy())


def test_integer_inputs_reach_an_embedding_model_unchanged():
    torch.manual_seed(0)

    class Embedded(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.e, self.out = torch.nn.Embedding(10, 3), torch.nn.Linear(3, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.e(x).mean(1))

    model = Embedded().double()
    X = torch.randint(0, 10, (6, 2))
    J = per_sample_jacobian(model, X).numpy()
    dense = GGN.regression(J, noise_var=1.0, prior_precision=1.0).scores()
    np.testing.assert_allclose(NetworkGGN(model, X).scores(), dense, rtol=1e-12)


def test_scalla_names_why_its_default_surrogate_does_not_fit():
    model = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1), torch.nn.Flatten(0)
    ).double()
    with pytest.raises(ValueError, match=r"reshapes what its last nn\.Linear returns"):
        ScaLLA.fit(
            model.eval(),
            torch.randn(20, 3, dtype=torch.float64),
            likelihood="binary",
            prior_precision=1.0,
            m=4,
            rng=0,
            steps=5,
            progress=False,
        )


def test_a_network_ggn_of_a_training_mode_batch_norm_model_is_refused_before_any_forward():
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 3)
    ).double()
    before = model[1].running_mean.clone()
    with pytest.raises(ValueError, match="batch-norm layer '1' is in training mode"):
        NetworkGGN(model, torch.randn(5, 2, dtype=torch.float64), likelihood="multiclass")
    torch.testing.assert_close(model[1].running_mean, before, rtol=0, atol=0)


def _rows_through_first_layer(model: torch.nn.Module) -> list[int]:
    seen: list[int] = []
    first = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    first.register_forward_hook(lambda m, inp, out: seen.append(inp[0].shape[0]))
    return seen


@pytest.mark.parametrize("kept", [True, False], ids=["signals-kept", "over-budget"])
def test_network_ggn_shares_one_pass_between_scores_and_grams(kept, monkeypatch):
    """A Linear-layer network's scores and Grams come from one forward/backward pass over X
    when its signals fit SIGNAL_CACHE_BYTES (a pass per call otherwise), with the values of
    the streaming functions either way."""
    from laplace_lab.numerics import network_ggn, streamed_ggn

    if not kept:
        monkeypatch.setattr(network_ggn, "SIGNAL_CACHE_BYTES", 1000)
    torch.manual_seed(3)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 20), torch.nn.ReLU(), torch.nn.Linear(20, 1)
    ).double()
    X = torch.randn(300, 4, dtype=torch.float64)
    seen = _rows_through_first_layer(model)
    net = NetworkGGN(model, X, noise_var=0.5, chunk_size=100)
    scores = net.scores()
    G1, G2 = net.subset_gram([3, 90, 7]), net.subset_gram([100, 0])
    passes = sum(n for n in seen if n > 2) / 300  # the one- and two-row checks aside
    assert passes == (1 if kept else 3)
    ref = streamed_ggn.gradient_scores(model, X, likelihood="regression", chunk_size=100)
    np.testing.assert_array_equal(scores, ref.numpy())
    for G, S in ((G1, [3, 90, 7]), (G2, [100, 0])):
        np.testing.assert_array_equal(
            G, streamed_ggn.subset_gram(model, X, S, chunk_size=100) / 0.5
        )


def test_network_ggn_streams_torch_func_chunks():
    """A model outside the outer-product path (a convolution) keeps nothing (every call is
    its own torch.func pass), with the streaming functions' values."""
    from laplace_lab.numerics import streamed_ggn

    torch.manual_seed(4)
    model = torch.nn.Sequential(
        torch.nn.Conv1d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 1)
    ).double()
    X = torch.randn(30, 1, 6, dtype=torch.float64)
    net = NetworkGGN(model, X)
    net.scores()
    G = net.subset_gram([0, 5, 16])
    assert net._signals is None and net._stream_only
    np.testing.assert_allclose(G, streamed_ggn.subset_gram(model, X, [0, 5, 16]), rtol=1e-12)
