"""Where a plan's bytes live with offload on: the weights a worker moves to host memory, the
KV tier below its GPU pool, the host memory of a node, and the time the host link adds.

The engine's rules (`ServingEngine.offload_rules`) say how many bytes move and how its host
pool is sized; this module applies them to a sized plan. Nothing here runs when the
request's offload block is inactive, so every figure of a plan stays what it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from llm_inventory.engine.offload import (
    KvTier,
    Offload,
    OffloadRules,
    TierContext,
    reload_seconds,
)
from llm_inventory.errors import InputError

if TYPE_CHECKING:
    from llm_inventory.engine.placement.facts import ModelFacts
    from llm_inventory.engine.placement.fit import Sized
    from llm_inventory.engine.roofline import Timing
    from llm_inventory.engine.serving import ServingEngine


class DeviceTiers(BaseModel):
    """One worker's bytes by tier (the binding worker's)."""

    gpu_weight_bytes: int
    gpu_kv_bytes: int
    host_weight_bytes: int
    host_kv_bytes: int
    host_kv_tokens: int
    disk_kv_bytes: int

    @property
    def host_bytes(self) -> int:
        return self.host_weight_bytes + self.host_kv_bytes


class Tiers(BaseModel):
    """GPU, host and disk bytes of a plan, a node's host memory, and the host link's time."""

    per_device: DeviceTiers
    devices_per_node: int  # devices of one replica on one node (its host memory's share)
    host_bytes_per_node: int
    disk_bytes_per_node: int
    host_memory_bytes: int | None  # the node's host RAM (None: not known, so not checked)
    host_fits: bool | None  # None: not checked
    host_link_bytes_per_s: int | None  # per device and direction (None: not known)
    reload_tokens: int  # prefix tokens each request reloads from the host tier
    reload_s: float | None  # their reload on one worker's link, added to the TTFT
    weight_stream_s: float | None  # one forward's read of the moved weights over the link
    kv_host_exact: bool = True  # the host tier's tokens are the engine's arithmetic
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)  # what the plan should warn of
    sources: list[str] = Field(default_factory=list)
    startup: list[str] = Field(default_factory=list)  # the engine's lines about its host tier


def rules(engine: ServingEngine, offload: Offload) -> OffloadRules | None:
    """The engine's offload rules when offload is asked (InputError when it has none or
    refuses a setting); None when nothing is asked."""
    if not offload.active:
        return None
    found = engine.offload_rules()
    if found is None:
        raise InputError("offload", f"{engine.label}: offload and KV tiers are not modelled "
                         "for this engine; they are for vLLM and SGLang")
    found.refuse(offload)
    return found


def layer_bytes(facts: ModelFacts, tp: int, pp: int, ep: int, weights: list[int]) -> list[int]:
    """Decoder-layer weight bytes one rank of each stage holds (what offload can move):
    its stage's weights without the embeddings, LM head and buffers where the layout says
    them apart, else the stage's weights."""
    layout = facts.layout
    if layout.coarse_total is not None or facts.engine.stage_weights(
            layout, facts.ranges(pp), facts.settings) is not None:
        return list(weights)
    prefix = facts._device_prefix(tp, ep)
    return [min(w, int(prefix[r.stop] - prefix[r.start]))
            for w, r in zip(weights, facts.ranges(pp), strict=True)]


def largest_layer(facts: ModelFacts, tp: int, pp: int, ep: int, stage: range) -> int:
    """The most bytes one decoder layer of `stage` holds on a rank (0 when unknown)."""
    if facts.layout.coarse_total is not None or not len(stage):
        return 0
    prefix = facts._device_prefix(tp, ep)
    return int(max(prefix[i + 1] - prefix[i] for i in stage))


def moved(facts: ModelFacts, tp: int, pp: int, ep: int, weights: list[int]) -> list[int]:
    """Bytes each stage's rank moves to host memory ([] when nothing is asked)."""
    found = rules(facts.engine, facts.request.offload)
    if found is None or not facts.request.offload.weight_bytes:
        return []
    return [found.weights_moved(facts.request.offload, b)
            for b in layer_bytes(facts, tp, pp, ep, weights)]


