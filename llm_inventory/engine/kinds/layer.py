"""The state record a layer kind sizes: a run of identical layers and the facts kinds read."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class StateLayer(BaseModel):
    """A run of `count` consecutive identical layers of one kind, starting at layer `first`.

    The fields are the facts kinds size state from; each kind reads the ones it needs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    first: NonNegativeInt = 0
    count: PositiveInt = 1
    kv_heads: NonNegativeInt = 0
    k_head_dim: NonNegativeInt = 0
    v_head_dim: NonNegativeInt = 0
    window: PositiveInt | None = None
    latent_dim: NonNegativeInt = 0
    encoder_tokens: NonNegativeInt = 0
    state_elements: NonNegativeInt = 0
    dtype: str | None = None  # overrides the request's KV dtype (SSM state is often fp32)
    # A fixed-state layer's conv window, kept apart from `state_elements` (the recurrent
    # state): `conv_window` positions × `conv_channels` channels in `conv_dtype` (None: as
    # the state). `conv_groups` groups of `group_channels` channels among them (Mamba-2's
    # B and C) are replicated when tensor parallelism does not divide the groups.
    conv_channels: NonNegativeInt = 0
    conv_window: NonNegativeInt = 0
    conv_groups: NonNegativeInt = 0
    group_channels: NonNegativeInt = 0
    conv_dtype: str | None = None
    index_dim: NonNegativeInt = 0  # a sparse-attention indexer's key per token (or entry)
    ratio: PositiveInt | None = None  # source tokens per compressed entry (DeepSeek-V4)

    def elements_per_token(self) -> int:
        """Elements one token adds to one layer of this kind (0 for fixed-size kinds)."""
        from llm_inventory.engine import kinds

        return kinds.get(self.kind).elements_per_token(self)
