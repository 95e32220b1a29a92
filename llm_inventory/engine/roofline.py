"""Roofline timings for a plan: the physical bound no engine beats.

Rules:
- A phase takes at least the largest of FLOPs ÷ (devices × peak FLOP/s), bytes one rank
  reads ÷ memory bandwidth, and its TP all-reduce payload ÷ link bandwidth (2 per layer, a
  ring moving 2 × (tp − 1) / tp of the payload over the intra-node link). Every device of a
  replica can share the FLOPs and each stage's TP group has its own links (pipeline stages
  work on different chunks of a prompt, or micro-batches of a batch, at once); a token still
  crosses every stage, so a rank's bytes are summed over the stages: its weights (the
  routed experts the tokens touch) and, in decode, the state of batch ÷ pp sequences. The
  largest term names the bound: compute, memory bandwidth, or communication. The three can
  overlap (two micro-batches hide one's all-reduce behind the other's matmuls), so the
  bound is their maximum, not their sum.
- Rates are the datasheet peaks at 100 % (`data/devices.yaml`, each with its source): a
  measured ceiling only lowers them (on one H200 a 4 GiB device-to-device copy moved
  4.21 TB/s counting bytes read and written, against 4.8 TB/s on the datasheet; an 8192³
  bf16 matrix product ran at 782 TFLOP/s, against 989), so the datasheet bound holds a
  fortiori. `Efficiency` below 1 turns the bound into a what-if estimate, labelled so.
- Peak FLOP/s: the device's FP4 rate for 4-bit weights and FP8 for 8-bit, when it has
  such units, else BF16. The ridge point is peak ÷ bandwidth (FLOP per byte): a phase whose
  arithmetic intensity sits below it is bandwidth-bound.
- Prefill of one prompt gives the time to first token (plus the encoder's work for media);
  a decode step at batch B gives the time per output token; tokens per second per replica =
  B ÷ step time, per device = that ÷ devices.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.spec.devices import Device

Bound = Literal["compute", "memory bandwidth", "communication"]


class Efficiency(BaseModel):
    """Fractions of peak the roofline assumes. At 1 (the default) it is the physical bound;
    lower fractions make it a what-if estimate, and the result says so."""

    model_config = ConfigDict(frozen=True)

    compute: float = Field(default=1.0, gt=0, le=1)  # of peak FLOP/s
    bandwidth: float = Field(default=1.0, gt=0, le=1)  # of peak memory bandwidth
    link: float = Field(default=1.0, gt=0, le=1)  # of link bandwidth for all-reduces

    @property
    def bound(self) -> bool:
        """True at 100 % of every peak: a lower limit, not an estimate."""
        return self.compute == self.bandwidth == self.link == 1.0


class PhaseTime(BaseModel):
    seconds: float
    compute_s: float
    memory_s: float
    communication_s: float
    bound: Bound
    arithmetic_intensity: float


class Timing(BaseModel):
    """Roofline estimate for one replica of a plan."""

    estimate: str
    device: str
    peak_flops: int  # the rate used (FP8 or BF16)
    memory_bandwidth_bytes_per_s: int
    ridge_flops_per_byte: float
    batch: int
    prompt_tokens: int
    prefill_s: float
    decode_step_s: float
    ttft_s: float
    tpot_s: float
    prefill_bound: Bound
    decode_bound: Bound
    prefill_intensity: float
    decode_intensity: float
    tokens_per_s_per_replica: float
    tokens_per_s_per_device: float
    efficiency: Efficiency
    trust: str = "bound"  # "estimate" below 100 %, or "calibrated (±X %, …)": `trust.py`
    band: float | None = None  # relative error band of a calibrated estimate
    roofline_ttft_s: float | None = None  # the physics bound beside a calibrated estimate
    roofline_tpot_s: float | None = None


def peak_flops(device: Device, weight_bits: int) -> int | None:
    """The matmul rate a phase runs at: FP4 for ≤ 4-bit weights and FP8 for ≤ 8-bit when the
    device has such units, else BF16."""
    if weight_bits <= 4 and device.fp4_flops:
        return int(device.fp4_flops)
    if weight_bits <= 8 and device.fp8_flops:
        return int(device.fp8_flops)
    return int(device.bf16_flops) if device.bf16_flops else None


def phase_time(
    *, flops: int, bytes_per_device: int, allreduce_bytes: int, tp: int, peak: int,
    bandwidth: int, link_bandwidth: int | None, efficiency: Efficiency, devices: int = 0,
    stages: int = 1,
) -> PhaseTime:
    """One phase whose `flops` `devices` share (default: the `tp` ranks) and of which each
    rank reads `bytes_per_device` (summed over pipeline stages: a token crosses them one
    after another, each streaming its weights)."""
    compute = flops / (max(devices, tp) * peak * efficiency.compute)
    memory = bytes_per_device / (bandwidth * efficiency.bandwidth)
    comm = 0.0
    if tp > 1 and allreduce_bytes and link_bandwidth:
        # every stage's TP group has its own links: pipelined chunks share the payload
        comm = (allreduce_bytes * 2 * (tp - 1) / tp / (link_bandwidth * efficiency.link)
                / max(1, stages))
    work = max(compute, memory)
    bound: Bound = "compute" if compute >= memory else "memory bandwidth"
    if comm > work:
        bound = "communication"
    read = bytes_per_device * tp
    return PhaseTime(seconds=max(work, comm), compute_s=compute, memory_s=memory,
                     communication_s=comm, bound=bound,
                     arithmetic_intensity=flops / read if read else 0.0)


def roofline(
    device: Device, *, tp: int, devices_per_replica: int, weight_bits: int, batch: int,
    prompt_tokens: int, prefill_flops: int, prefill_bytes_per_device: int,
    prefill_allreduce: int, decode_flops: int, decode_bytes_per_device: int,
    decode_allreduce: int, encoder_flops: int = 0,
    efficiency: Efficiency | None = None, stages: int = 1,
) -> Timing | None:
    """Prefill, decode step, TTFT, TPOT and throughput; None when the device lacks figures."""
    eff = efficiency or Efficiency()
    peak = peak_flops(device, weight_bits)
    bandwidth = device.memory_bandwidth_bytes_per_s
    if peak is None or not bandwidth:
        return None
    link = device.intra_node_bandwidth_bytes_per_s
    # every device of the replica can share the FLOPs: pipeline stages work on different
    # chunks of a prompt, or micro-batches of a batch, at once
    prefill = phase_time(flops=prefill_flops, bytes_per_device=prefill_bytes_per_device,
                         allreduce_bytes=prefill_allreduce, tp=tp, peak=peak,
                         bandwidth=bandwidth, link_bandwidth=link, efficiency=eff,
                         devices=devices_per_replica, stages=stages)
    decode = phase_time(flops=decode_flops, bytes_per_device=decode_bytes_per_device,
                        allreduce_bytes=decode_allreduce, tp=tp, peak=peak,
                        bandwidth=bandwidth, link_bandwidth=link, efficiency=eff,
                        devices=devices_per_replica, stages=stages)
    share = max(devices_per_replica, tp)
    encoder_s = encoder_flops / (share * peak * eff.compute) if encoder_flops else 0.0
    per_replica = batch / decode.seconds if decode.seconds else 0.0
    if eff.bound:
        said = ("bound: datasheet peak FLOP/s, memory and link bandwidth at 100 %, the "
                "largest of the three, no overheads; no engine runs faster")
    else:
        said = (f"roofline estimate at {eff.compute:.0%} of peak FLOP/s, "
                f"{eff.bandwidth:.0%} of memory bandwidth and {eff.link:.0%} of link "
                "bandwidth; no scheduling, launch or kernel overheads")
    return Timing(
        estimate=said,
        trust="bound" if eff.bound else "estimate",
        device=device.id,
        peak_flops=peak,
        memory_bandwidth_bytes_per_s=bandwidth,
        ridge_flops_per_byte=peak / bandwidth,
        batch=batch,
        prompt_tokens=prompt_tokens,
        prefill_s=prefill.seconds,
        decode_step_s=decode.seconds,
        ttft_s=prefill.seconds + encoder_s,
        tpot_s=decode.seconds,
        prefill_bound=prefill.bound,
        decode_bound=decode.bound,
        prefill_intensity=prefill.arithmetic_intensity,
        decode_intensity=decode.arithmetic_intensity,
        tokens_per_s_per_replica=per_replica,
        tokens_per_s_per_device=per_replica / max(1, devices_per_replica),
        efficiency=eff,
    )
