"""Stand-alone reproducers: a scoreboard finding as a script that needs only the library.

The scoreboard writes one reproducer per FAIL and ERROR of a library
(``reproducers/<library>/<case>.py``). Each imports the library under test, NumPy and torch
(JAX for laplax) and nothing of laplace-lab, and carries inline

- the network as plain ``torch.nn`` (or ``jax.numpy``) code of the case's architecture, its
  MAP weights and the data as float64 literals with every digit (``repr``; the float32 cases'
  values are float32 numbers, cast back on use);
- the call's keyword values (likelihood, prior precision, noise variance, subset, link,
  rank, seeds, ...) under the adapter's keyword names, and the test inputs ``X_test[rows]``;
- the library's calls that laplace-lab's adapter makes on that case (its public API, the
  branches for other likelihoods and structures removed);
- the oracle's numbers and tolerance as the scoreboard run computed them (the dense float64
  oracle at the worst entry, the exact optimum of the evidence, or the precision matrix that
  whitens posterior draws), then an assertion that fails (exit code 1) while the finding
  stands and passes once it is fixed. An ERROR makes the same call: the library raises the
  same exception, or the script's shape assertion shows the malformed answer.

:data:`TEMPLATES` maps (library, capability) to the emitter of the call; a FAIL or ERROR
with no template makes :func:`standalone_reproducer` raise, naming library and case, so no
finding gets a reproducer that needs laplace-lab. Reproducers of ``MODULE:CALLABLE``
targets (``validate --target``) are the runner's (:func:`~.runner.reproducer`).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab.conformance.adapters._jax_network import Network
from laplace_lab.conformance.adapters._parameters import last_layer_indices
from laplace_lab.conformance.libraries import Library
from laplace_lab.conformance.problems import Problem, build_problem
from laplace_lab.conformance.registry import CaseResult, Outcome

__all__ = ["INSTALL", "TEMPLATES", "Call", "parse_call", "standalone_reproducer"]

#: How to install each library for its reproducers alone (no laplace-lab).
INSTALL = {
    "laplace-torch": (
        "pip install torch numpy torchmetrics opt-einsum 'einops<1' 'unfoldNd<1' einconv "
        "linear_operator && pip install --no-deps laplace-torch==0.3 "
        "backpack-for-pytorch==1.7.1 curvlinops-for-pytorch==3.0.1 asdfghjkl==0.1a4"
    ),
    "laplax": "pip install numpy laplax==0.0.2 jax==0.10.2 jaxlib==0.10.2",
    "curvlinops": "pip install torch numpy einops && pip install curvlinops-for-pytorch==3.0.1",
    "posteriors": "pip install torch numpy posteriors==0.1.3",
}
#: The longest line of a reproducer before it declares its long lines to the linter.
LINE_LENGTH = 99
#: The comment that starts the comparison with the oracle (what precedes it computes ``got``).
ORACLE_MARKER = "# The oracle"
#: What the case calls each answer, as in its shape check (catalog).
ANSWER_NAMES = {
    "predictive_variance": "the predictive variance",
    "diagonal_predictive_variance": "the diagonal-Laplace variance",
    "low_rank_predictive_variance": "the low-rank predictive variance",
    "last_layer_predictive_variance": "the last-layer {structure} variance",
    "ef_predictive_variance": "the empirical-Fisher {structure} variance",
    "predictive_probabilities": "the {link} class probabilities",
    "log_marginal_likelihood": "the log marginal likelihood",
    "low_rank_log_marginal_likelihood": "the low-rank log marginal likelihood",
    "minibatch_predictive_variance": "the predictive variance from a minibatch",
    "structured_posterior_samples": "the posterior samples",
    "hessian_predictive_variance": "the true-Hessian variance",
}


@dataclass(frozen=True)
class Call:
    """A capability's call on a case, as the runner's reproducer writes it.

    ``rows`` selects the test inputs (None: the capability takes none); ``extra`` holds the
    keywords after the problem's (a subset resolved to its indices).
    """

    capability: str
    rows: slice | None
    extra: dict[str, Any]


def parse_call(code: str, problem: Problem) -> Call:
    """The target call in a runner reproducer's body (``target.CAPABILITY(...)``)."""
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "target":
            capability = "predictive_variance"
        elif isinstance(func, ast.Attribute) and ast.unparse(func.value) == "target":
            capability = func.attr
        else:
            continue
        rows = None
        if len(node.args) > 3:
            arg = node.args[3]
            rows = slice(None)
            if isinstance(arg, ast.Subscript):
                sl = arg.slice
                rows = slice(ast.literal_eval(sl.lower), ast.literal_eval(sl.upper))
        extra = {}
        for kw in node.keywords:
            if kw.arg is None:
                continue
            text = ast.unparse(kw.value)
            extra[kw.arg] = problem.subset if text == "problem.subset" else ast.literal_eval(text)
        return Call(capability, rows, extra)
    raise ValueError(f"no target call in the reproducer:\n{code}")


# ------------------------------------------------------------------------------ literals
def _numbers(values: Any, integers: bool = False) -> list[str]:
    flat = np.asarray(values).reshape(-1)
    return [str(int(v)) if integers else repr(float(v)) for v in flat]


def _array(name: str, values: Any, make: str, *, integers: bool = False, dtype: str = "") -> list:
    """``name = make([...], dtype).reshape(shape)`` wrapped at 95 characters."""
    arr = np.asarray(values)
    items = _numbers(arr, integers)
    tail = (f", dtype={dtype}" if dtype else "") + ")"
    if arr.ndim > 1:
        tail += f".reshape{tuple(int(n) for n in arr.shape)}"
    one = f"{name} = {make}([{', '.join(items)}]{tail}"
    if len(one) <= LINE_LENGTH:
        return [one]
    body = textwrap.wrap(", ".join(items), 91, break_on_hyphens=False)
    return [f"{name} = {make}([", *("    " + line for line in body), f"]{tail}"]


