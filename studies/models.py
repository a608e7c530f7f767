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
The papers' parameter counts are checked (never matched by construction) in
``paper_checks/subnetwork_laplace_optimality_networks.py``. torch is imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    "resnet_depths",
]

_ACTIVATIONS = ("relu", "tanh")


def count_parameters(model: Any) -> int:
    """Number of trainable scalar parameters (the papers' p)."""
    return sum(int(t.numel()) for t in model.parameters() if t.requires_grad)


def mlp(d_in: int, widths: Sequence[int], d_out: int = 1, *, activation: str = "relu") -> Any:
    """Fully connected network d_in → widths[0] → … → d_out with biases everywhere.

    p = Σ_l (d_{l−1} + 1) d_l (App. C.1 formula for f_θ).
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


def digits_cnn(n_classes: int = 10) -> Any:
    """A small CNN for the 8×8 scikit-learn digits: two 3×3 conv + max-pool stages, linear head.

    1×8×8 → conv(8) → ReLU → pool → conv(16) → ReLU → pool → 16·2·2 → Linear(64, n_classes);
    p = 80 + 1,168 + 65·n_classes (1,898 for 10 classes).
    """
    positive_int(n_classes, "n_classes")
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64, n_classes),
    )
