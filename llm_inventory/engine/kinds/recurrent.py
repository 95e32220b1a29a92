"""Rules shared by the kinds that keep a fixed state per sequence — Mamba, Gated DeltaNet,
KDA, lightning attention, short convolutions: a conv window and a recurrent state, both
overwritten every step, whatever the sequence's length.

- State per sequence and layer, on one of `tp` ranks: conv_window positions × the rank's conv
  channels in the conv dtype, plus the recurrent state ÷ tp in the state dtype. A rank's conv
  channels are channels ÷ tp, once B/C groups that tp does not divide are widened to tp
  groups (vLLM `MambaStateShapeCalculator.mamba2_state_shape` and
  `extra_groups_for_head_shards`, vllm/model_executor/layers/mamba/mamba_utils.py). The conv
  window is kernel − 1 positions, as vLLM keeps it; transformers' cache keeps all kernel
  positions (`conv_states` of shape [batch, channels, kernel]).
- A paged pool (vLLM V1): each such layer is a `MambaSpec` layer holding one page per
  request (`MambaSpec.max_memory_usage_bytes`, vllm/v1/kv_cache_interface.py, with
  mamba_cache_mode "none": vLLM 0.19 leaves prefix caching off for hybrid models unless asked,
  `EngineArgs._set_default_args`, vllm/engine/arg_utils.py); with prefix caching asked for,
  mode "align" holds two pages per request. The page is padded to the attention page
  (engine/serving/paged.py).
- Released when the sequence ends, never in part.
"""

from __future__ import annotations

from llm_inventory.engine.kinds.base import Kind
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.errors import InputError
from llm_inventory.units import bytes_for


def conv_channels_per_rank(layer: StateLayer, tp: int) -> int:
    """The conv window's channels on one of `tp` ranks (groups widened to tp when tp does
    not divide them, as vLLM shards Mamba-2's B and C with the heads that read them)."""
    groups = layer.conv_groups
    extra = max(0, tp - groups) if groups and groups % tp else 0
    return -(-(layer.conv_channels + extra * layer.group_channels) // tp)


class FixedState(Kind):
    """A mixer whose state per sequence is fixed in size (see the module rules)."""

    grows = False
    holds_tokens = False
    paged_state = True
    release = "fixed size, overwritten every step: freed when the sequence ends, never partially"

    def validate(self, layer: StateLayer) -> None:
        if layer.state_elements + layer.conv_channels * layer.conv_window < 1:
            raise InputError("state_elements", f"a {layer.kind} layer needs its state size")

    def conv_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        """Bytes of one sequence's conv window on one rank (`dtype`: the state's)."""
        elements = conv_channels_per_rank(layer, tp) * layer.conv_window
        return bytes_for(elements, layer.conv_dtype or dtype) if elements else 0

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        state = bytes_for(-(-layer.state_elements // tp), dtype) if layer.state_elements else 0
        return self.conv_bytes(layer, dtype, tp) + state

    def request_blocks(
        self, window: int | None, block_size: int, max_model_len: int, batched: int,
        prefix_caching: bool = False,
    ) -> int:
        """Pages one request holds, no speculative blocks (`MambaSpec.max_memory_usage_bytes`,
        vllm/v1/kv_cache_interface.py): one with mamba_cache_mode "none"; two with prefix
        caching on, whose default mode is "align" (the running state beside the last
        block-aligned one it caches; `CacheConfig.mamba_cache_mode`, vllm/config/cache.py)."""
        return 2 if prefix_caching else 1