def _value(name: str, value: Any, comment: str = "") -> list[str]:
    note = f"  # {comment}" if comment else ""
    if isinstance(value, np.ndarray):
        integers = np.issubdtype(value.dtype, np.integer)
        lines = _array(name, value, "np.array", integers=integers)
        return [*lines[:-1], lines[-1] + note]
    return [f"{name} = {value!r}{note}"]


# -------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class Spec:
    """What an emitter needs: the library, the case's result, its problem and the call."""

    library: Library
    result: CaseResult
    problem: Problem
    call: Call
    seed: int

    @property
    def likelihood(self) -> str:
        return self.problem.likelihood

    @property
    def float64(self) -> bool:
        import torch

        return self.problem.dtype == torch.float64

    def rows_text(self) -> str:
        rows = self.call.rows
        return "X_test" if rows == slice(None) else "X_test[rows]"


def _keyword_block(spec: Spec) -> list[str]:
    """The call's keyword values, under the adapter's names."""
    p = spec.problem
    prior = p.prior_precision
    lines = ["# The call's keyword values (the names of laplace-lab's contract)."]
    lines += _value("likelihood", p.likelihood)
    lines += _value("prior_precision", prior if isinstance(prior, float) else np.asarray(prior))
    noise = np.asarray(p.noise_var, dtype=np.float64)
    lines += _value("noise_var", noise if noise.ndim else float(noise))
    if p.prior_mean is not None:
        lines += _value("prior_mean", np.asarray(p.prior_mean), "μ0: the prior is N(μ0, V⁻¹)")
    for key, value in spec.call.extra.items():
        lines += _value(key, np.asarray(value) if isinstance(value, np.ndarray) else value)
    rows = spec.call.rows
    if rows is not None and rows != slice(None):
        lines.append(
            f"rows = slice({rows.start}, {rows.stop})  # the test input of the worst entry"
        )
    return lines


def _data_block(spec: Spec, make: str, dtype: str) -> list[str]:
    """The MAP weights and the data as literals (``make`` builds an array)."""
    import torch

    p = spec.problem
    theta = torch.nn.utils.parameters_to_vector(p.model.parameters()).detach().numpy()
    multiclass = p.likelihood == "multiclass"
    int_dtype = "torch.int64" if make == "torch.tensor" else "jnp.int64"
    if make != "torch.tensor" and not spec.float64:
        int_dtype = "jnp.int32"  # JAX without x64
    lines = ["# The network's MAP weights (parameters() order) and the data."]
    lines += _array("theta_map", theta, make, dtype=dtype)
    lines += _array("X_train", p.X_train.numpy(), make, dtype=dtype)
    y = p.y_train.numpy()
    lines += _array(
        "y_train", y, make, integers=multiclass, dtype=int_dtype if multiclass else dtype
    )
    if spec.call.rows is not None:
        lines += _array("X_test", p.X_test.numpy(), make, dtype=dtype)
    return lines


def _layers(spec: Spec) -> tuple[tuple[Any, ...], ...]:
    return Network.of(spec.problem.model).layers


# ----------------------------------------------------------------------- laplace-torch
def _torch_network(spec: Spec) -> list[str]:
    parts = []
    for layer in _layers(spec):
        if layer[0] == "linear":
            _, _, out, inp, b0 = layer
            parts.append(f"torch.nn.Linear({inp}, {out}{', bias=False' if b0 < 0 else ''})")
        elif layer[0] == "reshape":  # Flatten() or Unflatten(1, shape) of one input
            shape = layer[1]
            flat = shape == (-1,)
            parts.append("torch.nn.Flatten()" if flat else f"torch.nn.Unflatten(1, {shape})")
        elif layer[0] == "conv":
            _, _, (out, inp, kh, kw), b0, stride, padding = layer
            bias = ", bias=False" if b0 < 0 else ""
            parts.append(
                f"torch.nn.Conv2d({inp}, {out}, ({kh}, {kw}), stride={stride}, "
                f"padding={padding}{bias})"
            )
        else:
            parts.append(f"torch.nn.{layer[0]}()")
    dtype = "torch.float64" if spec.float64 else "torch.float32"
    net = parts[0] if len(parts) == 1 else f"torch.nn.Sequential({', '.join(parts)})"
    lines = ["# The network at its MAP.", f"model = {net}.to({dtype})"]
    if len(lines[-1]) > LINE_LENGTH:
        lines[-1:] = ["model = torch.nn.Sequential(", f"    {', '.join(parts)}", f").to({dtype})"]
    lines += [
        "torch.nn.utils.vector_to_parameters(theta_map, model.parameters())",
        "model.eval()",
    ]
    if spec.likelihood == "binary":
        lines += [
            "",
            "",
            "class TwoLogits(torch.nn.Module):",
            '    """[0, f]: laplace-torch has no one-logit Bernoulli likelihood; this softmax',
            '    model has the Bernoulli GGN, and f\'s variance is that of its second logit."""',
            "",
            "    def __init__(self, inner):",
            "        super().__init__()",
            "        self.inner = inner",
            "",
            "    def forward(self, x):",
            "        f = self.inner(x).reshape(x.shape[0], 1)",
            "        return torch.cat([torch.zeros_like(f), f], dim=1)",
            "",
            "",
            "net = TwoLogits(model).eval()",
        ]
    else:
        lines.append("net = model")
    return lines


