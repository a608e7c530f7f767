"""The model zoo of the papers: MLPs, the Wheel-bandit net, CIFAR-style ResNets, a digits CNN.

S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026):
- App. C.1 (Setup A): 3 hidden ReLU layers of width 200, scalar head, 90 inputs (p = 98,801);
- App. C.6 (Setup D): 2×50 (p = 50d + 2,651) and 3×200 (p = 200d + 80,801) ReLU MLPs;
- §5.2 / App. D.2: Wheel-bandit reward net 7 → 100 → 100 → 1 (p = 11,001);
- App. C.2 / C.4 / C.5: CIFAR-style ResNet-(6n+2) [He et al. 2016], stages {16, 32, 64} with
  n basic blocks each, global average pooling, Linear(64, 1) (binary) or Linear(64, 10) head.
  Where the width changes the shortcut is a 1×1 convolution + BN ("projection", He et al.'s
  option B); ``shortcut="identity"`` gives the parameter-free zero-padding option A.

E. Daxberger et al., "Bayesian Deep Learning via Subnetwork Inference", ICML 2021,
arXiv:2010.14689, §6.3: ResNet-18 (an input convolutional block, 8 residual blocks in four
stages of widths {64, 128, 256, 512}, a linear layer) for rotated MNIST and corrupted CIFAR-10.
The papers' parameter counts are checked (never matched by construction) in
``paper_checks/subnetwork_laplace_optimality_networks.py``. torch is imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from laplace_lab._checks import integer, one_of, positive_int

__all__ = [
    "BasicBlock",
    "bandit_net",
    "count_parameters",
    "digits_cnn",
    "mlp",
    "mlp_2x50",
    "mlp_3x200",
    "resnet",
    "resnet18",
    "resnet_depths",
    "weight_indices",
]

_ACTIVATIONS = ("relu", "tanh")


def count_parameters(model: Any) -> int:
    """Number of trainable scalar parameters (the papers' p)."""
    return sum(int(t.numel()) for t in model.parameters() if t.requires_grad)


def weight_indices(model: Any) -> np.ndarray:
    """Flat indices (in ``parameters()`` order) of the tensors named ``*.weight``.

    The parameters Daxberger et al. (arXiv:2010.14689, §6.1–6.2) do inference over: network
    weights, not biases. For an MLP their number is the paper's D.
    """
    out, start = [], 0
    for name, t in model.named_parameters():
        if not t.requires_grad:
            continue
        if name.endswith("weight"):
            out.append(np.arange(start, start + t.numel()))
        start += t.numel()
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def mlp(d_in: int, widths: Sequence[int], d_out: int = 1, *, activation: str = "relu") -> Any:
    """Fully connected network d_in → widths[0] → … → d_out with biases everywhere.

    p = Σ_l (d_{l−1} + 1) d_l (App. C.1 formula for f_θ).

    Examples
    --------
    3 inputs → 4 hidden units → 2 outputs: p = (3 + 1)·4 + (4 + 1)·2 = 26.

    >>> from laplace_lab.networks.models import count_parameters, mlp
    >>> count_parameters(mlp(3, [4], 2))
    26
    """
    positive_int(d_in, "d_in")
    positive_int(d_out, "d_out")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {_ACTIVATIONS}; got {activation!r}")
    widths = list(widths)
    for w in widths:
        positive_int(w, "widths")
    act = nn.ReLU if activation == "relu" else nn.Tanh
    layers: list[Any] = []
    prev = d_in
    for w in widths:
        layers += [nn.Linear(prev, w), act()]
        prev = w
    layers.append(nn.Linear(prev, d_out))
    return nn.Sequential(*layers)


def mlp_2x50(d_in: int, d_out: int = 1, *, activation: str = "relu") -> Any:
    """The small MLP of Setup D (App. C.6) and of the SSLA experiments: 2 hidden layers of 50."""
    return mlp(d_in, [50, 50], d_out, activation=activation)


def mlp_3x200(d_in: int = 90, d_out: int = 1) -> Any:
    """The Setup A / large Setup D MLP: 3 hidden ReLU layers of width 200 (App. C.1)."""
    return mlp(d_in, [200, 200, 200], d_out)


def bandit_net() -> Any:
    """Wheel-bandit reward model (App. D.2): 7 inputs (context, one-hot arm) → 100 → 100 → 1."""
    return mlp(7, [100, 100], 1)


class BasicBlock(nn.Module):
    """Two 3×3 conv + BN layers with a residual connection (He et al. 2016, CIFAR variant)."""

    def __init__(self, cin: int, cout: int, stride: int, shortcut: str) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride, self.pad = stride, cout - cin
        self.change = stride != 1 or cin != cout
        self.shortcut = None
        if self.change and shortcut == "projection":
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.shortcut is not None:
            res = self.shortcut(x)
        elif self.change:  # option A: subsample and zero-pad the new channels
            res = x[:, :, :: self.stride, :: self.stride]
            res = F.pad(res, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        else:
            res = x
        return F.relu(out + res)


def resnet_depths() -> dict[int, int]:
    """Depth 6n+2 → blocks per stage n for the ResNets the papers use (20/32/56/110)."""
    return {20: 3, 32: 5, 56: 9, 110: 18}


def resnet(
    depth: int, *, n_outputs: int = 1, shortcut: str = "projection", in_channels: int = 3
) -> Any:
    """CIFAR-style ResNet-depth, depth = 6n + 2 (He et al. 2016 §4.2; App. C.2 of the paper).

    3×3 conv (16) + BN + ReLU, three stages of n basic blocks with {16, 32, 64} filters
    (stride 2 at the first block of stages 2 and 3), global average pooling, Linear(64,
    ``n_outputs``). Convolutions have no bias (BN follows each one).

    Parameters
    ----------
    depth : int
        6n + 2 with n ≥ 1 (20, 32, 56, 110, ...).
    n_outputs : int
        1 for the binary (single-logit) head of Setup B, 10 for Setup C.
    shortcut : {"projection", "identity"}
        Where the width changes: 1×1 conv + BN (option B) or zero-padding (option A).
    in_channels : int
        3 for CIFAR-10.
    """
    if integer(depth, "depth", low=8) % 6 != 2:
        raise ValueError(f"depth must be 6n + 2 with n ≥ 1 (20, 32, 56, 110); got depth={depth!r}")
    one_of(shortcut, "shortcut", ("projection", "identity"))
    positive_int(n_outputs, "n_outputs")
    positive_int(in_channels, "in_channels")
    n = (depth - 2) // 6
    layers: list[Any] = [
        nn.Conv2d(in_channels, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
    ]
    cin = 16
    for stage, width in enumerate((16, 32, 64)):
        for b in range(n):
            stride = 2 if stage > 0 and b == 0 else 1
            layers.append(BasicBlock(cin, width, stride, shortcut))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, n_outputs)]
    return nn.Sequential(*layers)


def resnet18(
    *, n_outputs: int = 10, in_channels: int = 3, stem: str = "cifar", batch_norm: bool = True
) -> Any:
    """ResNet-18 [He et al. 2016]: a stem, 4 stages of 2 basic blocks, average pooling, a head.

    Stages have {64, 128, 256, 512} filters (stride 2 at the first block of stages 2–4, with
    1×1 convolution + BN projection shortcuts there). ``stem="cifar"``: one 3×3 convolution
    (64 filters, stride 1), the usual CIFAR/MNIST adaptation; ``stem="imagenet"``: a 7×7
    convolution with stride 2 and a 3×3 max-pool, as in the ImageNet original. Convolutions
    have no bias. ``batch_norm=False`` leaves the BN layers without their affine parameters
    (γ, β), which some parameter counts omit.

    Parameters
    ----------
    n_outputs : int
        Classes of the linear head (10 for MNIST and CIFAR-10, 1000 for ImageNet).
    in_channels : int
        1 for MNIST, 3 for CIFAR-10.
    stem : {"cifar", "imagenet"}
    batch_norm : bool
        Whether the BN layers carry trainable affine parameters.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3.
    """
    positive_int(n_outputs, "n_outputs")
    positive_int(in_channels, "in_channels")
    one_of(stem, "stem", ("cifar", "imagenet"))
    if stem == "cifar":
        layers: list[Any] = [nn.Conv2d(in_channels, 64, 3, padding=1, bias=False)]
    else:
        layers = [nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)]
    layers += [nn.BatchNorm2d(64), nn.ReLU()]
    if stem == "imagenet":
        layers.append(nn.MaxPool2d(3, stride=2, padding=1))
    cin = 64
    for stage, width in enumerate((64, 128, 256, 512)):
        for b in range(2):
            layers.append(BasicBlock(cin, width, 2 if stage > 0 and b == 0 else 1, "projection"))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, n_outputs)]
    model = nn.Sequential(*layers)
    if not batch_norm:
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.requires_grad_(False)
                m.bias.requires_grad_(False)
    return model


def digits_cnn(n_classes: int = 10, *, channels: tuple[int, int] = (8, 16)) -> Any:
    """A small CNN for the 8×8 scikit-learn digits: two 3×3 conv + max-pool stages, linear head.

    1×8×8 → conv(c1) → ReLU → pool → conv(c2) → ReLU → pool → c2·2·2 → Linear(4·c2, n_classes);
    p = 10·c1 + (9·c1 + 1)·c2 + (4·c2 + 1)·n_classes (1,898 for the default (8, 16) and 10
    classes).
    """
    positive_int(n_classes, "n_classes")
    if not isinstance(channels, tuple | list) or len(channels) != 2:
        raise TypeError(f"channels must be a pair of positive integers; got channels={channels!r}")
    c1, c2 = (positive_int(c, "channels") for c in channels)
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, c1, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * c2, n_classes),
    )
