"""How a flex_attention call is seen: the function is wrapped while a recording runs, and put back after.

`torch.nn.attention.flex_attention.flex_attention` never shows itself to a TorchFunctionMode:
eager, it hands a higher-order op to torch.compile; compiled, it is fused away. So while a
Recorder is active the function is replaced, in its module and wherever a loaded module
holds it by name (`from … import flex_attention` done before the recording), by a wrapper that
calls the very function the code asked for and hands its arguments and result to the recorder.
Compiled code runs as written while a recording runs (`eager.py`), so a compiled function that
calls flex_attention reaches the wrapper too; where dynamo does trace it (a stance the program set
itself), the wrapper is compiled with the rest and the hand-over alone runs eagerly, after the
compiled kernel. `torch.compile(flex_attention)` itself, wherever it is held, stays compiled and is
recorded as it returns (`_compiled_hook`); the plain function held in a local variable from before
the recording is heard by its inner op (`heard`). Nothing changes once the last recording ends.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from attn_tui.sources.recorder.hooks import eager
from attn_tui.sources.recorder.hooks.hook import Recorder, RecorderHook

MODULE = "torch.nn.attention.flex_attention"
_ACTIVE: list[Recorder] = []  # the recorders that want flex_attention calls, innermost last
_REPLACED: list[tuple[dict[str, Any], str, Any]] = []  # (namespace, name, what it held) to put back
_CLASSES: dict[int, tuple[dict[str, Any], int, list[type]]] = {}  # namespace → its classes that keep `_instance`
_WANTED: dict[tuple[str, int], bool] = {}  # (module name, id) → whether it may hold flex_attention by name
_LISTED: list[tuple[tuple[int, int, str | None, int], list[dict[str, Any]]]] = []  # (sys.modules stamp, namespaces)


def _original() -> Callable[..., Any] | None:
    try:
        import torch.nn.attention.flex_attention as module
    except ImportError:  # a torch without flex_attention: nothing to wrap
        return None
    found = getattr(module, "flex_attention", None)
    return getattr(found, "__wrapped_flex__", found)


_DYNAMO_FILES = str(Path("torch") / "_dynamo") + os.sep  # compile_wrapper, and torch.compiler.disable's


def _hand_over(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, caller: FrameType | None = None) -> None:
    """Give one call to every active recorder. Dynamo never traces this (`_torchdynamo_disable`; and where dynamo
    is loaded, torch.compiler.disable, which keeps it from compiling what this calls, frame by frame): under
    torch.compile the compiled graph breaks here and this runs eagerly, on the very tensors the graph made."""
    import torch

    output = result[0] if isinstance(result, tuple) else result
    if not isinstance(output, torch.Tensor):
        return
    caller = caller or sys._getframe(1)
    while caller is not None and (caller.f_code.co_filename == __file__ or _DYNAMO_FILES in caller.f_code.co_filename):
        caller = caller.f_back  # the wrapper (or its resumed part), dynamo's wrappers
    for recorder in list(_ACTIVE):
        recorder.record_call("flex_attention", args, kwargs, output, caller)


_hand_over._torchdynamo_disable = True  # type: ignore[attr-defined]  # set by hand: importing dynamo costs seconds


@contextlib.contextmanager
def _unheard() -> Iterator[None]:
    """The recording's mode off the stack for the block (when it is on top: a mode the code pushed after it
    stays). flex_attention compiles itself even when called eagerly (`fullgraph=True`), and dynamo would trace
    the mode's bookkeeping into that graph; the call is handed over whole afterwards, so nothing is lost."""
    from torch.overrides import _get_current_function_mode_stack, _pop_mode_temporarily

    stack = _get_current_function_mode_stack()  # type: ignore[no-untyped-call]
    if stack and any(stack[-1] is recorder for recorder in _ACTIVE):
        with _pop_mode_temporarily():
            yield
    else:
        yield


def _wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    hand_over = _hand_over
    if "torch._dynamo" in sys.modules:  # compiled code may call the wrapper: the hand-over and what it calls
        import torch.compiler  # run as they are, never compiled frame by frame inside the compiled call

        hand_over = torch.compiler.disable(_hand_over, recursive=True)  # type: ignore[no-untyped-call]

    @functools.wraps(original)
    def flex_attention(*args: Any, **kwargs: Any) -> Any:
        with _unheard():
            result = original(*args, **kwargs)
        hand_over(args, kwargs, result)
        return result

    flex_attention.__wrapped_flex__ = original  # type: ignore[attr-defined]
    return flex_attention


