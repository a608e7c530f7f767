"""Study declarations, grid handling and per-replication seeding."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.studies.seeding import params_key, replication_rng, replication_seed
from laplace_lab.studies.spec import Study, expand_grid, parse_grid_overrides
from tests.studies.toy import TOY, run_one


def _study(**changes):
    fields = dict(
        name="a-study",
        description="d",
        grid={"N": (10, 100)},
        full_grid={"N": (10, 100, 1000)},
        replications=2,
        full_replications=3,
        run_one=run_one,
    )
    fields.update(changes)
    return Study(**fields)


def test_replication_stream_depends_only_on_its_key():
    a = replication_rng("s", {"N": 10, "k": 2}, 3).standard_normal(5)
    b = replication_rng("s", {"k": 2, "N": 10}, 3).standard_normal(5)  # key order irrelevant
    np.testing.assert_array_equal(a, b)
    others = [
        replication_rng("s", {"N": 10, "k": 2}, 4),
        replication_rng("t", {"N": 10, "k": 2}, 3),
        replication_rng("s", {"N": 11, "k": 2}, 3),
        replication_rng("s", {"N": 10.0, "k": 2}, 3),  # a float grid point is another point
        replication_rng("s", {"N": 10, "k": 2}, 3, seed=1),
    ]
    for rng in others:
        assert not np.array_equal(rng.standard_normal(5), a)


def test_replication_seed_is_a_seed_sequence_with_256_bits_of_entropy():
    seq = replication_seed("s", {"N": 10}, 0)
    assert isinstance(seq, np.random.SeedSequence)
    assert len(seq.entropy) == 8


@pytest.mark.parametrize(
    ("rep", "seed", "exc", "match"),
    [
        (-1, 0, ValueError, "replication"),
        (1.5, 0, TypeError, "replication"),
        (0, -2, ValueError, "seed"),
    ],
)
def test_bad_replication_or_seed_is_named(rep, seed, exc, match):
    with pytest.raises(exc, match=match):
        replication_seed("s", {"N": 10}, rep, seed=seed)


def test_params_key_is_canonical_and_rejects_nan():
    assert params_key({"b": 1, "a": 0.1}) == '{"a":0.1,"b":1}'
    with pytest.raises(ValueError, match="'a'"):
        params_key({"a": float("nan")})


def test_expand_grid_is_the_cartesian_product_in_declared_order():
    points = expand_grid({"N": (10, 100), "k": (1, 2, 3)})
    assert len(points) == 6
    assert points[0] == {"N": 10, "k": 1} and points[1] == {"N": 10, "k": 2}
    assert points[-1] == {"N": 100, "k": 3}


def test_grid_overrides_take_the_type_of_the_grid():
    grid = {"N": (10, 100), "eps": (0.1,), "kind": ("a",), "flag": (True,)}
    out = parse_grid_overrides(grid, ["N=1e3,20", "eps=0.5", "kind=x,y", "flag=false"])
    assert out == {"N": (1000, 20), "eps": (0.5,), "kind": ("x", "y"), "flag": (False,)}
    assert all(type(v) is int for v in out["N"])
    for bad, match in [
        (["M=1"], "unknown parameter 'M'"),
        (["N=1.5"], "not an integer"),
        (["eps=abc"], "not a number"),
        (["N"], "key=v1,v2"),
        (["N=10,10"], "duplicate"),
    ]:
        with pytest.raises(ValueError, match=match):
            parse_grid_overrides(grid, bad)


@pytest.mark.parametrize(
    ("changes", "exc", "match"),
    [
        ({"name": "Bad Name"}, ValueError, "name"),
        ({"full_grid": {"M": (1,)}}, ValueError, "same keys"),
        ({"grid": {"N": ()}}, ValueError, "at least one value"),
        ({"grid": {"N": ([1],)}}, TypeError, "int, float, str or bool"),
        ({"replications": 0}, ValueError, "replications"),
        ({"full_replications": True}, TypeError, "full_replications"),
        ({"run_one": 3}, TypeError, "run_one"),
        ({"x": "k"}, ValueError, "x must be a grid key"),
    ],
)
def test_bad_study_declarations_are_named(changes, exc, match):
    with pytest.raises(exc, match=match):
        _study(**changes)


def test_code_version_hashes_the_maths_and_the_shared_seeding_and_checks():
    from laplace_lab.studies.spec import _digested_sources

    names = {name for name, _ in _digested_sources()}
    assert {"_random.py", "_checks.py", "numerics/ggn.py", "studies/spec.py"} <= names
    assert {"theory/ipv.py", "networks/training.py"} <= names
    assert not any(n.startswith("paper_checks/") for n in names)


def test_code_version_of_a_paper_study_hashes_the_papers_experiments():
    """A study of a paper calls its experiments: a change there must be a new code version,
    or a resumed store would mix rows of old and new code."""
    from laplace_lab.studies.spec import _digested_sources, _owner

    owner = _owner("laplace_lab.paper_checks.fsp_laplace.studies.some_study")
    assert owner == "laplace_lab.paper_checks.fsp_laplace"
    names = {name for name, _ in _digested_sources(owner)}
    assert {"fsp_laplace/experiments/uci.py", "fsp_laplace/claims.py"} <= names
    assert not any(n.startswith("subnetwork_inference/") for n in names)
    assert _owner("laplace_lab.studies.runner") is None
    assert _owner("my_studies") is None


def test_code_version_tracks_the_source_of_run_one():
    assert TOY.code_version.startswith("1+")
    assert _study(run_one=lambda params, rng: {}).code_version != _study().code_version
    assert _study(version="2").code_version != _study().code_version
