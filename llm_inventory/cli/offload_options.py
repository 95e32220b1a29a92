"""The offload and KV-tier options `placement` takes, declared once (engine/offload.py)."""

# No `from __future__ import annotations`: Typer reads these annotations on every run.

from typing import Annotated, Any

import typer

from llm_inventory.cli.common import bytes_parser, tokens_parser

CpuOffloadOption = Annotated[str | None, typer.Option(
    "--cpu-offload-gb", metavar="GIB", rich_help_panel="Offload and KV tiers",
    help="Weights each GPU moves to host memory, in GiB, as vLLM's and SGLang's own flag: "
         "its pool grows by as much, and every forward reads them over the host link.")]
KvOffloadOption = Annotated[str | None, typer.Option(
    "--kv-offload", metavar="SIZE[,BACKEND]", rich_help_panel="Offload and KV tiers",
    help="vLLM's host KV tier for one engine instance (--kv-offloading-size; a bare number "
         "is GiB), backend native (default) or lmcache: 64GiB,lmcache.")]
KvDiskOption = Annotated[int | None, typer.Option(
    "--kv-disk", parser=bytes_parser("kv_disk"), metavar="SIZE",
    rich_help_panel="Offload and KV tiers",
    help="LMCache's local-disk tier per worker (LMCACHE_MAX_LOCAL_DISK_SIZE).")]
HicacheRatioOption = Annotated[str | None, typer.Option(
    "--hicache-ratio", metavar="RATIO", rich_help_panel="Offload and KV tiers",
    help="SGLang HiCache: the host pool as a multiple of the device pool (SGLang's default "
         "2 when HiCache is on).")]
HicacheSizeOption = Annotated[str | None, typer.Option(
    "--hicache-size", metavar="GB", rich_help_panel="Offload and KV tiers",
    help="SGLang HiCache: the host pool of each worker in whole GB (10^9 bytes), as "
         "SGLang's flag.")]
ReloadOption = Annotated[int | None, typer.Option(
    "--reload-tokens", parser=tokens_parser("reload_tokens"), metavar="TOKENS",
    rich_help_panel="Offload and KV tiers",
    help="Prefix tokens each request finds in the host tier: their reload over the host "
         "link joins the TTFT (an estimate); --prompt-tokens stays the tokens computed.")]
HostMemoryOption = Annotated[int | None, typer.Option(
    "--host-memory", parser=bytes_parser("host_memory"), metavar="SIZE",
    rich_help_panel="Offload and KV tiers",
    help="Host RAM of one node, to check the offloaded bytes against (default: the "
         "reference node's, where the catalog states it).")]
HostLinkOption = Annotated[int | None, typer.Option(
    "--host-link", parser=bytes_parser("host_link"), metavar="SIZE",
    rich_help_panel="Offload and KV tiers",
    help="Bytes per second, one direction, between a device and host memory (default: "
         "the catalog's, PCIe or NVLink-C2C): 64GB.")]

NoKvOffloadOption = Annotated[bool, typer.Option(
    "--no-kv-offload", rich_help_panel="Offload and KV tiers",
    help="llama.cpp's -nkvo: every layer's KV cache in host memory, none on the GPUs.")]


def offload_block(cpu_offload_gb: str | None, kv_offload: str | None, kv_disk: int | None,
                  hicache_ratio: str | None, hicache_size: str | None,
                  reload_tokens: int | None, host_memory: int | None,
                  host_link: int | None) -> Any:
    """The options as the placement request's `Offload` block (InputError names the flag)."""
    from llm_inventory.bounds import number
    from llm_inventory.engine.offload import GIB, Offload, parse_kv_offload, scaled_bytes

    fields: dict[str, Any] = {}
    if cpu_offload_gb is not None:
        fields["weight_bytes"] = scaled_bytes(cpu_offload_gb, "cpu_offload_gb", GIB)
    if kv_offload is not None:
        fields["kv_host_bytes"], fields["kv_backend"] = parse_kv_offload(kv_offload)
    if kv_disk is not None:
        fields["kv_disk_bytes"] = kv_disk
    if hicache_ratio is not None:
        fields["hicache_ratio"] = number("hicache_ratio", hicache_ratio, low=0.0, high=1000.0,
                                         low_open=True)
    if hicache_size is not None:
        fields["hicache_bytes"] = scaled_bytes(hicache_size, "hicache_size", 10**9,
                                               integer=True) or None
    if reload_tokens is not None:
        fields["reload_tokens"] = reload_tokens
    if host_memory is not None:
        fields["host_memory_bytes"] = host_memory
    if host_link is not None:
        fields["host_link_bytes_per_s"] = host_link
    return Offload(**fields)
