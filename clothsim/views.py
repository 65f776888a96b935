"""Zero-copy views that know when the buffer behind them has been released."""

from __future__ import annotations

from .errors import StaleViewError


class ViewToken:
    """Shared validity flag between an owner and the views it handed out."""

    def __init__(self, what: str):
        self.what = what
        self.valid = True

    def invalidate(self) -> None:
        self.valid = False


_GUARDED = None


def _guarded_class():
    global _GUARDED
    if _GUARDED is None:
        import torch

        class GuardedTensor(torch.Tensor):
            """A torch view of simulator memory that raises StaleViewError once that memory is released."""

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                for a in list(args) + list(kwargs.values()):
                    for t in a if isinstance(a, (list, tuple)) else (a,):
                        token = getattr(t, "_clothsim_token", None) if isinstance(t, torch.Tensor) else None
                        if token is not None and not token.valid:
                            raise StaleViewError(
                                f"{token.what}: this zero-copy view refers to simulator memory that was released "
                                "(Simulator.release() or a reallocation); ask the simulator for a new view"
                            )
                out = super().__torch_function__(func, types, args, kwargs)
                return _strip(out)

        _GUARDED = GuardedTensor
    return _GUARDED


def _strip(out):
    """Results of operations are ordinary tensors (they own or alias memory torch tracks itself)."""
    import torch

    cls = _GUARDED
    if isinstance(out, cls):
        # views (slices) keep the guard; new tensors drop it
        if out.data_ptr() and getattr(out, "_clothsim_token", None) is None:
            return out.as_subclass(torch.Tensor)
    return out


def guarded_torch_view(arr, what: str):
    """A zero-copy torch tensor of a Warp array, plus the token that invalidates it."""
    import warp as wp

    try:
        t = wp.to_torch(arr)
    except ImportError as e:
        raise ImportError("torch is not installed: pip install 'clothsim[torch]' (torch==2.13.0)") from e
    token = ViewToken(what)
    g = t.as_subclass(_guarded_class())
    g._clothsim_token = token
    return g, token


_GUARDED_WARP = None


def _guarded_warp_class():
    global _GUARDED_WARP
    if _GUARDED_WARP is None:
        import warp as wp

        class GuardedArray(wp.array):
            """A non-owning Warp array aliasing an owner's buffer. Every path to the memory goes through
            ``ptr`` (numpy, copies) or ``__ctype__`` (kernel launches); both raise StaleViewError once the
            owner has released the buffer, so the alias never reads freed memory."""

            def _check(self):
                token = self.__dict__.get("_clothsim_token")
                if token is not None and not token.valid:
                    raise StaleViewError(
                        f"{token.what}: this zero-copy Warp array refers to simulator memory that was released "
                        "(release(), a level switch or a reallocation); ask the simulator for a new view")

            @property
            def ptr(self):
                self._check()
                return self.__dict__.get("_ptr")

            @ptr.setter
            def ptr(self, value):
                self.__dict__["_ptr"] = value

            def __ctype__(self):
                self._check()
                return super().__ctype__()

            def __del__(self):  # non-owning: nothing to free
                pass

        _GUARDED_WARP = GuardedArray
    return _GUARDED_WARP


def guarded_warp_view(arr, what: str, token: ViewToken | None = None):
    """A zero-copy, non-owning Warp array of ``arr`` (same dtype, shape, device) that raises StaleViewError
    once ``token`` is invalidated; returns (view, token). The view does not keep ``arr``'s memory alive:
    the owner frees it on release and the view refuses to be used from then on."""
    token = token or ViewToken(what)
    g = _guarded_warp_class()(ptr=arr.ptr, dtype=arr.dtype, shape=arr.shape, strides=arr.strides, device=arr.device,
                              capacity=arr.capacity, deleter=None)
    g._clothsim_token = token
    return g, token
