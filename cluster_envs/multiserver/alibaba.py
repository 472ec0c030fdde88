"""Instances of ``ClusterMultiServer-v0`` and ``ClusterGang-v0`` from the Alibaba GPU 2023 trace
(``workload="alibaba_gpu_2023"``; the trace is read by :mod:`cluster_envs.common.alibaba_gpu`).

The mapping (documented on the env pages, ``docs/envs/ClusterMultiServer-v0.md``):

* **Device types** ``K = 3``: CPU, memory, GPU. One unit of type ``k`` is the median positive request of the
  replayed pods (pods of the job types below), so a typical pod takes 1 unit; a request is rounded up to whole
  units (a pod asking for none of a type, e.g. no GPU, takes 0 units of it) and a node's capacity down.
* **Ports** (job types): the ``n_ports`` most frequent pod request shapes ``(CPU, memory, GPUs)`` among the pods
  created in the replay window (ties: the smaller shape first). Pods of other shapes are not replayed.
* **Arrivals**: port ``l`` has a job in slot ``t`` when a pod of its shape was created in that slot (several
  collapse into one job: the model has at most one job per port and slot). The schedule is fixed by the trace;
  ``ρ_l`` is recorded as the fraction of slots with a type-``l`` job.
* **Servers**: ``n_servers`` nodes drawn without replacement from the trace (``instance_seed``). A channel
  ``(l, r)`` exists where node ``r`` can host a type-``l`` pod (enough units of cores, memory and GPUs), kept
  with probability ``edge_prob`` (each port keeps at least one hosting node).
* **Requests** ``a_k^{(l,r)}``: the type's request in units (the same on every node).
* **Capacity** ``c`` of ``ClusterMultiServer-v0`` (cluster-wide, per slot): ``capacity_mode="alpha_sum"``
  (default) applies the generator's rule to the trace's requests, ``max(max_e a_k^e, ⌊β Σ_e a_k^e⌋)``;
  ``"per_server_sum"`` is the sampled nodes' total capacity in units (it rarely binds); ``capacity`` overrides.
  ``ClusterGang-v0`` uses the nodes' own capacities per server (G4), and gives port ``l``
  ``clip(round(mean type-l pods per slot with one), tasks_low, tasks_high)`` tasks.
* **Utilities**: the trace has none; they are drawn as in the paper (spec §3.3 steps 4, 5: ``μ ~ U``,
  ``σ = sigma_ratio μ``, costs ``F ~ N(cost_mean, cost_std)`` per device type) from ``instance_seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster_envs.common.alibaba_gpu import NODE_FILE, POD_FILE, RESOURCES, GpuTrace, load_gpu_trace
from cluster_envs.multiserver.config import MAX_MAGNITUDE
from cluster_envs.multiserver.gang import GangInstance, GangParams, arms_of, min_task_counts, scaled_capacity
from cluster_envs.multiserver.model import GeneratorParams, MultiServerInstance, capacity_vector, draw_utility


@dataclass(frozen=True, eq=False)
class TraceWorkload:
    """The trace side of an instance: job types, their replayed arrivals and the node sample, in units."""

    requests: np.ndarray  # (3, |L|) int64 units per job type
    schedule: np.ndarray  # (T, |L|) int8
    pods_per_slot: np.ndarray  # (|L|,) mean type-l pods per slot with at least one
    node_capacity: np.ndarray  # (3, |R|) int64 units of the sampled nodes
    hosts: np.ndarray  # (|L|, |R|) bool: node r can host a type-l pod


def trace_workload(trace: GpuTrace, n_ports: int, n_servers: int, horizon: int, rng) -> TraceWorkload:
    """Job types, arrivals and the node sample of the mapping above; ``rng`` draws the sample only."""
    slots = trace.arrival_slots(horizon)
    replayed = slots >= 0
    shapes, type_of, counts = np.unique(trace.pod_request[:, replayed].T, axis=0, return_inverse=True,
                                        return_counts=True)  # fmt: skip
    if len(shapes) < n_ports:
        raise ValueError(f"n_ports={n_ports} exceeds the {len(shapes)} distinct pod request shapes of the trace")
    ranked = np.argsort(-counts, kind="stable")[:n_ports]  # np.unique sorts shapes: ties keep the smaller first
    port_of_shape = np.full(len(shapes), -1)
    port_of_shape[ranked] = np.arange(n_ports)
    port = port_of_shape[type_of.ravel()]
    kept = port >= 0
    requests_real = shapes[ranked].T  # (3, |L|)
    if not (requests_real > 0).any(axis=0).all():  # the knapsack needs a positive request per channel
        raise ValueError("trace_dir: a frequent pod shape requests no CPU, memory or GPU at all")
    pod_req = requests_real[:, port[kept]]
    unit = np.array([np.median(row[row > 0]) if (row > 0).any() else 1.0 for row in pod_req])
    schedule = np.zeros((horizon, n_ports), np.int8)
    per_slot = np.zeros((horizon, n_ports), np.int64)
    np.add.at(per_slot, (slots[replayed][kept], port[kept]), 1)
    schedule[per_slot > 0] = 1
    active = np.maximum((per_slot > 0).sum(axis=0), 1)
    n_nodes = trace.node_capacity.shape[1]
    if n_servers > n_nodes:
        raise ValueError(f"n_servers={n_servers} exceeds the trace's {n_nodes} nodes")
    nodes = np.sort(rng.choice(n_nodes, size=n_servers, replace=False))
    first_pod = np.flatnonzero(replayed)[[np.argmax(type_of.ravel() == shape) for shape in ranked]]
    requests = _in_units(trace, np.ceil(requests_real / unit[:, None] - 1e-9), unit, POD_FILE, first_pod)
    capacity = _in_units(trace, np.floor(trace.node_capacity / unit[:, None] + 1e-9), unit, NODE_FILE,
                         np.arange(n_nodes))  # fmt: skip
    node_capacity = capacity[:, nodes]
    hosts = (requests[:, :, None] <= node_capacity[:, None, :]).all(axis=0)  # in units: every channel fits alone
    homeless = np.flatnonzero(~hosts.any(axis=1))
    if homeless.size:
        raise ValueError(
            f"no sampled node can host job type(s) {homeless.tolist()} (requests in cores, GiB, GPUs: "
            f"{requests_real[:, homeless].T.tolist()}); raise n_servers or change instance_seed"
        )
    return TraceWorkload(requests, schedule, per_slot.sum(axis=0) / active, node_capacity, hosts)


def _in_units(trace: GpuTrace, units: np.ndarray, unit: np.ndarray, file: str, records: np.ndarray) -> np.ndarray:
    """``units`` (3, n) as int64; a ``ValueError`` naming the file, line and column of the first entry above
    ``MAX_MAGNITUDE``, the requests' and capacities' bound (``records`` are the 0-based rows of the columns)."""
    over = np.argwhere(units > MAX_MAGNITUDE)
    if over.size:
        k, j = over[0]
        raise ValueError(
            f"trace_dir: {trace.field(file, k, records[j])} gives {units[k, j]:.3g} units of {RESOURCES[k]} (one "
            f"unit = the median request of the replayed pods, {unit[k]:.4g}); allowed: at most {MAX_MAGNITUDE:.0e} "
            "units per node capacity and pod request"
        )
    return units.astype(np.int64)


def _adjacency(work: TraceWorkload, edge_prob: float, rng) -> np.ndarray:
    """Hosting channels kept with probability ``edge_prob``; a port left without one keeps a random hosting node."""
    adj = work.hosts & (rng.random(work.hosts.shape) < edge_prob)
    for port in np.flatnonzero(~adj.any(axis=1)):
        adj[port, rng.choice(np.flatnonzero(work.hosts[port]))] = True
    return adj


def _rho(work: TraceWorkload) -> np.ndarray:
    return work.schedule.mean(axis=0)


def trace_instance(params: GeneratorParams, trace_dir, horizon: int, rng) -> MultiServerInstance:
    """A ``ClusterMultiServer-v0`` instance of the mapping above."""
    work = trace_workload(load_gpu_trace(trace_dir), params.n_ports, params.n_servers, horizon, rng)
    edges = np.argwhere(_adjacency(work, params.edge_prob, rng)).astype(np.int64)
    A = work.requests[:, edges[:, 0]]
    if params.capacity is None and params.capacity_mode == "per_server_sum":
        c = work.node_capacity.sum(axis=1)
    else:
        c = capacity_vector(params, A, rng)
    utility = draw_utility(params, A.shape[0], len(edges), rng)
    return MultiServerInstance(params.n_ports, params.n_servers, edges, A, c, utility, _rho(work), work.schedule)


def trace_gang_instance(params: GangParams, trace_dir, horizon: int, rng) -> GangInstance:
    """A ``ClusterGang-v0`` instance of the mapping above (per-server capacities of the sampled nodes)."""
    work = trace_workload(load_gpu_trace(trace_dir), params.n_ports, params.n_servers, horizon, rng)
    adj = _adjacency(work, params.edge_prob, rng)
    n_tasks = np.clip(np.round(work.pods_per_slot), params.tasks_low, params.tasks_high).astype(np.int64)
    task_port = np.repeat(np.arange(params.n_ports), n_tasks)
    arms = arms_of(task_port, adj)
    utility = draw_utility(params, len(RESOURCES), len(arms), rng)
    return GangInstance(
        params.n_ports, params.n_servers, arms, task_port, min_task_counts(n_tasks, params.min_tasks),
        work.requests[:, task_port], scaled_capacity(work.node_capacity, params), utility=utility, rho=_rho(work),
        schedule=work.schedule,
    )  # fmt: skip


def binding_share(instance: MultiServerInstance) -> float:
    """The share of slots in which capacity binds: the jobs that arrive ask, together, for more than ``c`` of some
    device type, so no scheduler can admit them all. In this mapping a job type asks the same on every channel."""
    request = np.zeros((instance.A.shape[0], instance.n_ports))
    request[:, instance.edges[:, 0]] = instance.A
    return float(((instance.schedule @ request.T) > instance.c).any(axis=1).mean())
