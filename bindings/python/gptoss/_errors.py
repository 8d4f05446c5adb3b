"""Status codes of the C API as Python exceptions.

Every failing call raises a subclass of GptossError carrying the status and the library's
message (gptoss_get_last_error_message()). Where a built-in exception means the same thing
the class derives from it too, so `except ValueError` catches invalid arguments.
"""

from ._library import lib

SUCCESS = 0


class GptossError(Exception):
    """A libgptoss call failed. `status` is the numeric code, `status_name` its name."""

    status = None
    status_name = "unknown"

    def __init__(self, message, function=None):
        super().__init__(message)
        self.message = message
        self.function = function


class InvalidArgumentError(GptossError, ValueError):
    status, status_name = 1, "invalid_argument"


class UnsupportedArgumentError(GptossError, ValueError):
    status, status_name = 2, "unsupported_argument"


class InvalidStateError(GptossError, RuntimeError):
    status, status_name = 3, "invalid_state"


class GptossIOError(GptossError, OSError):
    status, status_name = 4, "io"


class InsufficientMemoryError(GptossError, MemoryError):
    status, status_name = 5, "insufficient_memory"


class InsufficientResourcesError(GptossError, RuntimeError):
    status, status_name = 6, "insufficient_resources"


class UnsupportedSystemError(GptossError, RuntimeError):
    status, status_name = 7, "unsupported_system"


class ContextOverflowError(GptossError, OverflowError):
    status, status_name = 8, "context_overflow"


class BufferTooSmallError(GptossError):
    status, status_name = 9, "buffer_too_small"


class InternalError(GptossError, RuntimeError):
    status, status_name = 10, "internal"


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, UnsupportedArgumentError, InvalidStateError, GptossIOError,
    InsufficientMemoryError, InsufficientResourcesError, UnsupportedSystemError,
    ContextOverflowError, BufferTooSmallError, InternalError)}


def error_for(status, function=None):
    """The exception for a failed status, with the thread's last error message."""
    message = (lib.gptoss_get_last_error_message() or b"").decode("utf-8", "replace")
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = type("GptossError", (GptossError,), {"status": status})
    prefix = f"{function}: " if function else ""
    return cls(f"{prefix}{cls.status_name}: {message}" if message else f"{prefix}{cls.status_name}",
               function)


def check(status, function=None):
    """Raises the matching GptossError unless `status` is success."""
    if status != SUCCESS:
        raise error_for(status, function)
