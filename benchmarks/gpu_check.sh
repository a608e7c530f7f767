#!/usr/bin/env bash
# The GPU check for a short lease: install laplace-lab beside the machine's own CuPy and torch
# (never touching them), run the GPU tests and the GPU bench's quick rows, write
# gpu_check.json, gpu_check.log and gpu_tests.xml to OUT.
#
#   benchmarks/gpu_check.sh OUT [WHEELS]
#
# Run from the repository root. WHEELS: a folder of wheels for what the machine lacks (e.g.
# array-api-compat on a machine without a package index); a laplace_lab wheel there is used
# only if building from this source tree fails. PYTHON picks the interpreter (default
# python3), GPU_CHECK_TESTS the tests folder (default tests; its numerics/ is run), GPU_CHECK_ARGS extra arguments
# for laplace_lab.benchmarks.gpu_check (e.g. --full). Exit status: 0 passed or no device, 1 a
# failure, 2 the install failed.
set -uo pipefail

out=${1:?usage: benchmarks/gpu_check.sh OUT [WHEELS]}
wheels=${2:-}
py=${PYTHON:-python3}
case $py in */*) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py") ;; esac
tests=${GPU_CHECK_TESTS:-tests}
[ -f pyproject.toml ] && [ -d "$tests" ] || { echo "gpu_check.sh: run it from the repository root" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
site=$work/site
log=$out/gpu_check_install.log
pip_install() { "$py" -m pip install --quiet --no-deps --no-index --no-compile --target "$site" "$@" >>"$log" 2>&1; }

extra=()
if [ -n "$wheels" ]; then
    for w in "$wheels"/*.whl; do
        case $(basename "$w") in laplace_lab-*) ;; *) [ -e "$w" ] && extra+=("$w") ;; esac
    done
fi
if [ ${#extra[@]} -gt 0 ] && ! pip_install "${extra[@]}"; then
    echo "gpu_check.sh: installing ${extra[*]} failed (see $log)" >&2; exit 2
fi
# built from a copy, so that the build leaves nothing (build/, *.egg-info) in the repository
# (never the environments, e.g. `make versions`' .venvs/ of several GB, nor caches)
mkdir "$work/src" && tar --exclude=./.venv --exclude=./.venvs --exclude=./.git --exclude=./build \
    --exclude=./site --exclude=./report --exclude=./results --exclude='*.egg-info' \
    --exclude=__pycache__ --exclude=./.hypothesis --exclude=./.pytest_cache \
    --exclude=./.ruff_cache -cf - . | tar -xf - -C "$work/src"
if ! pip_install --no-build-isolation "$work/src"; then
    built=$(ls "${wheels:-/nonexistent}"/laplace_lab-*.whl 2>/dev/null | head -n 1)
    if [ -z "$built" ] || ! pip_install "$built"; then
        echo "gpu_check.sh: installing laplace-lab failed (see $log)" >&2; exit 2
    fi
    echo "built from source failed; installed $built" >>"$log"
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
# The tests run from a copy: from the repository root its laplace_lab/ folder would shadow
# the installed package (whose subpackages live in other top-level folders).
cp -r "$tests" "$work/tests" && cp pyproject.toml "$work/"
cd "$work" || exit 2
# shellcheck disable=SC2086
PYTHONUNBUFFERED=1 "$py" -m laplace_lab.benchmarks.gpu_check "$out" --tests "$work/tests/numerics" ${GPU_CHECK_ARGS:-}