def _torch_fit(spec: Spec, *, structure: str, subset: bool = False, **options: str) -> list:
    """``la = Laplace(...)`` and ``la.fit`` as the adapter's ``_fit``."""
    lik = "regression" if spec.likelihood == "regression" else "classification"
    target = {
        "regression": "y_train.reshape(-1, 1)",
        "binary": "y_train.long()",
        "multiclass": "y_train",
    }[spec.likelihood]
    vector = not isinstance(spec.problem.prior_precision, float)
    prior = "prior_precision"
    if vector:
        index = "[subset]" if subset else ""
        prior = f"torch.as_tensor(prior_precision{index}, dtype=X_train.dtype)"
    args = [f"net, {lik!r}"]
    if options.pop("last_layer", None):
        args.append("subset_of_weights='last_layer'")
    elif subset:
        args += ["subset_of_weights='subnetwork'", "subnetwork_indices=torch.as_tensor(subset)"]
    else:
        args.append("subset_of_weights='all'")
    args += [f"hessian_structure={structure}", f"prior_precision={prior}"]
    if spec.likelihood == "regression":
        args.append("sigma_noise=math.sqrt(noise_var)")
    if spec.problem.prior_mean is not None:  # as the adapter's _prior_mean: on the subset
        index = "[subset]" if subset else ""
        args.append(f"prior_mean=torch.as_tensor(prior_mean{index}, dtype=X_train.dtype)")
    args += [f"{k}={v}" for k, v in options.items()]
    return [
        "la = Laplace(",
        *(f"    {a}," for a in args),
        ")",
        f"la.fit(DataLoader(TensorDataset(X_train, {target}), batch_size=len(X_train)))",
    ]


def _torch_variances(spec: Spec, jacobians: str = "jacobians") -> list[str]:
    x = spec.rows_text()
    if spec.likelihood == "regression":
        return [
            f"_, f_var = la({x}, pred_type='glm')",
            "got = f_var.reshape(-1).detach().double().numpy()",
        ]
    pick = "[:, 1]  # the variance of f" if spec.likelihood == "binary" else ""
    return [
        f"Js, _ = la.backend.{jacobians}({x})",
        "var = la.functional_variance(Js).diagonal(dim1=1, dim2=2)",
        f"got = var.detach().double().numpy(){pick}",
    ]


def _lt_predictive(spec: Spec) -> list[str]:
    subset = spec.call.extra.get("subset") is not None
    return [*_torch_fit(spec, structure="'full'", subset=subset), *_torch_variances(spec)]


def _lt_diagonal(spec: Spec) -> list[str]:
    subset = spec.call.extra.get("subset") is not None
    return [*_torch_fit(spec, structure="'diag'", subset=subset), *_torch_variances(spec)]


def _lt_low_rank(spec: Spec) -> list[str]:
    fit = _torch_fit(spec, structure="'lowrank'", backend_kwargs="{'low_rank': rank}")
    return [*fit, *_torch_variances(spec)]


def _lt_last_layer(spec: Spec) -> list[str]:
    lines = []
    if not isinstance(spec.problem.prior_precision, float):
        S = last_layer_indices(spec.problem.model)
        lines += _value("last_layer", S, "the last Linear layer's [W, b] in theta_map")
        lines.append("prior_precision = prior_precision[last_layer]")
    fit = _torch_fit(spec, structure="structure", last_layer="1")
    return [*lines, *fit, *_torch_variances(spec, "last_layer_jacobians")]


def _lt_empirical_fisher(spec: Spec) -> list[str]:
    fit = _torch_fit(spec, structure="structure", backend="CurvlinopsEF")
    return [*fit, *_torch_variances(spec)]


def _lt_hessian(spec: Spec) -> list[str]:
    fit = _torch_fit(spec, structure="'full'", backend="CurvlinopsHessian")
    return [*fit, *_torch_variances(spec)]


def _lt_evidence(spec: Spec) -> list[str]:
    return [*_torch_fit(spec, structure="'full'"), "got = float(la.log_marginal_likelihood())"]


def _lt_low_rank_evidence(spec: Spec) -> list[str]:
    fit = _torch_fit(spec, structure="'lowrank'", backend_kwargs="{'low_rank': rank}")
    return [*fit, "got = float(la.log_marginal_likelihood())"]


def _lt_samples(spec: Spec) -> list[str]:
    structure = {"diag": "diag", "kron": "kron", "low_rank": "lowrank"}[
        spec.call.extra["structure"]
    ]
    options = {"backend_kwargs": "{'low_rank': rank}"} if structure == "lowrank" else {}
    return [
        *_torch_fit(spec, structure=repr(structure), **options),
        "generator = torch.Generator().manual_seed(seed)",
        "got = la.sample(n_samples, generator=generator).detach().double().numpy()",
    ]


def _lt_probabilities(spec: Spec) -> list[str]:
    diagonal = spec.likelihood == "binary" and spec.call.extra["link"] == "mc"
    pick = "[:, 1]  # P(y = 1)" if spec.likelihood == "binary" else ""
    return [
        *_torch_fit(spec, structure="'full'"),
        "with torch.random.fork_rng(), torch.no_grad():  # 'mc' draws from torch's generator",
        "    torch.manual_seed(seed)",
        "    p = la(",
        f"        {spec.rows_text()}, pred_type='glm', link_approx=link, n_samples=n_samples,",
        f"        diagonal_output={diagonal},",
        "    )",
        f"got = p.detach().double().numpy(){pick}",
    ]


def _lt_optimize_prior(spec: Spec) -> list[str]:
    fit = _torch_fit(spec, structure="'full'")
    if not spec.call.extra["optimize_noise"]:
        return [
            *fit,
            "la.optimize_prior_precision(  # its defaults: 100 Adam steps, learning rate 0.1",
            "    pred_type='glm', method='marglik', n_steps=100, lr=0.1,",
            "    init_prior_prec=prior_precision, prior_structure='scalar',",
            ")",
            "got = (float(la.prior_precision.reshape(-1)[0]), noise_var)",
        ]
    return [
        *fit,
        "# laplace-torch's recipe for both: Adam on (log α, log σ) of -log p(y | X)",
        "log_prior = torch.tensor([math.log(prior_precision)], dtype=X_train.dtype, "
        "requires_grad=True)",
        "log_sigma = torch.tensor([0.5 * math.log(noise_var)], dtype=X_train.dtype, "
        "requires_grad=True)",
        "optimizer = torch.optim.Adam([log_prior, log_sigma], lr=0.1)",
        "for _ in range(100):",
        "    optimizer.zero_grad()",
        "    neg_marglik = -la.log_marginal_likelihood(log_prior.exp(), log_sigma.exp())",
        "    neg_marglik.backward()",
        "    optimizer.step()",
        "got = (float(log_prior.detach().exp()), float(log_sigma.detach().exp() ** 2))",
    ]