def tiers(facts: ModelFacts, sized: Sized, tokens: int, bytes_per_token: int,
          page_bytes: int, pool_bytes: int) -> Tiers | None:
    """The plan's tiers, from its binding worker's pool (None when nothing is asked)."""
    offload = facts.request.offload
    found = rules(facts.engine, offload)
    if found is None:
        return None
    from llm_inventory.spec.host_links import host_link, host_memory

    shape, b = sized.shape, sized.binding
    ranks = shape.devices
    kv: KvTier = found.kv_tier(offload, TierContext(
        ranks=ranks, pool_tokens=tokens, bytes_per_token=bytes_per_token,
        page_tokens=facts.settings.block_size, page_bytes=page_bytes))
    host_weights = sized.moved[b] if sized.moved else 0
    device = DeviceTiers(gpu_weight_bytes=sized.weights[b], gpu_kv_bytes=max(0, pool_bytes),
                         host_weight_bytes=host_weights, host_kv_bytes=kv.host_bytes,
                         host_kv_tokens=kv.host_tokens, disk_kv_bytes=kv.disk_bytes)
    from llm_inventory.engine.placement.fit import devices_used

    # the devices of one node the plan's replicas use (each runs a worker)
    per_node = max(1, min(facts.per_node, facts.request.count,
                          devices_used(shape, max(1, sized.dp))))
    # every device of a node runs a worker like the binding one: the node's host memory
    # holds each worker's moved weights and host KV (the binding worker's, the largest)
    per_worker_host = max(sum(sized.moved) // max(1, len(sized.moved)), host_weights) \
        if sized.moved else 0
    host_node = per_node * (per_worker_host + kv.host_bytes)
    notes = [kv.note] if kv.note else []
    warnings = [kv.warning] if kv.warning else []
    if host_weights and found.copies_on_forward:
        from llm_inventory.units import format_bytes

        layer = largest_layer(facts, shape.tp, shape.pp, shape.ep, sized.ranges[b])
        warnings.append(
            f"{found.label} releases whose forward copies an offloaded layer back to the GPU "
            "(maybe_offload_to_cpu without UVA) profile a peak up to one layer's weights "
            f"higher ({format_bytes(layer)}), which the reserve does not count")
    memory = offload.host_memory_bytes or host_memory(facts.request.device.id)
    if memory is None:
        notes.append(f"host memory per node not checked: the catalog states no host RAM for "
                     f"{facts.request.device.id} nodes (give --host-memory)")
    link = offload.host_link_bytes_per_s or host_link(facts.request.device.id)
    if link is None and (offload.reload_tokens or offload.weight_bytes):
        notes.append(f"no host link known for {facts.request.device.id}: reload and "
                     "weight-streaming times not estimated (give --host-link)")
    reload = reload_seconds(offload.reload_tokens, bytes_per_token, link)
    stream = reload_seconds(1, host_weights, link) if host_weights else 0.0
    return Tiers(per_device=device, devices_per_node=per_node, host_bytes_per_node=host_node,
                 disk_bytes_per_node=per_node * kv.disk_bytes, host_memory_bytes=memory,
                 host_fits=None if memory is None else host_node <= memory,
                 host_link_bytes_per_s=link, reload_tokens=offload.reload_tokens,
                 reload_s=reload, weight_stream_s=stream, kv_host_exact=kv.exact,
                 notes=notes, warnings=warnings, sources=list(found.sources),
                 startup=found.startup_lines(kv))


def sized_tiers(facts: ModelFacts, sized: Sized) -> Tiers | None:
    """The tiers of a sized shape, from its binding worker's pool."""
    b = sized.binding
    cap = sized.layouts[b].capacity(sized.pools[b])
    return tiers(facts, sized, cap.tokens, cap.bytes_per_token, cap.page_bytes,
                 sized.layouts[b].allocated(sized.pools[b]))


def with_tiers(timing: Timing | None, found: Tiers | None, devices: int,
               chunk: int) -> Timing | None:
    """`timing` with the host link's time added (an estimate): the moved weights cross the
    link on every forward (each decode step, and each prompt chunk of `chunk` tokens before
    the first token), and a prefix served from the host tier is reloaded before the first
    token."""
    if timing is None or found is None:
        return timing
    stream = found.weight_stream_s or 0.0
    reload = found.reload_s or 0.0
    if not stream and not reload:
        return timing
    tpot = timing.tpot_s + stream
    per_replica = timing.batch / tpot if tpot else timing.tokens_per_s_per_replica
    parts = []
    if stream:
        parts.append(f"{stream * 1e3:,.1f} ms a forward streaming the offloaded weights")
    if reload:
        parts.append(f"{reload * 1e3:,.1f} ms reloading {found.reload_tokens:,} prefix "
                     "tokens from the host tier")
    chunks = -(-timing.prompt_tokens // max(1, chunk))
    return timing.model_copy(update={
        "ttft_s": timing.ttft_s + stream * chunks + reload, "tpot_s": tpot,
        "decode_step_s": timing.decode_step_s + stream,
        "tokens_per_s_per_replica": per_replica,
        "tokens_per_s_per_device": per_replica / max(1, devices),
        "estimate": f"{timing.estimate}; plus over the host link (estimate, bytes ÷ link "
                    f"bandwidth): {', '.join(parts)}"})
