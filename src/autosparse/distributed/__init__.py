"""Past one machine: kernels mapped over the chunks of partitioned tensors as Dask tasks.

    import autosparse as asp
    from dask.distributed import Client

    client = Client(n_workers=2)
    A = asp.distributed.partition(asp.read("big.mtx"), parts=8)        # CSR row blocks, equal nonzeros
    y = asp.distributed.evaluate("y(i) = A(i,j) * x(j)", client=client, A=A, x=x)

The split index, where to cut and how results combine are planned from the schedule (`plan.py`); the
chunks' tasks and the combination run on Dask (`evaluate.py`); the workers build each kernel once
(`tasks.py`). Dask is needed only to evaluate: `pip install 'autosparse[distributed]'`.
"""

from .evaluate import evaluate, evaluate_planned, prepare
from .partitioned import Partitioned, Resident, TensorFile, partition
from .plan import Combine, Plan

__all__ = ["Combine", "Partitioned", "Plan", "Resident", "TensorFile", "evaluate", "evaluate_planned", "partition", "prepare"]