def _torch_imports(body: list[str]) -> list[str]:
    text = "\n".join(body)
    lines = ["import math"] if "math." in text else []
    lines += ["", "import numpy as np", "import torch"]
    if "CurvlinopsEF" in text:
        lines.append("from laplace import Laplace")
        lines.append("from laplace.curvature import CurvlinopsEF")
    elif "CurvlinopsHessian" in text:
        lines.append("from laplace import Laplace")
        lines.append("from laplace.curvature import CurvlinopsHessian")
    else:
        lines.append("from laplace import Laplace")
    lines.append("from torch.utils.data import DataLoader, TensorDataset")
    return lines if lines[0] else lines[1:]


def _torch_script(spec: Spec, emit: Callable[[Spec], list[str]]) -> tuple[list, list]:
    dtype = "torch.float64" if spec.float64 else "torch.float32"
    body = [
        *_keyword_block(spec),
        "",
        *_data_block(spec, "torch.tensor", dtype),
        "",
        *_torch_network(spec),
        "",
        "# The library's calls (those of laplace-lab's adapter on this case).",
        *emit(spec),
    ]
    return _torch_imports(body), body


# ------------------------------------------------------------------------------- laplax
#: laplax's loss for each likelihood (as the adapter passes it).
LAPLAX_LOSSES = {
    "regression": "mse",
    "binary": "binary_cross_entropy",
    "multiclass": "cross_entropy",
}


def _jax_network(spec: Spec, name: str = "model_fn", two_logits: bool = False) -> list[str]:
    lines = [f"def {name}(input, params):"]
    doc = "The network at the flat parameters (torch's parameters() order), one input."
    if two_logits:
        doc = "[0, f] of the one-logit network f: softmax([0, f]) = [1 - σ(f), σ(f)]."
    lines.append(f'    """{doc}"""')
    x = "input"
    for layer in _layers(spec):
        if layer[0] == "linear":
            _, w0, out, inp, b0 = layer
            expr = f"params[{w0}:{w0 + out * inp}].reshape({out}, {inp}) @ {x}"
            if b0 >= 0:
                expr += f" + params[{b0}:{b0 + out}]"
        else:
            fn = {"Tanh": "jnp.tanh", "ReLU": "jax.nn.relu", "Sigmoid": "jax.nn.sigmoid"}
            expr = f"{fn[layer[0]]}(x)"
        lines.append(f"    x = {expr}")
        x = "x"
    if two_logits:
        lines.append("    return jnp.concatenate([jnp.zeros_like(x), x])")
    else:
        lines.append("    return x")
    return lines


def _laplax_arguments(spec: Spec) -> list[str]:
    """laplax's data and ``prior_arguments`` as the adapter passes them."""
    p = spec.problem
    V = np.asarray(p.prior_precision, dtype=np.float64)
    prior = "prior_precision[0]" if V.ndim and np.ptp(V) == 0.0 else "prior_precision"
    sigma2 = "0.5 / noise_var" if p.likelihood == "regression" else "1.0"
    target = "y_train" if p.likelihood == "multiclass" else "y_train[:, None]"
    lines = [
        f"data = {{'input': X_train, 'target': {target}}}",
        "prior_arguments = {",
        f"    'prior_prec': jnp.asarray({prior}, dtype=theta_map.dtype),",
        f"    'sigma_squared': jnp.asarray({sigma2}),  # laplax multiplies the GGN by it",
    ]
    evidence = ("log_marginal_likelihood", "low_rank_log_marginal_likelihood")
    if spec.call.capability in evidence and p.likelihood == "regression":
        lines.append("    'sigma': jnp.asarray(noise_var),  # the Gaussian's σ0² in the evidence")
    return [*lines, "}"]


def _laplax_posterior(
    spec: Spec, curv_type: str, posterior: bool = True, factor: str = "", **curv: str
) -> list:
    """``laplax.laplace``'s steps inside the program (indented); the curvature only when
    not ``posterior``; ``factor`` the GGN's factor where it is not 1."""
    loss = LAPLAX_LOSSES[spec.likelihood]
    extra = "".join(f", {k}={v}" for k, v in curv.items())
    scaled = f", factor={factor}" if factor else ""
    return [
        f"    mv = GGN(model_fn, theta_map, data, loss_fn={loss!r}{scaled})",
        f"    curvature = CURVATURE_METHODS[{curv_type!r}](",
        f"        mv, layout=theta_map{extra}",
        "    )",
        *(
            [f"    posterior_fn = set_posterior_fn({curv_type!r}, curvature, layout=theta_map)"]
            if posterior
            else []
        ),
    ]


def _laplax_push(fns: str, out: str, model: str = "model_fn", **kw: str) -> list:
    extra = ", ".join(f"{k}={v}" for k, v in kw.items())
    return [
        "    predictive = set_lin_pushforward(",
        f"        model_fn={model}, mean_params=theta_map, posterior_fn=posterior_fn,",
        "        prior_arguments=prior_arguments, loss_scaling_factor=1.0,",
        f"        pushforward_fns=[{fns}],",
        *([f"        {extra},"] if extra else []),
        "    )",
        f"    return jax.vmap(predictive)(X_test)[{out!r}]",
    ]


def _laplax_program(spec: Spec, what: str, inner: list[str], last: str = "") -> list[str]:
    """``program`` (laplace-lab's adapter compiles one per case) and its call; ``last`` is
    its fourth argument ("X_test", "key" or none)."""
    pick = ""
    if spec.likelihood == "binary" and spec.call.capability == "predictive_probabilities":
        pick = "[:, 1]  # P(y = 1)"
    value = {"X_test": ", " + spec.rows_text(), "key": ", jax.random.key(seed)", "": ""}[last]
    return [
        f"def program(theta_map, data, prior_arguments{', ' + last if last else ''}):",
        f'    """laplax.laplace\'s steps and {what}."""',
        *inner,
        "",
        "",
        "# jax.jit as in laplace-lab's adapter (laplax.laplace waits for its curvature, which",
        "# jax.jit cannot trace); the XLA options only make compilation faster.",
        "options = {",
        "    'xla_backend_optimization_level': 0, 'xla_llvm_disable_expensive_passes': True",
        "}",
        "compiled = jax.jit(program, compiler_options=options)",
        f"got = np.asarray(compiled(theta_map, data, prior_arguments{value}))" + pick,
    ]


