"""Model zoo: parameter counts from closed forms, shapes, shortcut variants."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import (  # noqa: E402
    bandit_net,
    count_parameters,
    digits_cnn,
    mlp,
    mlp_2x50,
    mlp_3x200,
    resnet,
    resnet_depths,
)


def _resnet_formula(n: int, outputs: int, projection: bool) -> int:
    """Hand count: stem conv + BN, 3 stages of n blocks (two 3×3 convs + two BNs), head."""
    p = 3 * 16 * 9 + 2 * 16
    cin = 16
    for w in (16, 32, 64):
        for _ in range(n):
            p += cin * w * 9 + w * w * 9 + 4 * w
            if cin != w and projection:
                p += cin * w + 2 * w
            cin = w
    return p + 65 * outputs


@pytest.mark.parametrize("d", [8, 13])
def test_mlp_counts_match_appendix_c6_formulas(d):
    assert count_parameters(mlp_2x50(d)) == 50 * d + 2651
    assert count_parameters(mlp_3x200(d)) == 200 * d + 80801


def test_named_mlps():
    assert count_parameters(mlp_3x200(90)) == 98801
    assert count_parameters(bandit_net()) == 11001
    assert count_parameters(digits_cnn()) == 80 + 1168 + 650
    assert count_parameters(digits_cnn(3, channels=(4, 8))) == 40 + 296 + 33 * 3
    assert mlp(3, [4], 2, activation="tanh")(torch.zeros(5, 3)).shape == (5, 2)


@pytest.mark.parametrize("depth", [20, 32])
@pytest.mark.parametrize("outputs", [1, 10])
@pytest.mark.parametrize("shortcut", ["projection", "identity"])
def test_resnet_counts_match_hand_formula(depth, outputs, shortcut):
    n = resnet_depths()[depth]
    model = resnet(depth, n_outputs=outputs, shortcut=shortcut)
    assert count_parameters(model) == _resnet_formula(n, outputs, shortcut == "projection")


def test_resnet_forward_shapes_and_downsampling():
    model = resnet(8, n_outputs=10, shortcut="identity").eval()
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    model = resnet(8, n_outputs=1).eval()
    assert model(torch.zeros(2, 3, 16, 16)).shape == (2, 1)
    assert digits_cnn()(torch.zeros(4, 64)).shape == (4, 10)


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        resnet(21)
    with pytest.raises(ValueError, match="shortcut"):
        resnet(20, shortcut="dense")
    with pytest.raises(ValueError, match="activation"):
        mlp(3, [4], activation="gelu")
    with pytest.raises(ValueError, match="widths"):
        mlp(3, [0])
    with pytest.raises(ValueError, match="n_classes"):
        digits_cnn(0)
