"""solutions.compute.accel: the scatter helpers against slow loops, with and without torch-scatter; and
``scripts/build_accel.py`` (``make accel``), which builds torch-scatter.

The torch-scatter path runs only where it is installed (``make accel``); elsewhere those tests skip
with the reason, except under CI (the environment variable CI set), which runs ``make accel`` first and
where a missing torch-scatter is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions.compute import accel
from solutions.compute.accel import group_sizes, scatter, scatter_max, scatter_mean, scatter_sum, segment

ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = ROOT / "scripts" / "build_accel.py"
IN_CI = bool(os.environ.get("CI"))


def require_torch_scatter(reason: str) -> None:
    """Skip without torch-scatter; fail under CI, which builds it first so that both paths run."""
    if accel.WITH_TORCH_SCATTER:
        return
    if IN_CI:
        pytest.fail(f"{reason} (CI is set and runs `make accel` before the tests: torch-scatter must "
                    "be installed)")
    pytest.skip(f"{reason}; `make accel` builds it")


@pytest.fixture(params=["fallback", "torch_scatter"])
def scatter_path(request, monkeypatch):
    """Run a test once on torch's own ops and once on torch-scatter (skipped when it is absent)."""
    if request.param == "torch_scatter":
        require_torch_scatter("torch-scatter is not installed; only the fallback path can run")
    else:
        monkeypatch.setattr(accel, "WITH_TORCH_SCATTER", False)
    return request.param


def reference(src: torch.Tensor, index: torch.Tensor, size: int, reduce: str, dim: int = 0) -> torch.Tensor:
    """Group by group with Python loops: the obvious definition (empty groups give 0)."""
    moved = src.movedim(dim, 0)
    out = torch.zeros((size, *moved.shape[1:]), dtype=src.dtype)
    for g in range(size):
        members = moved[index == g]
        if len(members):
            out[g] = {"sum": members.sum(0), "mean": members.mean(0), "max": members.amax(0)}[reduce]
    return out.movedim(0, dim)


@pytest.mark.parametrize("reduce", accel.REDUCTIONS)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_matches_the_loop(scatter_path, reduce, dim):
    gen = torch.Generator().manual_seed(0)
    src = torch.randn(7, 9, 3, generator=gen, dtype=torch.float64)
    index = torch.randint(0, 5, (src.shape[dim],), generator=gen)
    index[index == 3] = 4  # group 3 stays empty
    out = scatter(src, index, dim=dim, dim_size=6, reduce=reduce)
    assert out.shape[dim] == 6
    torch.testing.assert_close(out, reference(src, index, 6, reduce, dim))


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 4), min_size=1, max_size=6), reduce=st.sampled_from(accel.REDUCTIONS),
       seed=st.integers(0, 2**16), training=st.booleans())
def test_segment_equals_scatter_over_the_same_groups(sizes, reduce, seed, training):
    # training: src needs a gradient, as in a training step (empty segments included: sizes may be 0)
    src = torch.randn(sum(sizes), 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64,
                      requires_grad=training)
    ptr = torch.tensor([0, *torch.tensor(sizes).cumsum(0).tolist()])
    index = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    torch.testing.assert_close(segment(src, ptr, reduce=reduce),
                               reference(src.detach(), index, len(sizes), reduce))


def test_named_helpers_are_the_reductions(scatter_path):
    src, index = torch.tensor([1.0, 3.0, 5.0]), torch.tensor([1, 1, 0])
    assert scatter_sum(src, index).tolist() == [5.0, 4.0]
    assert scatter_mean(src, index).tolist() == [5.0, 2.0]
    assert scatter_max(src, index).tolist() == [5.0, 3.0]


def test_gradients_flow(scatter_path):
    src = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 1, 2, 2, 2])
    for reduce in accel.REDUCTIONS:
        assert torch.autograd.gradcheck(lambda x, r=reduce: scatter(x, index, dim_size=4, reduce=r), (src,))


def test_segment_gradients_flow(scatter_path):
    src = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    ptr = torch.tensor([0, 2, 2, 7])  # the middle segment is empty
    for reduce in accel.REDUCTIONS:
        assert torch.autograd.gradcheck(lambda x, r=reduce: segment(x, ptr, reduce=r), (src,))


