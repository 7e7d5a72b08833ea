"""File stems and model specs: what a synthetic graph is called and which kind of model it comes from.

Train and valid stems look like the released ones (``resnet50.4x4.fp16``,
``bert_en_uncased_L-12_H-768_A-12_batch_size_16_train``, tile kernels
``alexnet_train_batch_32_-1bae27a41d70f4dc``); test stems are anonymised 32-hex strings drawn from
the seed alone, so they say nothing about the graph. A name is not decoration: the batch size,
precision, hidden size, head count and train/inference mode it states are the ones the graph uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CNN_MODELS = (
    "resnet50", "resnet101", "resnet_v1_50_official", "resnet_v2_152", "efficientnet_b0", "efficientnet_b4",
    "efficientnet_b7", "inception_v2", "inception_v3", "mobilenet_v2", "densenet121", "vgg16", "alexnet",
    "retinanet", "mask_rcnn", "shapemask", "ssd_mobilenet_v1", "xception",
)
CNN3D_MODELS = ("unet_3d", "unet3d_medical", "i3d_kinetics")
XLA_TRANSFORMER_MODELS = (
    "bert_pretraining", "mlperf_bert", "transformer", "transformer_tf2", "gpt2_small", "t5_small",
)
MLP_MODELS = ("ncf", "dlrm", "wide_deep", "magenta_dynamic", "lstm_lm", "deepspeech")

# name -> (layers, hidden, heads) of the TF-Hub style NLP models of layout:nlp.
NLP_MODELS = {
    "albert_en_base": (12, 768, 12), "albert_en_large": (24, 1024, 16),
    "bert_en_cased_L-12_H-768_A-12": (12, 768, 12),
    "electra_small": (12, 256, 4), "electra_base": (12, 768, 12), "talking-heads_base": (12, 768, 12),
    "experts_bert_pubmed": (12, 768, 12), "experts_bert_wiki_books": (12, 768, 12),
    "mobilebert_en_uncased": (24, 512, 4), "lambert_en_uncased_L-24_H-1024_A-16": (24, 1024, 16),
}
_SMALL_BERT_LAYERS = (2, 4, 6, 8, 10, 12)
_SMALL_BERT_HIDDEN = (128, 256, 512, 768)


@dataclass(frozen=True)
class ModelSpec:
    """What a graph is: its family, its stem and the sizes the stem announces."""

    family: str  # cnn, cnn3d, transformer, mlp
    stem: str
    batch: int
    float_type: str  # bf16 or f32
    train: bool
    dims: dict = field(default_factory=dict, hash=False, compare=False)  # hidden, heads, seq, layers


def _xla_spec(rng: np.random.Generator) -> ModelSpec:
    family = str(rng.choice(["cnn", "cnn3d", "transformer", "mlp"], p=[0.55, 0.1, 0.22, 0.13]))
    models = {"cnn": CNN_MODELS, "cnn3d": CNN3D_MODELS, "transformer": XLA_TRANSFORMER_MODELS,
              "mlp": MLP_MODELS}
    model = str(rng.choice(models[family]))
    batch = int(rng.choice([1, 8, 16, 24, 32, 64, 128] if family != "cnn3d" else [1, 2, 4, 8]))
    pattern = int(rng.integers(3))
    if pattern == 0:
        precision = str(rng.choice(["fp16", "bf16", "fp32"], p=[0.45, 0.35, 0.2]))
        stem = f"{model}.{rng.choice(['2x2', '4x4', '8x8'])}.{precision}"
        train = bool(rng.random() < 0.8)
    elif pattern == 1:
        precision = str(rng.choice(["bf16", "fp32"], p=[0.7, 0.3]))
        train = bool(rng.random() < 0.6)
        stem = f"{model}_batch_{batch}_{'train' if train else 'eval'}"
    else:
        precision = str(rng.choice(["bf16", "fp32"], p=[0.7, 0.3]))
        train = bool(rng.random() < 0.6)
        stem = f"{model}_batch_{batch}_{precision}"
    dims: dict = {}
    if family == "transformer":
        hidden = int(rng.choice([256, 512, 768, 1024]))
        dims = {"hidden": hidden, "heads": max(2, hidden // 64), "seq": int(rng.choice([128, 128, 256, 512])),
                "layers": int(rng.choice([2, 4, 6, 12]))}
    return ModelSpec(family, stem, batch, "f32" if precision == "fp32" else "bf16", train, dims)


def _nlp_spec(rng: np.random.Generator) -> ModelSpec:
    if rng.random() < 0.35:
        layers, hidden = int(rng.choice(_SMALL_BERT_LAYERS)), int(rng.choice(_SMALL_BERT_HIDDEN))
        heads = hidden // 64
        model = f"small_bert_bert_en_uncased_L-{layers}_H-{hidden}_A-{heads}"
    else:
        model = str(rng.choice(sorted(NLP_MODELS)))
        layers, hidden, heads = NLP_MODELS[model]
    batch = int(rng.choice([8, 16, 32, 64]))
    train = bool(rng.random() < 0.5)
    stem = f"{model}_batch_size_{batch}_{'train' if train else 'test'}"
    dims = {"hidden": hidden, "heads": heads, "seq": int(rng.choice([128, 128, 128, 256, 512])),
            "layers": layers}
    return ModelSpec("transformer", stem, batch, "bf16" if rng.random() < 0.7 else "f32", train, dims)


def layout_specs(rng: np.random.Generator, source: str, count: int) -> list[ModelSpec]:
    """``count`` model specs with distinct stems for a layout source (``xla`` or ``nlp``)."""
    make = _xla_spec if source == "xla" else _nlp_spec
    specs: list[ModelSpec] = []
    seen: set[str] = set()
    while len(specs) < count:
        spec = make(rng)
        if spec.stem not in seen:
            seen.add(spec.stem)
            specs.append(spec)
    return specs


def tile_specs(rng: np.random.Generator, count: int) -> list[ModelSpec]:
    """``count`` kernel specs: an xla model each, stems ``<model stem>_<signed 64-bit hex>``."""
    specs: list[ModelSpec] = []
    seen: set[str] = set()
    while len(specs) < count:
        base = _xla_spec(rng)
        digest = "".join(f"{b:02x}" for b in rng.integers(0, 256, size=8, dtype=np.uint8))
        digest = digest.lstrip("0") or "0"
        stem = f"{base.stem}_{'-' if rng.random() < 0.5 else ''}{digest}"
        if stem not in seen:
            seen.add(stem)
            specs.append(ModelSpec(base.family, stem, base.batch, base.float_type, base.train, base.dims))
    return specs


def anonymous_stems(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct 32-hex test stems (random bytes: nothing about the graph leaks)."""
    stems: list[str] = []
    while len(stems) < count:
        stem = "".join(f"{b:02x}" for b in rng.integers(0, 256, size=16, dtype=np.uint8))
        if stem not in stems:
            stems.append(stem)
    return stems
