"""The recorder's ears: a TorchFunctionMode that keeps, while the user's code runs, the calls that make attention.

Every torch call of the user's code passes through `__torch_function__`; the calls that
can be part of attention (projections, products, scaling, masks, softmax, tanh, sums,
concatenation, SDPA, nn.MultiheadAttention, and the shape changes between them: the names
in kinds.py's table) become Nodes of a dataflow graph, each with its kind, the value it
returned, its inputs, and the line of the user's code that made it. Nothing is copied
unless it must be: a result is kept as a detached alias, and cloned only just before the
code overwrites it in place, so the recorded values are the very numbers the code computed.
"""

from __future__ import annotations

import sys
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch.compiler import is_compiling
from torch.overrides import TorchFunctionMode

from attn_tui.sources.recorder.calls import ANCHORS, name_of, written_softmax
from attn_tui.sources.recorder.held import held_bytes
from attn_tui.sources.recorder.hooks import FLEX_ATTENTION, HOOKS
from attn_tui.sources.recorder.kinds import CASTS, FORWARD, KINDS, After, Kind
from attn_tui.sources.recorder.node import Node, Origin, Scope, version_of
from attn_tui.sources.recorder.param_names import ParamNames
from attn_tui.sources.recorder.whose import LAST_WALK as _LAST
from attn_tui.sources.recorder.whose import (
    MAX_DEPTH,
    SUSPENDS,
    OwnCallError,
    forget_walks,
    origin_at,
    outside_mode,
    walk,
)

if TYPE_CHECKING:
    from attn_tui.sources.recorder.hooks import RecorderHook
    from attn_tui.sources.recorder.hooks.hook import ThreadsEntered

MAX_CALLS = 64  # attention calls kept per module (the last ones: a script may train before it evaluates)


def _learned(tensor: Any) -> bool:
    """A parameter (or any tensor autograd learns: a leaf that requires grad)."""
    return isinstance(tensor, torch.Tensor) and (isinstance(tensor, torch.nn.Parameter)
                                                 or (tensor.requires_grad and tensor.is_leaf))


