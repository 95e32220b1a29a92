"""Cross-layer attention (Hunyuan's CLA): a layer that reuses the keys and values the layer
before it computed, so it has no k/v projections — but it still caches them.

With `use_cla`, Hunyuan's checkpoint modelling code (`modeling_hunyuan.py`,
`HunYuanAttention.__init__`) makes every layer with `layer_idx % cla_share_factor != 0` a
'cross' layer: q_proj and o_proj (and the q/k norms) but no k_proj or v_proj;
`HunYuanModel.forward` hands it the K/V of the last layer that computed its own. Its forward
still writes those K/V into its own slot of the cache (`past_key_value.update(...,
self.layer_idx)`), and vLLM's `HunYuanCrossAttention` (vllm/model_executor/models/
hunyuan_v1.py) is an `Attention` of `AttentionType.ENCODER_DECODER` with its own KV cache:
so the layer keeps full attention's state (K + V per token), not the shared kind's nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry
from llm_inventory.engine.kinds.attention import projections
from llm_inventory.engine.kinds.base import ShapeRule
from llm_inventory.engine.kinds.full import FullAttention
from llm_inventory.spec.model import Stack

_OWN_KV = re.compile(r"[kv]_proj")


class CrossLayerAttention(FullAttention):
    name = "cla"
    release = ("held until the sequence ends: a copy of the K/V the layer reuses from the "
               "one before it")

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        for entry in projections(prefix, stack):
            if not _OWN_KV.search(entry[0]):
                yield entry

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        return [rule for rule in super().shape_rules(stack)
                if not _OWN_KV.search(rule.pattern.pattern)]

    def label(self, window: int | None) -> str:
        return "cla (K/V reused from the layer before)"


KIND = CrossLayerAttention()