def _lx_low_rank(spec: Spec) -> list[str]:
    inner = [
        *_laplax_posterior(spec, "lobpcg", rank="rank", key="jax.random.key(0)"),
        *_laplax_push("lin_setup, lin_pred_mean, lin_pred_var", "pred_var"),
    ]
    return _laplax_program(spec, "the variances at each test input", inner, "X_test")


def _lx_minibatch(spec: Spec) -> list[str]:
    inner = [
        "    # laplax.laplace(..., num_curv_samples=n, num_total_samples=N) takes the GGN's",
        "    # factor num_curv_samples / num_total_samples: here n = len(X_train), N = n_data",
        *_laplax_posterior(spec, "full", factor="len(X_train) / n_data"),
        *_laplax_push("lin_setup, lin_pred_mean, lin_pred_var", "pred_var"),
    ]
    return _laplax_program(spec, "the variances at each test input", inner, "X_test")


def _lx_hessian(spec: Spec) -> list[str]:
    ggn = _laplax_posterior(spec, "full")
    loss = LAPLAX_LOSSES[spec.likelihood]
    inner = [
        f"    mv = create_hessian_mv(model_fn, theta_map, data, loss_fn={loss!r})",
        *ggn[1:],
        *_laplax_push("lin_setup, lin_pred_mean, lin_pred_var", "pred_var"),
    ]
    return _laplax_program(spec, "the variances at each test input", inner, "X_test")


def _lx_probabilities(spec: Spec) -> list[str]:
    link = spec.call.extra["link"]
    model = "two_logits_fn" if spec.likelihood == "binary" else "model_fn"
    if link == "mc":
        fns, out = "lin_setup, lin_pred_mean, lin_samples, lin_mc_pred_act", "mc_pred_act"
        kw = {"num_samples": "n_samples", "key": "jax.random.key(seed)"}
    else:
        fns = "lin_setup, lin_pred_mean, lin_pred_var, lin_special_pred_act"
        out = "special_pred_act"
        kind = {"probit": "mean_field_0", "bridge": "laplace_bridge"}[link]
        kw = {"special_pred_type": repr(kind), "use_correction": "False"}
    inner = [*_laplax_posterior(spec, "full"), *_laplax_push(fns, out, model, **kw)]
    return _laplax_program(spec, "the class probabilities", inner, "X_test")


def _lx_evidence(spec: Spec) -> list[str]:
    loss = LAPLAX_LOSSES[spec.likelihood]
    low_rank = spec.call.capability == "low_rank_log_marginal_likelihood"
    curv = {"rank": "rank", "key": "jax.random.key(0)"} if low_rank else {}
    inner = [
        *_laplax_posterior(spec, "lobpcg" if low_rank else "full", posterior=False, **curv),
        "    return marginal_log_likelihood(",
        f"        curvature, prior_arguments, data, model_fn, theta_map, {loss!r},",
        f"        CurvApprox.{'LOBPCG' if low_rank else 'FULL'}, vmap_over_data=True,",
        "    )",
    ]
    lines = _laplax_program(spec, "its evidence", inner)
    if spec.likelihood == "regression":
        lines += [
            "# laplax's log-likelihood lacks the Gaussian's constant, which depends on σ0² only",
            "got = got - 0.5 * len(X_train) * math.log(2 * math.pi * noise_var)",
        ]
    return lines


def _lx_samples(spec: Spec) -> list[str]:
    curv = {"diag": "diagonal", "low_rank": "lobpcg"}[spec.call.extra["structure"]]
    kw = {"rank": "rank", "key": "jax.random.key(0)"} if curv == "lobpcg" else {}
    inner = [
        *_laplax_posterior(spec, curv, **kw),
        "    posterior = posterior_fn(prior_arguments, 1.0)",
        "    draw = set_get_weight_sample(",
        "        key, mean_params=theta_map,",
        "        scale_mv=posterior.scale_mv(posterior.state), num_samples=n_samples,",
        "    )",
        "    return jax.lax.map(draw, jnp.arange(n_samples))",
    ]
    return _laplax_program(spec, "its weight samples", inner, "key")


def _laplax_imports(body: list[str]) -> list[str]:
    text = "\n".join(body)
    lines = ["import math", ""] if "math." in text else []
    lines += ["import jax", "import jax.numpy as jnp", "import numpy as np"]
    if "GGN(" in text:
        lines.append("from laplax.api import GGN")
    if "set_posterior_fn" in text:
        lines.append("from laplax.curv import set_posterior_fn")
    lines.append("from laplax.curv.cov import CURVATURE_METHODS")
    if "create_hessian_mv" in text:
        lines.append("from laplax.curv.hessian import create_hessian_mv")
    if "CurvApprox" in text:
        lines.append("from laplax.enums import CurvApprox")
    if "marginal_log_likelihood" in text:
        lines.append("from laplax.eval.likelihood import marginal_log_likelihood")
    names = [
        n
        for n in (
            "lin_mc_pred_act",
            "lin_pred_mean",
            "lin_pred_var",
            "lin_samples",
            "lin_setup",
            "lin_special_pred_act",
            "set_get_weight_sample",
            "set_lin_pushforward",
        )
        if n in text
    ]
    if names:
        lines.append("from laplax.eval.pushforward import (")
        lines += [f"    {n}," for n in names]
        lines.append(")")
    return lines