def heard(recorder: Recorder, result: Any) -> None:
    """flex_attention's inner op reached the recording's mode: a call the wrapper did not see (the function held in
    a local variable from before the recording; compiled code runs as written while recording, eager.py, so the
    op runs in the mode's sight). The call's arguments are read from the function's own frame (a None it was given
    is there as the default it put in its place, told back to None) and handed over like the wrapper's."""
    code = getattr(_original(), "__code__", None)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or frame.f_back is None or frame.f_back.f_code.co_filename == __file__:
        return  # the wrapper called it (a mode the code pushed kept the recording's on the stack): handed over there
    given = frame.f_locals
    module = sys.modules[MODULE]
    kwargs = {name: given.get(name) for name in ("score_mod", "block_mask", "scale", "enable_gqa")}
    if kwargs["score_mod"] is getattr(module, "_identity", None):
        kwargs["score_mod"] = None
    if getattr(kwargs["block_mask"], "mask_mod", None) is getattr(module, "noop_mask", None):
        kwargs["block_mask"] = None
    output = result[0] if isinstance(result, tuple) else result
    args = (given.get("query"), given.get("key"), given.get("value"))
    recorder.record_call("flex_attention", args, kwargs, output, frame.f_back)




def _namespaces() -> list[dict[str, Any]]:
    """The module namespaces that may hold flex_attention by name: the user's files, __main__, transformers'.

    Listed anew only when a module was loaded or dropped since the last list (sys.modules keeps the
    order modules came in: its size and last entry tell): a recording asks twice, thousands are loaded.
    """
    stamp = _stamp()
    if _LISTED and _LISTED[0][0] == stamp:
        return _LISTED[0][1]
    for _ in range(3):  # deciding a module may import one (sysconfig's data, the first time): list again then
        found = _list_namespaces()
        listed, stamp = stamp, _stamp()
        if listed == stamp:
            _LISTED[:] = [(stamp, found)]
            break
    return found


def _stamp() -> tuple[int, int, str | None, int]:
    modules = sys.modules
    last = next(reversed(modules), None)
    return id(modules), len(modules), last, id(modules.get(last)) if last is not None else 0


def _list_namespaces() -> list[dict[str, Any]]:
    from attn_tui.sources.recorder.whose import is_user_file

    found = []
    for name, module in list(sys.modules.items()):
        key = (name, id(module))
        wanted = _WANTED.get(key)
        if wanted is None:  # each module decided once: thousands are loaded, and a lazy one's getattr is slow
            namespace = getattr(module, "__dict__", None)  # not getattr(module, "__file__"): no lazy module's hook
            where = namespace.get("__file__") if isinstance(namespace, dict) else ""
            wanted = _WANTED[key] = name == "__main__" or name.startswith("transformers.integrations") or \
                bool(isinstance(where, str) and where and is_user_file(where))
        if wanted:
            namespace = getattr(module, "__dict__", None)
            if isinstance(namespace, dict):
                found.append(namespace)
    return found


def _singletons(namespaces: list[dict[str, Any]]) -> list[Any]:
    """The one instance a class keeps in `_instance` (transformers' WrappedFlexAttention holds its
    torch.compile(flex_attention) there)."""
    found = []
    for namespace in namespaces:
        size = len(namespace)
        known = _CLASSES.get(id(namespace))
        if known is None or known[0] is not namespace or known[1] != size:  # the classes listed once per namespace
            known = _CLASSES[id(namespace)] = (namespace, size, [v for v in list(namespace.values())
                                                                 if isinstance(v, type) and "_instance" in vars(v)])
        for cls in known[2]:
            instance = vars(cls).get("_instance")
            if isinstance(getattr(instance, "__dict__", None), dict):
                found.append(instance)
    return found


