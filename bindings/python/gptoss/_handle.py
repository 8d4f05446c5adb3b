"""Base of every object that owns a C handle: released exactly once, by close(), by leaving
a `with` block, or when garbage collected."""

import ctypes
import threading


class Handle:
    _release_name = None  # e.g. "gptoss_model_release"; set by subclasses

    def __init__(self, handle):
        self._handle = ctypes.c_void_p(handle) if not isinstance(handle, ctypes.c_void_p) else handle
        self._close_lock = threading.Lock()

    @property
    def closed(self):
        return self._handle is None

    @property
    def _as_parameter_(self):
        """Lets the object be passed to C functions directly; a closed object cannot."""
        if self._handle is None:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._handle

    def close(self):
        """Drops this object's reference to the C handle. Safe to call twice."""
        lock = getattr(self, "_close_lock", None)
        if lock is None:  # __init__ never ran (failed construction)
            return
        with lock:
            handle, self._handle = self._handle, None
        if handle is not None and handle.value:
            from ._library import lib  # at interpreter exit module globals may be gone
            getattr(lib, self._release_name)(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # never raise from a finalizer (e.g. at interpreter shutdown)
            pass