def _laplax_script(spec: Spec, emit: Callable[[Spec], list[str]]) -> tuple[list, list]:
    x64 = "True" if spec.float64 else "False"
    dtype = "jnp.float64" if spec.float64 else "jnp.float32"
    network = _jax_network(spec)
    if spec.likelihood == "binary" and spec.call.capability == "predictive_probabilities":
        network += ["", "", *_jax_network(spec, "two_logits_fn", two_logits=True)]
    body = [
        "jax.config.update('jax_platforms', 'cpu')",
        f"jax.config.update('jax_enable_x64', {x64})  # JAX computes in float32 without it",
        "",
        *_keyword_block(spec),
        "",
        *_data_block(spec, "jnp.array", dtype),
        "",
        "",
        *network,
        "",
        "",
        "# The library's calls (those of laplace-lab's adapter on this case).",
        *_laplax_arguments(spec),
        "",
        "",
        *emit(spec),
    ]
    return _laplax_imports(body), body


#: (library, capability) → (the script's frame, the emitter of the library's calls).
TEMPLATES: dict[tuple[str, str], tuple[Callable, Callable[[Spec], list[str]]]] = {
    ("laplace-torch", "predictive_variance"): (_torch_script, _lt_predictive),
    ("laplace-torch", "diagonal_predictive_variance"): (_torch_script, _lt_diagonal),
    ("laplace-torch", "low_rank_predictive_variance"): (_torch_script, _lt_low_rank),
    ("laplace-torch", "last_layer_predictive_variance"): (_torch_script, _lt_last_layer),
    ("laplace-torch", "ef_predictive_variance"): (_torch_script, _lt_empirical_fisher),
    ("laplace-torch", "log_marginal_likelihood"): (_torch_script, _lt_evidence),
    ("laplace-torch", "low_rank_log_marginal_likelihood"): (_torch_script, _lt_low_rank_evidence),
    ("laplace-torch", "structured_posterior_samples"): (_torch_script, _lt_samples),
    ("laplace-torch", "predictive_probabilities"): (_torch_script, _lt_probabilities),
    ("laplace-torch", "optimize_prior"): (_torch_script, _lt_optimize_prior),
    ("laplax", "low_rank_predictive_variance"): (_laplax_script, _lx_low_rank),
    ("laplax", "log_marginal_likelihood"): (_laplax_script, _lx_evidence),
    ("laplax", "low_rank_log_marginal_likelihood"): (_laplax_script, _lx_evidence),
    ("laplax", "minibatch_predictive_variance"): (_laplax_script, _lx_minibatch),
    ("laplax", "structured_posterior_samples"): (_laplax_script, _lx_samples),
    ("laplax", "predictive_probabilities"): (_laplax_script, _lx_probabilities),
    ("laplace-torch", "hessian_predictive_variance"): (_torch_script, _lt_hessian),
    ("laplax", "hessian_predictive_variance"): (_laplax_script, _lx_hessian),
}


# ------------------------------------------------------------------ many outputs: memory
def _cl_many_outputs(spec: Spec) -> list[str]:
    """curvlinops as its adapter calls it: Ω = GGNLinearOperator @ I + V, g by
    JacobianLinearOperator @ I, the variances by Cholesky (multiclass)."""
    return [
        "params = [t for t in model.parameters() if t.requires_grad]",
        "eye = torch.eye(sum(t.numel() for t in params), dtype=X_train.dtype)",
        "loss = torch.nn.CrossEntropyLoss(reduction='sum')",
        "data = [(X_train, y_train)]",
        "ggn = GGNLinearOperator(model, loss, params, data, check_deterministic=False)",
        "omega = ggn @ eye + torch.diag(torch.as_tensor(prior_precision, dtype=X_train.dtype))",
        "dummy = [(X_test, X_test.new_zeros(X_test.shape[0]))]",
        "jac = JacobianLinearOperator(model, params, dummy, check_deterministic=False)",
        "G = jac @ eye",
        "L = torch.linalg.cholesky(0.5 * (omega + omega.T))",
        "W = torch.linalg.solve_triangular(L, G.T, upper=False)",
        "got = (W * W).sum(0).reshape(X_test.shape[0], -1).detach().double().numpy()",
    ]


def _po_many_outputs(spec: Spec) -> list[str]:
    """posteriors as its adapter calls it: ``laplace.dense_ggn`` with the prior as its initial
    precision, one update on the data, g by ``torch.func.jacrev`` (multiclass)."""
    return [
        "names = [(n, t.shape, t.numel()) for n, t in model.named_parameters()]",
        "",
        "",
        "def forward(theta, batch):",
        "    pieces = theta.split([k for _, _, k in names])",
        "    tensors = {n: t.view(s) for (n, s, _), t in zip(names, pieces, strict=True)}",
        "    return torch.func.functional_call(model, tensors, (batch[0],)), torch.tensor([])",
        "",
        "",
        "def log_likelihood(z, batch):",
        "    return torch.distributions.Categorical(logits=z).log_prob(batch[1]).sum()",
        "",
        "",
        "torch.set_default_dtype(X_train.dtype)",
        "init = torch.diag(torch.as_tensor(prior_precision, dtype=X_train.dtype))",
        "transform = posteriors.laplace.dense_ggn.build(forward, log_likelihood, init_prec=init)",
        "state = transform.init(theta_map.clone())",
        "state, _ = transform.update(state, (X_train, y_train))",
        "J = torch.func.jacrev(lambda t: forward(t, (X_test,))[0])(state.params)",
        "G = J.reshape(-1, J.shape[-1])",
        "omega = state.prec.to(G.dtype)",
        "L = torch.linalg.cholesky(0.5 * (omega + omega.T))",
        "W = torch.linalg.solve_triangular(L, G.T, upper=False)",
        "got = (W * W).sum(0).reshape(X_test.shape[0], -1).detach().double().numpy()",
    ]


#: The library calls of the many-outputs case (its memory is the finding), by library.
MANY_OUTPUTS = {
    "laplace-torch": _lt_predictive,
    "curvlinops": _cl_many_outputs,
    "posteriors": _po_many_outputs,
}
#: The imports each library's many-outputs calls need, after NumPy and torch.
_MANY_OUTPUTS_IMPORTS = {
    "laplace-torch": [
        "from laplace import Laplace",
        "from torch.utils.data import DataLoader, TensorDataset",
    ],
    "curvlinops": ["from curvlinops import GGNLinearOperator, JacobianLinearOperator"],
    "posteriors": [],
}