@pytest.mark.parametrize(("values", "gradient", "expected"), [
    ([1.0, 1.0, 0.5], 1.0, [0.5, 0.5, 0.0]),
    # a negative gradient: torch.segment_reduce's max backward gave each tied row the whole -1
    ([1.0, 0.0, 1.0], -1.0, [-0.5, 0.0, -0.5]),
    ([2.0, 2.0, 2.0], -3.0, [-1.0, -1.0, -1.0]),
    ([0.0, -1.0, -1.0], -2.0, [-2.0, 0.0, 0.0]),  # no tie at the maximum
    ([-1.0, -1.0], 0.5, [0.25, 0.25]),
])
def test_a_tie_shares_the_fallbacks_gradient(monkeypatch, values, gradient, expected):
    monkeypatch.setattr(accel, "WITH_TORCH_SCATTER", False)
    src = torch.tensor(values, dtype=torch.float64).view(-1, 1).requires_grad_()
    (segment(src, torch.tensor([0, len(values)]), reduce="max") * gradient).sum().backward()
    assert src.grad.flatten().tolist() == expected


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 5), min_size=1, max_size=5), columns=st.integers(1, 40),
       seed=st.integers(0, 2**16), torch_scatter=st.sampled_from([False, True] if accel.WITH_TORCH_SCATTER
                                                                 else [False]))
