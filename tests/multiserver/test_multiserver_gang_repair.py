"""The compiled, branch-free gang repair equals the plain reading of spec §3.12 (ports by their best gated arm along
the priority, each task on its highest-priority requested server with room, a port rolled back below m_l), for any
priority and any number of device types."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.multiserver.gang import GangParams, gang_repair, generate_gang_instance


def _reference(requested, inst, usable, priority):
    x, free = np.zeros(inst.n_edges, np.int8), inst.server_cap.copy()
    gated = [e for e in priority if requested[e] and usable[e]]
    n_arrival = sum(1 for e in range(inst.n_edges) if requested[e] and not usable[e])
    n_capacity, placed = 0, set()
    for port in dict.fromkeys(inst.arms[e, 0] for e in gated):  # first appearance along the priority
        mine = [e for e in gated if inst.arms[e, 0] == port]
        chosen = []
        for e in mine:
            task, server = inst.arms[e, 1], inst.arms[e, 2]
            if task not in placed and (free[:, server] >= inst.task_req[:, task]).all():
                free[:, server] -= inst.task_req[:, task]
                placed.add(task)
                chosen.append(e)
        if len(chosen) >= inst.min_tasks[port]:
            x[chosen] = 1
            n_capacity += len(mine) - len(chosen)
        else:
            for e in chosen:
                free[:, inst.arms[e, 2]] += inst.task_req[:, inst.arms[e, 1]]
            n_capacity += len(mine)
    return x, n_arrival, n_capacity


@pytest.mark.parametrize("n_types", [1, 2, 3, 5])
def test_gang_repair_equals_the_reference(n_types):
    rng = np.random.default_rng(n_types)
    for trial in range(40):
        params = GangParams(n_ports=int(rng.integers(1, 6)), n_servers=int(rng.integers(1, 8)), n_device_types=n_types,
                            edge_prob=0.5, min_tasks=("all", "half")[trial % 2], c_high=3)  # fmt: skip
        inst = generate_gang_instance(params, np.random.default_rng(trial))
        for _ in range(10):
            requested = rng.random(inst.n_edges) < 0.6
            usable = inst.edge_mask(rng.random(inst.n_ports) < 0.8)
            priority = rng.permutation(inst.n_edges) if rng.random() < 0.5 else np.arange(inst.n_edges)
            x, *counts = gang_repair(requested, inst, usable, priority)
            expected, *expected_counts = _reference(requested, inst, usable, priority)
            np.testing.assert_array_equal(x, expected)
            assert counts == expected_counts
