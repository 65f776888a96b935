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