def test_tied_maxima_get_a_valid_gradient(sizes, columns, seed, torch_scatter):
    """Values from a small set (ties are common), any signs in the gradient from above: each segment's
    gradient reaches only its maxima and adds up to the gradient from above (nothing lost or doubled);
    torch's own path shares it evenly, as ``amax`` does, torch-scatter (where installed) hands it to one
    of them."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, 3, (sum(sizes), columns), generator=gen).double().requires_grad_()
    ptr = torch.tensor([0, *torch.tensor(sizes).cumsum(0).tolist()])
    upstream = torch.randn(len(sizes), columns, generator=gen, dtype=torch.float64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accel, "WITH_TORCH_SCATTER", torch_scatter)
        (segment(src, ptr, reduce="max") * upstream).sum().backward()
    for g, (start, end) in enumerate(zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True)):
        if start == end:
            continue
        rows, grad = src[start:end].detach(), src.grad[start:end]
        at_max = rows == rows.amax(dim=0)
        assert bool((grad[~at_max] == 0).all())
        torch.testing.assert_close(grad.sum(dim=0), upstream[g])
        if not torch_scatter:
            torch.testing.assert_close(grad, at_max * upstream[g] / at_max.sum(dim=0))


@pytest.mark.parametrize("dim", [0, 1])
def test_a_mean_over_group_sizes_given_is_the_mean_to_the_bit(scatter_path, dim):
    """A graph's in-degrees are counted once and handed to every layer's mean (``count``): the same
    values and gradients as counting them in each call."""
    gen = torch.Generator().manual_seed(2)
    src = torch.randn(30, 12, 4, generator=gen)
    index = torch.randint(0, 9, (src.shape[dim],), generator=gen)
    index[index == 5] = 6  # group 5 stays empty: 0 / 1
    results = []
    for count in (None, group_sizes(index, 10)):
        x = src.clone().requires_grad_()
        out = scatter_mean(x, index, dim=dim, dim_size=10, count=count)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        results.append((out.detach(), x.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_fallback_equals_torch_scatter(monkeypatch):
    require_torch_scatter("torch-scatter is not installed; nothing to compare the fallback with")
    gen = torch.Generator().manual_seed(1)
    src, index = torch.randn(50, 4, generator=gen), torch.randint(0, 8, (50,), generator=gen)
    ptr = torch.tensor([0, 10, 10, 30, 50])
    with_extra = [scatter(src, index, dim_size=9, reduce=r) for r in accel.REDUCTIONS]
    with_extra += [segment(src, ptr, reduce=r) for r in accel.REDUCTIONS]
    monkeypatch.setattr(accel, "WITH_TORCH_SCATTER", False)
    without = [scatter(src, index, dim_size=9, reduce=r) for r in accel.REDUCTIONS]
    without += [segment(src, ptr, reduce=r) for r in accel.REDUCTIONS]
    for a, b in zip(with_extra, without, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: scatter(torch.zeros(3), torch.tensor([0, 1])), "one entry per slice"),
        (lambda: scatter(torch.zeros(3), torch.zeros(3, dtype=torch.int64), reduce="median"),
         "unknown reduce"),
        (lambda: segment(torch.zeros(3), torch.tensor([0, 2])), "offsets from 0 to 3"),
        (lambda: segment(torch.zeros(3), torch.tensor([1, 3])), "offsets from 0 to 3"),
        (lambda: segment(torch.zeros(3), torch.tensor([0, 2, 1, 3])), "non-decreasing"),
        (lambda: segment(torch.zeros(3), torch.tensor([0, 3]), reduce="min"), "unknown reduce"),
        (lambda: scatter(torch.zeros(3), torch.tensor([0, 1, 1]), dim_size=2, count=torch.ones(3)),
         r"count is the \(dim_size,\) = \(2,\) group sizes of a mean; got \(3,\)"),
        (lambda: scatter(torch.zeros(3), torch.tensor([0, 1, 1]), dim_size=2, reduce="sum",
                         count=torch.ones(2)), "for reduce='sum'"),
    ],
)
def test_bad_inputs(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------------------------------
# scripts/build_accel.py (make accel). Nothing here compiles or installs: a real build takes minutes and
# would change the environment every other test runs in; CI runs the real one (`make accel`).


def load_build_script():
    spec = importlib.util.spec_from_file_location("build_accel", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_build(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BUILD_SCRIPT), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


def test_cache_key_names_everything_the_binary_depends_on():
    build = load_build_script()
    key = build.cache_key("2.1.2", {"torch": "2.13.0+cpu", "cuda": "cpu"})
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert key.startswith(f"torch_scatter-2.1.2-torch2.13.0+cpu-cpu-{python}-")
    others = [build.cache_key("2.1.1", {"torch": "2.13.0+cpu", "cuda": "cpu"}),
              build.cache_key("2.1.2", {"torch": "2.12.1+cpu", "cuda": "cpu"}),
              build.cache_key("2.1.2", {"torch": "2.13.0", "cuda": "12.6"})]
    assert len({key, *others}) == 4
    assert "-cu126-" in others[2]


def test_dry_run_reports_the_plan_and_finds_a_cached_wheel(tmp_path):
    done = run_build("--dry-run", "--cache", str(tmp_path))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["torch"] == torch.__version__ and plan["python"] == sys.executable
    assert plan["cached_wheel"] is None and Path(plan["cache"]).parent == tmp_path
    assert plan["installed"] == (torch_scatter_version() if accel.WITH_TORCH_SCATTER else None)
    wheel = Path(plan["cache"]) / "torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    assert json.loads(run_build("--dry-run", "--cache", str(tmp_path)).stdout)["cached_wheel"] == str(wheel)


def torch_scatter_version() -> str:
    import torch_scatter

    return torch_scatter.__version__


def test_without_a_compiler_it_says_so_and_installs_nothing(tmp_path):
    before = installed_torch_scatter()
    done = run_build("--rebuild", "--cache", str(tmp_path), CXX=str(tmp_path / "no-such-c++"))
    assert done.returncode == load_build_script().EXIT_NO_COMPILER
    assert "no C++ compiler found" in done.stdout and "no-such-c++" in done.stdout
    assert "keeps working without it" in done.stdout
    assert not list(tmp_path.rglob("*.whl"))
    assert installed_torch_scatter() == before


def test_a_failed_build_shows_the_log_and_installs_nothing(tmp_path):
    before = installed_torch_scatter()
    source = tmp_path / "torch_scatter_src"
    source.mkdir()
    (source / "setup.py").write_text('raise SystemExit("torch-scatter did not compile (on purpose)")\n')
    done = run_build("--rebuild", "--cache", str(tmp_path / "cache"), "--source", str(source),
                     CXX=sys.executable)  # any existing program passes the compiler check
    assert done.returncode == load_build_script().EXIT_BUILD_FAILED, done.stdout + done.stderr
    assert "the build failed" in done.stdout and "did not compile (on purpose)" in done.stdout
    assert "nothing was installed" in done.stdout
    assert not list((tmp_path / "cache").rglob("*.whl"))
    assert installed_torch_scatter() == before


def installed_torch_scatter() -> str | None:
    """Where torch-scatter is installed for this interpreter, looked up afresh (None: not installed)."""
    importlib.invalidate_caches()
    spec = importlib.util.find_spec("torch_scatter")
    return spec.origin if spec else None


# --------------------------------------------------------------------------------------------------
# benchmarks/bench_accel.py compares the paths on the kit's own work: its cases must compute the same
# values on both (it checks that before timing) and its step counter must see torch-scatter's kernels.


def test_the_benchmark_cases_agree_on_the_tiny_competition(tiny_competition):
    require_torch_scatter("torch-scatter is not installed; the benchmark has nothing to compare")
    from benchmarks import bench_accel

    tiles, layout = bench_accel.small_competition_examples(tiny_competition)
    gen = torch.Generator().manual_seed(0)
    cases = [bench_accel.tile_pooling_case("tiny", tiles, 8, gen),
             bench_accel.neighbour_mean_case("tiny", layout, 4, 8, gen),
             bench_accel.row_scatter_case("tiny", layout, 4, 8, gen)]
    for case in cases:
        rows = bench_accel.time_case(case, repeats=1)  # checks both paths (and PyG's) agree first
        assert [row.passes for row in rows] == ["forward", "forward + backward"]
        assert all(row.torch_s > 0 and row.extra_s > 0 for row in rows)
    pooled = cases[0].run(True)
    assert bench_accel.scatter_kernels(lambda: cases[0].run(True)) == 2  # segment_csr mean and max
    assert bench_accel.scatter_kernels(lambda: cases[0].run(False)) == 0
    assert pooled.shape == (len(tiles), 16)
