"""Co-iteration: which strategies may find an operand's coordinates (`findable`, decided by Z3 from level
properties alone), which one each `coiterate(i, auto)` loop uses for one call's operands (`choice`), and a
loop's iteration lattice (`lattice`: which combinations of the operands it steps it must visit).

Enters: CIN statements and level properties; for `choice`, the call's tensors. Leaves: legality answers
and CIN with each `auto` strategy resolved. Imports cin, notation, tensor, config: nothing that lowers
or schedules, so lowering, scheduling and the pipeline may all ask it.
"""
