"""The exceptions users see.

Every error autosparse raises on bad input derives from `AutosparseError`, so callers can catch the
family; each subclass names one kind of mistake. The warnings say that work goes on, slower: `CacheWarning`
(kernels not kept between processes) and `PerformanceWarning` (an operand converted on every call).
"""


class AutosparseError(Exception):
    """Base class of every error autosparse raises on bad input."""

    def __reduce__(self):
        # Rebuilt from its arguments in another process (a Dask worker's error reaching the client):
        # the generic exception pickling cannot make a MemoryError subclass.
        return type(self), self.args


class FormatError(AutosparseError, ValueError):
    """A format string, a level array or a tensor's storage breaks a rule of its format."""


class CoordinateError(FormatError):
    """A stored coordinate outside its tensor's shape, found by a kernel where it read it."""


class OrderError(FormatError):
    """Stored coordinates a kernel took as increasing, found decreasing where it read them: the caller
    that assumed the order finds it in a pass instead, and runs the kernel for the order found."""


class ShapeError(AutosparseError, ValueError):
    """Dimensions that do not agree (between tensors, or between a tensor and its coordinates)."""


class MemoryLimitError(AutosparseError, MemoryError):
    """An allocation larger than the configured limit, refused before it is made."""


class ParseError(AutosparseError, ValueError):
    """An expression that cannot be read; `column` is the 1-based column where reading failed."""

    def __init__(self, message: str, text: str, column: int):
        self.text, self.column = text, column
        pointer = " " * (column - 1) + "^"
        self.message = message
        super().__init__(f"{message} at column {column}\n    {text}\n    {pointer}")

    def __reduce__(self):
        return type(self), (self.message, self.text, self.column)


class CompileError(AutosparseError):
    """The C compiler could not be found or run, or rejected a kernel; `output` is what it printed."""

    _SHOWN_OUTPUT = 4000

    def __init__(self, message: str, source: str = "", command: tuple[str, ...] = (), output: str = ""):
        self.message, self.source, self.command, self.output = message, source, tuple(command), output
        shown = output.strip()
        if len(shown) > self._SHOWN_OUTPUT:
            shown = shown[: self._SHOWN_OUTPUT] + f"\n... ({len(shown) - self._SHOWN_OUTPUT} more characters)"
        super().__init__(f"{message}\n{shown}" if shown else message)

    def __reduce__(self):
        return type(self), (self.message, self.source, self.command, self.output)


class ScheduleError(AutosparseError, ValueError):
    """A schedule (concrete index notation or a scheduling command) that breaks a rule: the message names
    the command or statement, the index variable and the rule."""


class RangeError(AutosparseError, OverflowError):
    """A number outside what its type holds (an integer literal in an int64 kernel beyond int64, an
    integer too large for a double): refused rather than pasted into C, as numpy refuses it with an
    OverflowError."""


class CacheWarning(UserWarning):
    """The kernel cache directory could not be used (not private to this user, unwritable or full):
    kernels are compiled into a private temporary directory instead, and not kept between processes."""


class PerformanceWarning(UserWarning):
    """A kernel converts an operand on every call because it is stored in another format than the one the
    kernel computes in (another storage order, or scipy's coordinates): the message names the format to
    convert it to once. Given once per kernel and operand."""