class _Tracked(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that knows the id it is filed under: one callback serves every tracked tensor
    (a closure per tensor cost a function and a cell each, hundreds per forward, all left to the collector)."""

    __slots__ = ("key",)
    key: int




def _forgetter(nodes: dict[int, tuple[_Tracked, Node]]) -> Callable[[_Tracked], None]:
    """The callback of a tracked tensor's weak reference: when it dies its entry goes (unless the id was taken
    again by a newer tensor). A closure over the table, not a bound method: the recorder is in no cycle."""

    def forget(ref: _Tracked) -> None:
        entry = nodes.get(ref.key)
        if entry is not None and entry[0] is ref:
            del nodes[ref.key]

    return forget


class Recorder(TorchFunctionMode):
    """Records the calls that can make attention while it is active (`with Recorder(): …`).

    `anchors` holds, per scope, the last MAX_CALLS softmax / SDPA / MultiheadAttention calls;
    the rest of the graph is reachable from them. `seen` counts every anchor, kept or not.
    What the recording changes in the process while it listens, and what it lets go of a kept call, are its
    hooks (hooks/: threads and pools, flex_attention, the frozen heap, the compile stance, pruning).
    """

    def __init__(self, max_calls: int = MAX_CALLS) -> None:
        super().__init__()
        self.max_calls = max_calls
        self.anchors: dict[Scope, deque[Node]] = {}
        self.order: list[Scope] = []  # scopes in the order their first attention ran
        self.seen: dict[Scope, int] = {}
        self._nodes: dict[int, tuple[_Tracked, Node]] = {}
        self._drop = _forgetter(self._nodes)  # the one callback every weak reference calls
        self._params = ParamNames()  # the parameters' names, found once each
        self.failed: BaseException | None = None  # an error of the recorder itself (never the user's)
        self.budget: int | None = None  # bytes the kept calls may hold (`trace --max-memory`); None: no limit
        self.kept_bytes = 0  # what the kept calls hold now, counted when a budget is set
        self.over_budget: Callable[[int, int], None] | None = None  # called with (kept, budget) when it is passed
        self.recording = False  # between __enter__ and __exit__
        self.threads: ThreadsEntered | None = None  # the threads hook's: those it could not enter
        self.roots: dict[int, torch.nn.Module] = {}  # the modules each attention ran in, to name it by path

    def __enter__(self) -> Recorder:
        """The hooks entered in order, then the mode listens (if either fails, the hooks entered are left)."""
        for entered, hook in enumerate(HOOKS):
            try:
                hook.enter(self)
            except BaseException:
                self._leave(HOOKS[:entered])
                raise
        try:
            self.recording = True
            super().__enter__()  # type: ignore[no-untyped-call]
        except BaseException:
            self.recording = False
            self._leave(HOOKS)
            raise
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        """The mode stops listening, then the hooks are left, last entered first."""
        try:
            forget_walks()  # no frame of the code is held past the recording
            self._nodes.clear()  # the live tensors' entries serve only while recording
            self.recording = False  # a thread the code left running keeps the mode: it records nothing more
            super().__exit__(kind, exc, tb)  # type: ignore[no-untyped-call]
        finally:
            self._leave(HOOKS)

    def _leave(self, hooks: Sequence[RecorderHook]) -> None:
        """Each hook's exit, in reverse order; every one runs, and the first failure is raised after them all."""
        failed: BaseException | None = None
        for hook in reversed(hooks):
            try:
                hook.exit(self)
            except BaseException as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def __del__(self) -> None:
        # A node and its consumer hold each other: unlinked, a dropped recording is freed at once, not by the
        # next full collection (the recorder itself is in no cycle, so this runs when its last reference goes).
        # Forward links start at the calls (`_link`): a walk forward from each kept call reaches its own (those of a
        # call dropped past `max_calls` are left to the collector).
        stack = [node for calls in self.anchors.values() for node in calls]
        while stack:
            node = stack.pop()
            stack.extend(node.consumers)
            node.consumers = []

    # ----- the graph ----------------------------------------------------------------------
    def _track(self, tensor: torch.Tensor, node: Node) -> None:
        key = id(tensor)
        try:
            ref = _Tracked(tensor, self._drop)
        except TypeError:  # a tensor that takes no weak reference is not tracked
            return
        ref.key = key
        self._nodes[key] = (ref, node)

    def node_of(self, tensor: torch.Tensor, scope: Scope | None, origin: Origin | None = None) -> Node:
        """The node of a tensor; one the recorder has not seen made (or that changed since) becomes a leaf."""
        entry = self._nodes.get(id(tensor))
        if entry is not None and entry[0]() is tensor and entry[1].version == version_of(tensor):
            return entry[1]
        is_param = _learned(tensor)
        value = tensor.detach()  # a parameter too: copied only when the code changes it in place (_before_inplace)
        node = Node("leaf", value, kind=Kind.LEAF, origin=origin, version=version_of(value), is_param=is_param,
                    scope=scope, param=self._params.name(tensor, scope) if is_param else None)
        self._track(tensor, node)
        return node

    def _wrap(self, value: Any, scope: Scope | None, origin: Origin | None = None) -> Any:
        if isinstance(value, torch.Tensor):
            entry = self._nodes.get(id(value))  # the common case first, as node_of finds it: a tensor recorded
            if entry is not None and entry[1].version == version_of(value) and entry[0]() is value:
                return entry[1]
            return self.node_of(value, scope, origin)
        if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
            return tuple(self._wrap(v, scope, origin) for v in value)
        return value

    # ----- where a call comes from ----------------------------------------------------------
    @staticmethod
    def _where(start: FrameType | None = None) -> tuple[Origin | None, Scope | None]:
        """The user's line that made the call, and the attention module (or function) it ran in.

        `OwnCallError` when attn-tui itself made the call, from inside a recorded block.
        `start` is the frame to look from (a wrapped function's caller); by default the code that called torch.
        That code's callers stay the same while it runs, so the walk up from it is kept for its next torch call
        (a norm, a rotary embedding, a head split make several): only the user's line is read again.
        """
        if start is not None:
            user_frame, scope = walk(start)
            return origin_at(user_frame), scope
        here = outside_mode(sys._getframe())  # past the mode's own frames (this, _record, __torch_function__)
        last = _LAST[0]
        if last is not None and last[0] is here:
            return origin_at(last[1]), last[2]
        user_frame, scope = walk(here)
        if here is not None and not here.f_code.co_flags & SUSPENDS:  # a generator: its callers change as it resumes
            _LAST[0] = (here, user_frame, scope)
        return origin_at(user_frame), scope

    def record_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: torch.Tensor,
                    caller: FrameType | None) -> None:
        """An attention call made outside the mode's sight (flex_attention), kept as an anchor like SDPA's;
        `caller` is the frame that called it. Never raises: the user's code must not break."""
        try:
            try:
                origin, scope = self._where(caller)
            except OwnCallError:
                return
            wrapped = tuple(self._wrap(a, scope, origin) for a in args)
            named = {k: self._wrap(v, scope, origin) for k, v in kwargs.items()}
            value = result.detach()
            node = Node(name, value, wrapped, named, origin, scope, version_of(value), kind=KINDS[name])
            self._link(node)
            self._track(result, node)
            self._anchor(node, scope or Scope("attention", 0))
        except Exception as exc:
            self.failed = self.failed or exc

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if not self.recording or is_compiling():  # dynamo tracing the code: it runs compiled, unseen (hooks/eager.py)
            return func(*args, **kwargs)
        name, inplace = name_of(func)
        inplace = inplace or "out" in kwargs
        before = None
        if inplace:
            target = kwargs.get("out", args[0] if args else None)
            if isinstance(target, (list, tuple)):  # torch._foreach_add_(params, …), a fused optimizer's step
                for each in target:
                    self._before_inplace(each)
                    if _learned(each):
                        self._nodes.pop(id(each), None)
                return func(*args, **kwargs)
            before = self._before_inplace(target)
            if _learned(target):  # `p -= lr * p.grad`: a training step, not attention; the next use reads p anew
                result = func(*args, **kwargs)
                self._nodes.pop(id(target), None)
                return result
        result = func(*args, **kwargs)
        if name == "flex_attention":  # its inner op: a call its wrapper did not see
            try:
                FLEX_ATTENTION.heard(self, result)
            except Exception as exc:  # the recorder must never break the user's code
                self.failed = self.failed or exc
            return result
        plain = name.rstrip("_") if inplace and name != "setitem" else name
        if plain not in KINDS:  # not a call attention is made of
            return result
        if not inplace and args and result is args[0]:
            return result  # dropout in eval mode, .float() of a float tensor: nothing happened
        try:
            self._record(plain, args, kwargs, result, before, inplace)
        except Exception as exc:  # the recorder must never break the user's code
            self.failed = self.failed or exc
        return result

    def _before_inplace(self, target: Any) -> Node | None:
        """Keep the values a tracked tensor holds before the code overwrites them."""
        if not isinstance(target, torch.Tensor):
            return None
        entry = self._nodes.get(id(target))
        if entry is None or entry[0]() is not target:
            return None
        node = entry[1]
        while node.is_view and node.inputs and isinstance(node.inputs[0], Node):
            node = node.inputs[0]  # a view shares its base's numbers: keep the base's
        if version_of(node.value) == node.version:
            node.value = node.value.clone()
            node.version = version_of(node.value)
        return entry[1]

    def _record(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any,
                before: Node | None, inplace: bool) -> None:
        if name in CASTS:
            if not isinstance(result, torch.Tensor) or (args and result is args[0]):
                return
            name = "cast"
        try:
            origin, scope = self._where()
        except OwnCallError:
            return
        if inplace:
            target = kwargs.get("out", args[0] if args else None)
            if before is None and name not in ("setitem", "masked_fill", "add", "sub", "mul", "div"):
                return  # an in-place change of a tensor no one recorded
            wrapped = tuple(before if (n == 0 and before is not None) else self._wrap(a, scope, origin)
                            for n, a in enumerate(args))
            result = target if isinstance(target, torch.Tensor) else result
        else:
            wrapped = tuple([self._wrap(a, scope, origin) for a in args])
        inputs_kwargs = {k: self._wrap(v, scope, origin) for k, v in kwargs.items() if k != "out"} if kwargs else {}
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        if name == "multi_head_attention_forward":
            outputs = (result[0],)
        kind = KINDS[name]  # each call's kind, given once, here
        for part, out in enumerate(outputs):
            if not isinstance(out, torch.Tensor):
                continue
            value = out.detach()
            node = Node(name, value, wrapped, inputs_kwargs, origin, scope, version_of(value),
                        part=part if len(outputs) > 1 else None, kind=kind)
            if name == "multi_head_attention_forward":
                node.returned = tuple(r.detach() if isinstance(r, torch.Tensor) else r for r in result)
            anchor = name in ANCHORS or written_softmax(node)
            self._link(node, anchor)
            self._track(out, node)
            if anchor:
                self._anchor(node, scope or Scope("attention", 0))

    @staticmethod
    def _link(node: Node, anchor: bool | None = None) -> None:
        """Forward links from a softmax onwards: where its weights go (the output, the concat, the projection), as
        far as the forward pattern (kinds.FORWARD) reads them."""
        if anchor if anchor is not None else (node.name in ANCHORS or written_softmax(node)):
            node.after = After.ANCHOR
        for arg in (*node.inputs, *node.kwargs.values()) if node.kwargs else node.inputs:  # Node.tensors(), inline
            for source in arg if isinstance(arg, (tuple, list)) else (arg,):
                if not isinstance(source, Node) or source.after is None:
                    continue
                source.consumers.append(node)
                reached = FORWARD[source.after].get(node.kind)
                if reached is not None and (node.after is None or reached.value < node.after.value):
                    node.after = reached

    def _root(self) -> None:
        """Keep every module running now, outermost first, so each attention is named by its path in the outermost
        model that holds it (names.py): a draft model run from inside another's `generate` is no part of it."""
        frame = outside_mode(sys._getframe())
        running = []
        depth = 0
        while frame is not None and depth < MAX_DEPTH:
            depth += 1
            owner = frame.f_locals.get("self") if "self" in frame.f_code.co_varnames else None
            if isinstance(owner, torch.nn.Module):
                running.append(owner)
            frame = frame.f_back
        for module in reversed(running):
            self.roots.setdefault(id(module), module)

    def _anchor(self, node: Node, scope: Scope) -> None:
        if scope.module is not None:
            self._root()
        if scope not in self.anchors:
            self.anchors[scope] = deque(maxlen=self.max_calls)
            self.order.append(scope)
            self.seen[scope] = 0
        node.call = self.seen[scope]
        self.seen[scope] += 1
        kept = self.anchors[scope]
        for hook in HOOKS:  # pruning lets go of what made the call, before its bytes are counted
            hook.anchored(self, node)
        if self.budget is not None:
            node.held = held_bytes(node)
            if len(kept) == kept.maxlen and kept:
                self.kept_bytes -= kept[0].held  # the oldest call is dropped as this one is kept
            self.kept_bytes += node.held
        kept.append(node)
        if self.budget is not None and self.kept_bytes > self.budget and self.over_budget is not None:
            self.over_budget(self.kept_bytes, self.budget)

