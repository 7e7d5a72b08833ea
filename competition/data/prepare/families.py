"""Model families: the model a graph comes from, read from its file stem (``model_family``), so that
near-twins (the same model at other batch sizes, topologies or precisions) go to one side of the split."""

from __future__ import annotations

import re

_FINGERPRINT = re.compile(r"_-?(?=[0-9a-f]*[0-9])[0-9a-f]{6,16}$")  # tile kernels: <model stem>_<signed hex>
_BATCH = re.compile(r"^(batch|bs)\d*$")
_RUN_SETTING = re.compile(
    r"^(\d+|\d+x\d+(x\d+)?|train|training|eval|evaluation|test|inference|infer|"
    r"fp16|fp32|bf16|f16|f32|float16|float32|bfloat16|size|shards?|\d+shards?)$"
)


def model_family(stem: str) -> str:
    """The model a graph comes from, read from its file stem: the stem without its run settings.

    The rule, applied in order to the lower-cased stem:

    1. drop a trailing kernel fingerprint ``_<hex>`` or ``_-<hex>`` (6-16 hex digits, one a digit):
       tile kernels are named ``<model stem>_<fingerprint>``;
    2. cut at the first ``.``: ``resnet50.4x4.fp16`` names topology and precision after it;
    3. split at ``_`` and cut at the first ``batch`` token (``batch``, ``batch32``, ``bs``):
       ``_batch_size_16_train``, ``_batch_32_bf16`` are run settings;
    4. drop trailing run-setting tokens: numbers, topologies (``2x2``), modes (``train``, ``eval``,
       ``test``, ``inference``), precisions (``fp16``, ``bf16``, ``f32`` ...), ``size``, ``shard(s)``.

    What remains names the model, including its size when the name states one
    (``small_bert_bert_en_uncased_L-4_H-256_A-4``, ``efficientnet_b7``): a different size is a
    different model. A stem that would come out empty is its own family.

    >>> model_family("resnet50.4x4.fp16"), model_family("resnet50_batch_32_train")
    ('resnet50', 'resnet50')
    >>> model_family("alexnet_train_batch_32_-1bae27a41d70f4dc")
    'alexnet'
    >>> model_family("bert_en_uncased_L-12_H-768_A-12_batch_size_16_train")
    'bert_en_uncased_l-12_h-768_a-12'
    >>> model_family("mlperf_maskrcnn_1_shard_batch_4")
    'mlperf_maskrcnn'
    """
    name = stem.lower()
    name = _FINGERPRINT.sub("", name)
    name = name.split(".", 1)[0]
    tokens = name.split("_")
    for i, token in enumerate(tokens):
        if _BATCH.match(token):
            tokens = tokens[:i]
            break
    while tokens and (not tokens[-1] or _RUN_SETTING.match(tokens[-1])):
        tokens.pop()
    return "_".join(tokens) or stem.lower()
