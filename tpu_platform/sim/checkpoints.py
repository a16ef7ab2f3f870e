"""The workload's side of the maintenance checkpoint protocol (``tpu_platform.hotswap.core.maintenance``).

When the controller writes ``tpu-platform.dev/checkpoint-requested-at`` on a JobSet, its trainer
either never answers (a workload that does not implement the protocol) or, after a delay, writes a
checkpoint (nothing since it is lost any more) and then ``checkpoint-completed-at``. The share that
never answers and the delay are *chosen* (``Timings.checkpoint_never_answers``,
``checkpoint_answer_min_s`` .. ``checkpoint_answer_max_s``): no public figure exists. Draws depend on
the seed, the JobSet and the request time only, so they do not shift other random streams.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.times import format_time, parse_time
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.model import Workload

CAUSE_MOVE = "maintenance-move"
"""A run stopped because the controller moved the work off a slice before its maintenance."""


class CheckpointResponder:
    """Answers checkpoint requests as the simulated trainers would."""

    def __init__(self, cluster: Cluster, save_checkpoint: Callable[[Workload], None], *, seed: int) -> None:
        self.c = cluster
        self.save_checkpoint = save_checkpoint
        self.seed = seed
        self.requests = 0
        self.answers = 0
        cluster.annotation_listeners.append(self._annotated)

    def _annotated(self, w: Workload, keys: tuple[str, ...]) -> None:
        if k.CHECKPOINT_REQUESTED_AT_ANNOTATION not in keys:
            return
        text = w.annotations.get(k.CHECKPOINT_REQUESTED_AT_ANNOTATION, "")
        self.requests += 1
        t = self.c.t
        rng = random.Random(f"checkpoint:{self.seed}:{w.key}:{text}")
        if rng.random() < t.checkpoint_never_answers:
            return
        delay = rng.uniform(t.checkpoint_answer_min_s, t.checkpoint_answer_max_s)
        self.c.engine.after(delay, "checkpoint-answer", self._answer, w.key, w.uid, text)

    def _answer(self, key: str, uid: str, request: str) -> None:
        w = self.c.workloads.get(key)
        if w is None or w.uid != uid or w.state != "admitted":
            return
        if w.annotations.get(k.CHECKPOINT_REQUESTED_AT_ANNOTATION) != request:
            return  # asked again since: that request gets its own answer
        self.save_checkpoint(w)
        w.annotations[k.CHECKPOINT_COMPLETED_AT_ANNOTATION] = format_time(self.c.now)
        self.answers += 1
        self.c.changed()


def answered_before(w: Workload, now: float) -> bool:
    """The workload answered the current request, at or before ``now``: a move now is at a checkpoint."""
    requested = parse_time(w.annotations.get(k.CHECKPOINT_REQUESTED_AT_ANNOTATION))
    completed = parse_time(w.annotations.get(k.CHECKPOINT_COMPLETED_AT_ANNOTATION))
    return requested is not None and completed is not None and requested <= completed <= now