def _compiled_hook(original: Callable[..., Any], wrapper: Callable[..., Any]) -> None:
    """Record a torch.compile(flex_attention) as it is called, compiled as the program compiled it.

    Every compiled function's `compile_wrapper` calls eval_frame's `set_eval_frame(None)` before it runs the
    function and again after; while a recording runs that global is wrapped. When the caller is a compile_wrapper
    of flex_attention, the first lets it compile while other compiled code runs as written
    (`eager.compile_this_call`: flex's kernel never holds the whole score matrix, its eager path does), and the
    second hands its arguments and what it returned to the recorders (read from the compile_wrapper's frame) and
    runs compiled code as written again. One compiled from the name the recording replaced (made during the
    recording) is pointed at flex_attention itself, for good: dynamo then compiles just what the program would
    have compiled, and its kernel gives the numbers an unrecorded run gives.
    """
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    real = getattr(eval_frame, "set_eval_frame", None)
    if eval_frame is None or real is None or getattr(real, "__wrapped_flex__", None) is not None:
        return

    def compile_wrapper(frame: FrameType) -> bool:
        return frame.f_code.co_name == "compile_wrapper" and frame.f_code.co_filename == eval_frame.__file__

    def set_eval_frame(*args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        held: dict[str, Any] = {}
        last = False  # compile_wrapper's last call, whichever way it ends (`_maybe_set_eval_frame(prior)`)
        try:
            if compile_wrapper(caller):
                held = caller.f_locals
                if held.get("fn") is wrapper:
                    _point_cells(caller.f_code, wrapper, original)
                    held["fn"] = original
            elif caller.f_back is not None and compile_wrapper(caller.f_back):
                outer = caller.f_back.f_locals
                last = outer.get("fn") in (original, wrapper) and "prior" in outer and args[:1] == (outer["prior"],)
        except Exception:  # the user's call must run whatever happens here
            held = {}
        result = real(*args, **kwargs)
        if last:  # also where the call returned before it ran compiled, or raised: the pause ends here at the latest
            eager.eager_again()
        elif held.get("fn") is original and args[:1] == (None,):  # no compiled frame runs now: the stance may change
            if "call_succeeded" not in held:  # before the call
                eager.compile_this_call()
            else:
                eager.eager_again()
                if held["call_succeeded"]:
                    _hand_over(held.get("args", ()), held.get("kwargs") or {}, held.get("result"), caller.f_back)
        return result

    set_eval_frame.__wrapped_flex__ = real  # type: ignore[attr-defined]
    _REPLACED.append((vars(eval_frame), "set_eval_frame", real))
    vars(eval_frame)["set_eval_frame"] = set_eval_frame


def _point_cells(code: CodeType, held: Callable[..., Any], instead: Callable[..., Any]) -> None:
    """Point the `fn` cell of each compile_wrapper that holds `held` at `instead`."""
    import gc

    from attn_tui.sources.recorder.hooks import quiet_gc

    with quiet_gc.thawed():  # a recording freezes the heap, and a frozen object is no referrer
        referrers = gc.get_referrers(code)
    for function in referrers:
        closure = getattr(function, "__closure__", None)
        if getattr(function, "__code__", None) is not code or not closure:
            continue
        names: tuple[str, ...] = code.co_freevars
        for name, cell in zip(names, closure):
            if name == "fn" and cell.cell_contents is held:
                cell.cell_contents = instead


def _patch() -> None:
    original = _original()
    if original is None:
        return
    import torch.nn.attention.flex_attention as module

    wrapper = _wrapper(original)
    _compiled_hook(original, wrapper)
    namespaces = [vars(module), *_namespaces()]
    for namespace in [*namespaces, *(vars(instance) for instance in _singletons(namespaces))]:
        for name, value in list(namespace.items()):
            if value is original:  # a torch.compile of it is recorded as it is called (`_compiled_hook`)
                _REPLACED.append((namespace, name, value))
                namespace[name] = wrapper


def _unpatch() -> None:
    while _REPLACED:
        namespace, name, value = _REPLACED.pop()
        held = namespace.get(name)
        if getattr(held, "__wrapped_flex__", None) is not None:  # the code did not rebind it meanwhile
            namespace[name] = value
    for instance in _singletons(_namespaces()):  # one that compiled the wrapper during the recording
        compiled = [getattr(v, "_torchdynamo_orig_callable", None) for v in vars(instance).values()]
        if any(getattr(c, "__wrapped_flex__", None) is not None for c in compiled) and \
                hasattr(instance, "_is_flex_compiled"):
            instance._is_flex_compiled = False  # transformers compiles the real flex_attention again, when next used


_INSTALLED = threading.Lock()  # recordings in several threads begin and end at once: one patch, one unpatch


def install(recorder: Recorder) -> None:
    """Let `recorder` see flex_attention calls until `uninstall`; the first recording wraps the function."""
    with _INSTALLED:
        if not _ACTIVE:
            _patch()
        _ACTIVE.append(recorder)


def uninstall(recorder: Recorder) -> None:
    with _INSTALLED:
        if recorder in _ACTIVE:
            _ACTIVE.remove(recorder)
        if not _ACTIVE:
            _unpatch()


class FlexAttention(RecorderHook):
    """flex_attention wrapped while recordings run (`install`, `uninstall`), and its inner op heard where the
    wrapper was not called (`heard`, from the recorder's mode)."""

    def enter(self, recorder: Recorder) -> None:
        install(recorder)

    def exit(self, recorder: Recorder) -> None:
        uninstall(recorder)

    heard = staticmethod(heard)


FLEX_ATTENTION = FlexAttention()