def _memory_script(spec: Spec) -> tuple[list, list]:
    """The network, data and calls of the many-outputs case between two readings of the peak
    resident memory, with a guard that ends the script past the case's cap."""
    from laplace_lab.conformance.catalog.many_outputs import CAP_BYTES

    gib = CAP_BYTES >> 30
    body = [
        *_keyword_block(spec),
        "",
        *_data_block(spec, "torch.tensor", "torch.float64"),
        "",
        *_torch_network(spec),
        "",
        "",
        "def peak():",
        '    """This process\'s peak resident memory in bytes (VmHWM, Linux)."""',
        '    status = open("/proc/self/status").read()',
        '    return int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) * 1024',
        "",
        "",
        "def guard():",
        f'    """End the script once the call has added {gib} GiB (the case\'s cap)."""',
        "    while True:",
        f"        if peak() - before > {CAP_BYTES}:",
        f'            print("FAIL: the call added more than {gib} GiB; stopped there")',
        "            os._exit(1)",
        "        time.sleep(0.02)",
        "",
        "",
        "# The library's calls (those of laplace-lab's adapter on this case), the peak memory",
        "# they add measured from here.",
        "before = peak()",
        "threading.Thread(target=guard, daemon=True).start()",
        *MANY_OUTPUTS[spec.library.name](spec),
        "added = peak() - before",
    ]
    imports = [
        *(["import math"] if "math." in "\n".join(body) else []),
        "import os",
        "import re",
        "import threading",
        "import time",
        "",
        "import numpy as np",
        *(["import posteriors"] if spec.library.name == "posteriors" else []),
        "import torch",
        *_MANY_OUTPUTS_IMPORTS[spec.library.name],
    ]
    return imports, body


def _memory_check(spec: Spec) -> list[str]:
    d = spec.result.details
    return [
        "",
        f"{ORACLE_MARKER}'s budget for the peak memory the call adds: 3·p²·8 + 2·M·C·p·8 +",
        "# 128 MiB (laplace-lab's many-outputs case), half of one N·C × p float64 array.",
        f"budget = {int(d['budget_bytes'])}",
        'print(f"peak memory added {added / 2**20:.0f} MiB, budget {budget / 2**20:.0f} MiB")',
        'assert added <= budget, f"FAIL: {added / 2**20:.0f} MiB added, over the budget"',
    ]


# ---------------------------------------------------------------------- the comparison
def _expected_shape(spec: Spec) -> tuple[int, ...]:
    p, cap = spec.problem, spec.call.capability
    if cap in ("log_marginal_likelihood", "low_rank_log_marginal_likelihood"):
        return (1,)
    if cap == "structured_posterior_samples":
        return (int(spec.call.extra["n_samples"]), p.p)
    rows = spec.call.rows
    m = len(range(*rows.indices(len(p.X_test))))
    classes = int(p.model(p.X_test[:1]).shape[1])
    return (m, classes) if p.likelihood == "multiclass" else (m,)


def _shape_check(spec: Spec) -> list[str]:
    name = ANSWER_NAMES[spec.call.capability].format(**spec.call.extra)
    shape = _expected_shape(spec)
    return [
        "",
        "got = np.asarray(got, dtype=np.float64)",
        f"shape = {shape}",
        "same = [n for n in got.shape if n != 1] == [n for n in shape if n != 1]",
        f'assert same, f"{name} must have shape {{shape}}; got {{got.shape}}"',
        "got = got.reshape(shape)",
    ]


def _values_check(spec: Spec) -> list[str]:
    d = spec.result.details
    worst = tuple(int(i) for i in d["worst"])
    where = f"test point {worst[0]}" if spec.call.rows is not None else "the value"
    if len(worst) > 1:
        where += f", class {worst[1]}"
    if spec.call.rows not in (None, slice(None)):
        worst = (0, *worst[1:])  # the call's one test input
    return [
        "",
        f"{ORACLE_MARKER} (laplace-lab's dense float64 computation) at the worst entry, {where},",
        "# and the tolerance there (laplace-lab's tolerance rule for this case).",
        f"oracle = {float(d['oracle'])!r}",
        f"tolerance = {float(d['tolerance'])!r}",
        f"value = float(got[{', '.join(map(str, worst))}])",
        "error = abs(value - oracle)",
        "ratio = error / tolerance",
        'print(f"got {value!r}, oracle {oracle!r}, |error| {error:.3g}, "',
        '      f"tolerance {tolerance:.3g}")',
        'assert ratio <= 1, f"FAIL: max |error|/tolerance = {ratio:.3g} (|error| {error:.3g})"',
    ]


def _optimum_check(spec: Spec) -> list[str]:
    d = spec.result.details
    alpha, s2 = (float(v) for v in d["oracle"])
    t1, t2 = (float(v) for v in d["tolerance_log"])
    return [
        "",
        f"{ORACLE_MARKER}: the exact maximiser (α, σ0²) of the Laplace evidence at theta_map",
        "# (laplace-lab's dense computation), and the tolerances on log α and log σ0².",
        f"optimum = np.array([{alpha!r}, {s2!r}])",
        f"tolerance = np.array([{t1!r}, {t2!r}])",
        "error = np.abs(np.log(np.asarray(got, dtype=np.float64)) - np.log(optimum))",
        "ratio = float(np.max(error / tolerance))",
        'print(f"got (α, σ0²) = {got}, optimum {optimum.tolist()}, |error| of the logs {error}")',
        'assert ratio <= 1, f"FAIL: max |error|/tolerance = {ratio:.3g} (on log α, log σ0²)"',
    ]


