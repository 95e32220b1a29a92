"""`recommend`: the plans that meet a workload's latency targets, ranked by an objective.

Rule, for every device and engine asked:
1. every legal plan placement finds at the workload's context (ISL + OSL), prefill/decode
   disaggregation and the encoder split included;
2. the batch its KV pool allows at the workload's lengths (and the engine's max_num_seqs;
   for llama.cpp, which allocates what -c asks, the slots the device's room holds);
3. TTFT and TPOT from the calibrated time model (`engine/timing/`) with the batch decoding at
   ISL + OSL/2 and its prompts riding in the steps, at each batch up to that bound; the
   operating batch is the largest that meets the targets;
4. requests/s per replica = batch ÷ (TTFT + OSL × TPOT), replicas = ⌈qps ÷ that⌉ (Little's
   law), or ⌈concurrency ÷ batch⌉; the times are then those of each replica's real load;
5. prefill/decode: the prefill pool sized by its prompt throughput (an M/D/1 queue for its
   TTFT), the decode pool by Little's law, and the KV hand-off bytes × qps checked against
   the prefill GPUs' inter-node links;
6. percentiles from a seeded sample of the length histogram.
Cost from the price catalog (cheapest provider unless one is named), $/month at 730 hours,
$ per million output tokens at the rate served; with a power price, GPUs × TDP × price.
"""

from llm_inventory.engine.recommend.core import recommend
from llm_inventory.engine.recommend.models import (
    OBJECTIVES,
    CapacityPoint,
    Cost,
    LengthBin,
    ParetoPoint,
    RecommendedPlan,
    RecommendRequest,
    RecommendResult,
    Targets,
    Workload,
)

__all__ = ["OBJECTIVES", "CapacityPoint", "Cost", "LengthBin", "ParetoPoint",
           "RecommendRequest", "RecommendResult", "RecommendedPlan", "Targets", "Workload",
           "recommend"]
