"""The gnn and the scatter helpers on a CUDA GPU: skipped where torch sees none (the project's machine
and CI); run where one is lent (``pytest tests/test_gpu.py``).

What a competitor on a GPU notebook relies on: training and prediction run on the GPU, a model trained
there loads and ranks the same on a CPU-only machine, GST and the engineered rows move to the GPU with
the model, chunked prediction equals one pass, the torch fallbacks of ``solutions.compute.accel`` give the
CPU's values on the GPU, and ``solve --device auto`` picks the GPU and writes a valid submission.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau
from test_gnn import FAST, LAYOUT, TILE, fit
from test_gnn_engineered import chunked_prediction_case

from competition.data.graphs import expected_from_data_dir, iter_split
from competition.submission import validate_submission
from solutions.compute import accel
from solutions.methods.base import FitOptions
from solutions.methods.gnn import GNNRanker
from solutions.methods.gnn.train import predict_layout
from solutions.solve.checks import resolve_device
from solutions.solve.runner import solve

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA GPU")
GPU, CPU = torch.device("cuda"), torch.device("cpu")


def test_auto_picks_the_gpu():
    assert resolve_device("auto") == "cuda"


@pytest.mark.parametrize("collection", [TILE, LAYOUT], ids=lambda c: c.name)
@pytest.mark.parametrize("engineered", [False, True], ids=["plain", "engineered"])
def test_trained_on_the_gpu_ranks_the_same_on_the_cpu(tiny_competition, tmp_path, collection, engineered):
    if engineered and collection is TILE:
        pytest.skip("engineered rows are a layout setting")
    ranker = fit(tiny_competition, collection, {"engineered_features": engineered}, device="cuda")
    assert next(ranker.model.parameters()).device.type == "cuda" and ranker.result.steps > 0
    # layout:xla:random starts from the heuristic's order by default, read off the engineered rows on the GPU
    prior = 3.0 if engineered and collection is LAYOUT else 0.0
    assert getattr(ranker.model, "heuristic_prior", 0.0) == prior
    ranks_the_same_on_the_cpu(ranker, collection, tiny_competition, tmp_path)


def ranks_the_same_on_the_cpu(ranker: GNNRanker, collection, tiny_competition, tmp_path) -> GNNRanker:
    """Save a GPU-trained ranker, load it onto the CPU and check it ranks every test graph of ``tiny`` as
    on the GPU; the loaded ranker."""
    ranker.save(tmp_path / "model")
    on_cpu = GNNRanker.load(tmp_path / "model")  # map_location cpu: a GPU model opens on a CPU-only machine
    assert next(on_cpu.model.parameters()).device.type == "cpu"
    for _, graph in iter_split(tiny_competition / "public", collection, "test"):
        gpu_scores, cpu_scores = ranker.predict(collection, graph), on_cpu.predict(collection, graph)
        assert np.isfinite(gpu_scores).all() and gpu_scores.shape == (graph.num_configs,)
        # float32 kernels differ between the devices; the ranking is what a submission keeps
        np.testing.assert_allclose(gpu_scores, cpu_scores, rtol=1e-3, atol=1e-3 * np.ptp(cpu_scores) + 1e-6)
        if np.ptp(cpu_scores) > 0:
            assert kendalltau(gpu_scores, cpu_scores).statistic > 0.99
    return on_cpu


def test_a_cpu_model_moved_to_the_gpu_predicts_the_same(tiny_competition, tmp_path):
    ranker = fit(tiny_competition, LAYOUT, {"engineered_features": True})
    ranker.save(tmp_path / "model")
    moved = GNNRanker.load(tmp_path / "model")
    moved.set_device("cuda")
    for _, graph in iter_split(tiny_competition / "public", LAYOUT, "test"):
        expected = ranker.predict(LAYOUT, graph)
        np.testing.assert_allclose(moved.predict(LAYOUT, graph), expected, rtol=1e-3,
                                   atol=1e-3 * np.ptp(expected) + 1e-6)


def test_gst_trains_on_the_gpu(tiny_competition):
    ranker = fit(tiny_competition, LAYOUT, {"training": "gst", "fusion": "early", "config_attention": False,
                                            "segment_size": 8, "engineered_features": True}, device="cuda")
    assert ranker.summary()["gst"]["segments"] > 1 and ranker.result.steps > 0
    for _, graph in iter_split(tiny_competition / "public", LAYOUT, "test"):
        assert np.isfinite(ranker.predict(LAYOUT, graph)).all()


@pytest.mark.parametrize("fusion", ["early", "intermediate"])
def test_chunked_prediction_on_the_gpu_equals_one_pass_and_the_cpu(fusion):
    example, model = chunked_prediction_case(fusion)
    on_cpu = predict_layout(model, example, device=CPU)
    model.to(GPU)
    one_pass = predict_layout(model, example, device=GPU)
    chunked = predict_layout(model, example, device=GPU, batch_nodes=1)
    np.testing.assert_allclose(one_pass, chunked, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one_pass, on_cpu, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduce", accel.REDUCTIONS)
def test_scatter_helpers_give_the_cpu_values_and_gradients_on_the_gpu(reduce):
    gen = torch.Generator().manual_seed(0)
    src = torch.randn(50, 4, generator=gen, dtype=torch.float64)
    index = torch.randint(0, 9, (50,), generator=gen)
    index[index == 3] = 4  # an empty group
    ptr = torch.tensor([0, 5, 5, 20, 50])
    results = {}
    for device in (CPU, GPU):
        x = src.to(device).detach().requires_grad_(True)  # a leaf on each device
        scattered = accel.scatter(x, index.to(device), dim_size=10, reduce=reduce)
        segmented = accel.segment(x, ptr.to(device), reduce=reduce)
        (scattered.square().sum() + segmented.sum()).backward()
        results[device.type] = (scattered.detach().cpu(), segmented.detach().cpu(), x.grad.cpu())
    for on_cpu, on_gpu in zip(results["cpu"], results["cuda"], strict=True):
        torch.testing.assert_close(on_gpu, on_cpu)


@pytest.mark.slow
def test_solve_with_device_auto_trains_on_the_gpu_and_writes_a_valid_submission(tiny_competition, tmp_path):
    report = solve(tiny_competition / "public", "gnn", tmp_path / "gnn.csv", method_params=FAST,
                   options=FitOptions(device="auto", progress=False), log=lambda line: None)
    assert report is not None and report.options.device == "cuda"
    expected = expected_from_data_dir(tiny_competition / "public")
    assert validate_submission(tmp_path / "gnn.csv", expected).ok
