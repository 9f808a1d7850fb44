"""The pipeline: expression -> CIN -> schedule -> lowering -> runtime, as one `Kernel`.

    k = Kernel("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    C = k(A=A, B=B)

Enters: an expression (text or a notation `Assignment`), formats, and a schedule (None, CIN text or a
statement, scheduling commands). Leaves: results of calls, and the kernel's CIN and C source.
It may import lower, schedule, coiterate, runtime, cin, tensor, notation, format, codegen, errors and
config; never autoschedule or api, whose autoscheduler candidates reach it unwrapped.
"""

from .kernel import Kernel, delivered
from .operands import as_assignment, infer_format
from .result_format import inferred_result_format

__all__ = ["Kernel", "as_assignment", "delivered", "infer_format", "inferred_result_format"]
