"""Data movement: partitions' collectives, halo exchange, reductions,
redistribution and gather/scatter by global index.

Each primitive plans first (plain data computed from Distributions, no
MPI) and then moves bytes with a small executor.

>>> from xdap.movement import all_sum_reduce, exchange_halos, reduce
"""
from .collectives import (all_sum_reduce, all_sum_reduce_adjoint, broadcast,
                          broadcast_adjoint, sum_reduce, sum_reduce_adjoint)
from .halo import HaloPlan, accumulate_halos, exchange_halos, halo_plan
from .reduce import reduce

__all__ = ["broadcast", "broadcast_adjoint", "sum_reduce", "sum_reduce_adjoint",
           "all_sum_reduce", "all_sum_reduce_adjoint",
           "HaloPlan", "halo_plan", "exchange_halos", "accumulate_halos", "reduce"]

# redistribution and gather/scatter by global index (M2)
from .plan import Layout, RedistributionPlan, layout_of, redistribution_plan
from .redistribute import Redistributor, redistribute
from .scatter import Scatter

__all__ += ["Layout", "RedistributionPlan", "layout_of", "redistribution_plan",
            "Redistributor", "redistribute", "Scatter"]
