"""Data movement: partitions' collectives, halo exchange, reductions,
redistribution, gather to every rank, and gather/scatter by global index.

Each primitive plans first (plain data computed from Distributions, no
MPI) and then moves bytes with a small executor; each takes and returns the
core pair ``(Distribution, Parts)``, and the few that users call with a
DistArray accept any array of the ``xdap.arraylike`` protocol.

>>> from xdap.movement import all_sum_reduce, exchange_halos, reduce
"""
from .collectives import (all_sum_reduce, all_sum_reduce_adjoint, broadcast,
                          broadcast_adjoint, sum_reduce, sum_reduce_adjoint)
from .halo import HaloPlan, accumulate_halos, exchange_halos, halo_plan
from .plan import RedistributionPlan, redistribution_plan
from .redistribute import redistribute
from .reduce import reduce
from .scatter import Scatter

__all__ = ["broadcast", "broadcast_adjoint", "sum_reduce", "sum_reduce_adjoint",
           "all_sum_reduce", "all_sum_reduce_adjoint",
           "HaloPlan", "halo_plan", "exchange_halos", "accumulate_halos", "reduce",
           "RedistributionPlan", "redistribution_plan", "redistribute",
           "Scatter"]
