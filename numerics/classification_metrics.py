"""Metrics of a probabilistic classifier: accuracy, NLL, ECE, entropy and OOD AUROC.

The evaluation of Ortega et al., arXiv:2601.21835, §3 (after Ortega et al., ICML 2024,
"Variational linearized Laplace approximation for Bayesian deep learning"): the negative
log-likelihood and the expected calibration error of the predictive probabilities on the
test set, and out-of-distribution detection as the area under the ROC curve of an
uncertainty score (the entropy of the predictive probabilities, or of the Gaussian
predictive) separating in-distribution from OOD inputs.

``probs`` is an (n, C) array of class probabilities whose rows sum to 1, or an (n, 1) column
P(y = 1) of a binary classifier (what a one-logit predictive's ``probabilities()`` gives),
read as the two classes (1 − p, p).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import positive_int

__all__ = ["accuracy", "auroc", "entropy", "expected_calibration_error", "negative_log_likelihood"]


def _probs(probs: Any) -> np.ndarray:
    """(n, C) class probabilities; an (n, 1) column is P(y = 1) of a binary classifier."""
    P = np.asarray(probs, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] == 0:
        raise ValueError(f"probs must be a non-empty (n, C) array; got shape {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < 0):
        raise ValueError("probs must be finite and non-negative")
    if P.shape[1] == 1:
        if np.any(P > 1):
            raise ValueError("probs of one column (P(y = 1)) must lie in [0, 1]")
        P = np.concatenate([1.0 - P, P], axis=1)
    if not np.allclose(P.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("probs must sum to 1 over the classes (rows)")
    return P


def _probs_labels(probs: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    P = _probs(probs)
    labels = np.asarray(y)
    if labels.shape != (P.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"y must be ({P.shape[0]},) integer labels; got {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= P.shape[1]):
        raise ValueError(
            f"y must hold labels in [0, {P.shape[1]}); got {labels.min()}..{labels.max()}"
        )
    return P, labels.astype(np.int64)


def accuracy(probs: Any, y: Any) -> float:
    """Share of inputs whose most probable class is the label."""
    P, labels = _probs_labels(probs, y)
    return float(np.mean(P.argmax(axis=1) == labels))


def negative_log_likelihood(probs: Any, y: Any) -> float:
    """Mean −log p(y_i | x_i) (probabilities floored at 1e-300)."""
    P, labels = _probs_labels(probs, y)
    return float(-np.mean(np.log(np.maximum(P[np.arange(labels.size), labels], 1e-300))))


def expected_calibration_error(probs: Any, y: Any, *, bins: int = 15) -> float:
    """Σ_b (n_b / n) |acc_b − conf_b| over ``bins`` equal-width confidence bins (0, 1].

    The confidence is the largest class probability (Guo et al. 2017; 15 bins as there).
    """
    P, labels = _probs_labels(probs, y)
    bins = positive_int(bins, "bins")
    conf = P.max(axis=1)
    hit = (P.argmax(axis=1) == labels).astype(np.float64)
    which = np.clip(np.ceil(conf * bins).astype(np.int64) - 1, 0, bins - 1)
    gap = np.bincount(which, weights=hit - conf, minlength=bins)
    return float(np.sum(np.abs(gap)) / labels.size)


def entropy(probs: Any) -> np.ndarray:
    """−Σ_c p_c log p_c per row (0 log 0 = 0)."""
    P = _probs(probs)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * np.log(P), 0.0)
    return -terms.sum(axis=1)


def auroc(scores_in: Any, scores_out: Any) -> float:
    """Area under the ROC curve of a score that should be larger on OOD inputs.

    The Mann–Whitney statistic P(s_out > s_in) + ½ P(s_out = s_in) (midranks for ties).
    """
    a = np.asarray(scores_in, dtype=np.float64).reshape(-1)
    b = np.asarray(scores_out, dtype=np.float64).reshape(-1)
    if a.size == 0 or b.size == 0:
        raise ValueError("scores_in and scores_out must be non-empty")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("scores_in and scores_out must be finite")
    from scipy.stats import rankdata  # scipy.stats costs 0.4 s to import: only where used

    r = rankdata(np.concatenate([a, b]))
    return float((r[a.size :].sum() - b.size * (b.size + 1) / 2.0) / (a.size * b.size))