def _samples_check(spec: Spec) -> list[str]:
    from scipy import stats

    from laplace_lab.conformance.gaussian_samples import LEVEL, bartlett_factor
    from laplace_lab.conformance.oracle import DenseOracle

    extra = spec.call.extra
    if extra["structure"] != "low_rank":
        raise ValueError(
            f"no stand-alone samples check for structure={extra['structure']!r} "
            f"({spec.library.name}, {spec.result.case.name})"
        )
    oracle = DenseOracle(spec.problem)
    rank = int(extra["rank"])
    lam, U = oracle.ggn_spectrum
    n, k = int(extra["n_samples"]), spec.problem.p
    df = k * (k + 1) // 2
    return [
        "",
        f"{ORACLE_MARKER}: the draws must be N(theta_map, P⁻¹) with P = U diag(λ) Uᵀ + diag(V),",
        f"# the exact top-{rank} eigenpairs of the dense GGN (laplace-lab) and the prior.",
        *_array("lam", lam[:rank], "np.array"),
        *_array("U", U[:, :rank], "np.array"),
        "P = (U * lam) @ U.T + np.diag(np.broadcast_to(prior_precision, (len(theta_map),)))",
        "z = (got - np.asarray(theta_map, dtype=np.float64)) @ np.linalg.cholesky(P)",
        "n, k = z.shape  # z must be N(0, I)",
        "t_mean = n * float(np.sum(z.mean(axis=0) ** 2))  # χ²_k if right",
        "S = z.T @ z / n",
        f"rho = {bartlett_factor(k, n)!r}  # Bartlett's correction",
        "t_cov = rho * n * (float(np.trace(S)) - np.linalg.slogdet(S)[1] - k)  # χ²_k(k+1)/2",
        f"# the critical values of χ²_{k} and χ²_{df} at level {LEVEL:g}",
        f"critical = np.array([{float(stats.chi2.isf(LEVEL, k))!r}, "
        f"{float(stats.chi2.isf(LEVEL, df))!r}])",
        "ratio = float(np.max(np.array([t_mean, t_cov]) / critical))",
        'print(f"E‖z‖²/k = {np.trace(S) / k:.4g} (1 if right), statistics {t_mean:.4g}, "',
        '      f"{t_cov:.4g}; critical values {critical}")',
        'assert ratio <= 1, f"FAIL: test statistic/critical value = {ratio:.3g}"',
    ]


def _comparison(spec: Spec) -> list[str]:
    if spec.result.case.name.startswith("many-outputs/"):
        values = "oracle" in spec.result.details  # none when the call was stopped at the cap
        return [
            *_memory_check(spec),
            *_shape_check(spec),
            *(_values_check(spec) if values else []),
        ]
    if spec.result.outcome is Outcome.ERROR:
        return [] if spec.call.capability == "optimize_prior" else _shape_check(spec)
    if spec.call.capability == "optimize_prior":
        return _optimum_check(spec)
    if spec.call.capability == "structured_posterior_samples":
        return [*_shape_check(spec), *_samples_check(spec)]
    return [*_shape_check(spec), *_values_check(spec)]


# --------------------------------------------------------------------------------- file
def _header(spec: Spec) -> list[str]:
    lib, result = spec.library, spec.result
    finding = lib.finding(result.case.name)
    ends = (
        "Raises the library's exception, or an AssertionError on a malformed answer (exit code 1)"
        if result.outcome is Outcome.ERROR
        else "Ends with an AssertionError (exit code 1) while the finding stands, exit code 0 "
        "once it is fixed"
    )
    inline = "" if result.outcome is Outcome.ERROR else " and the oracle's numbers"
    head = [
        f"{lib.name} {lib.version()} on the conformance case {result.case.name} "
        f"(seed {spec.seed}): {result.outcome.value}.",
        f"Case: {result.case.description} (problem {result.case.problem}).",
        f"Found: {' '.join(result.summary.split())}",
    ]
    if finding is not None:
        head.append(
            f"Known finding {finding.id} ({finding.kind}): {finding.title}; described, with a "
            f"reproducer of its own where one was written, in docs/{finding.link}."
        )
    head += [
        f"Needs {lib.name} ({INSTALL[lib.name]}).",
        f"Stand-alone: the network, its MAP weights, the data{inline} are inline; the "
        f"library's calls are those of laplace-lab's adapter {lib.target}. {ends}.",
        f"Regenerated by: laplace-lab validate --scoreboard --seed {spec.seed} --out docs",
    ]
    return [
        "# " + line if line else "#"
        for para in head
        for line in [*textwrap.wrap(para, 95, break_on_hyphens=False), ""]
    ][:-1]


def standalone_reproducer(library: Library, result: CaseResult, seed: int) -> str:
    """The stand-alone reproducer of a FAIL or ERROR of ``library`` (module docstring).

    Raises
    ------
    ValueError
        When (library, capability) has no template in :data:`TEMPLATES`, naming both and
        the case.
    """
    if result.outcome not in (Outcome.FAIL, Outcome.ERROR):
        raise ValueError(f"result must be a FAIL or an ERROR; got {result.outcome.value}")
    key = (library.name, result.case.capability)
    many = result.case.name.startswith("many-outputs/") and library.name in MANY_OUTPUTS
    # laplax's multi-output loss is the adapter's own weighted one, which no template writes
    multi_output = "multi-output" in result.case.problem and library.name == "laplax"
    if (key not in TEMPLATES or multi_output) and not many:
        raise ValueError(
            f"no stand-alone reproducer template for library {library.name!r}, capability "
            f"{result.case.capability!r} (case {result.case.name}): add one to "
            "laplace_lab.conformance.standalone.TEMPLATES"
        )
    problem = build_problem(result.case.problem, seed=seed)
    spec = Spec(library, result, problem, parse_call(result.reproducer, problem), seed)
    if many:
        imports, body = _memory_script(spec)
    else:
        frame, emit = TEMPLATES[key]
        imports, body = frame(spec, emit)
    lines = [*_header(spec), "", "# fmt: off", *imports, "", *body, *_comparison(spec)]
    if any(len(line) > LINE_LENGTH for line in lines):
        lines.insert(0, "# ruff: noqa: E501")
    return "\n".join(lines) + "\n"
