"""A run's metrics as the live plot draws them, bounded: each metric keeps at most ``max_points``
points by halving its resolution whenever it fills up, so a run that logs forever uses fixed
memory. The points come from metric_lines.py's parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .metric_lines import MetricPoint, is_time_like


@dataclass(slots=True)
class Segment:
    """One unbroken curve of a metric: a seed, or the stretch after a restart of the step count.

    Only every ``stride``-th point is stored; ``last`` keeps the newest point anyway, so the plot
    always ends at the latest value.
    """

    label: str
    stride: int
    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    seen: int = 0
    last: tuple[float, float] | None = None

    def add(self, x: float, y: float) -> None:
        if self.seen % self.stride == 0:
            self.xs.append(x)
            self.ys.append(y)
        self.seen += 1
        self.last = (x, y)

    @property
    def last_x(self) -> float | None:
        return self.last[0] if self.last else None

    def points(self) -> tuple[list[float], list[float]]:
        """The stored points plus the newest one if decimation skipped it."""
        if self.last is None or (self.xs and (self.xs[-1], self.ys[-1]) == self.last):
            return list(self.xs), list(self.ys)
        return [*self.xs, self.last[0]], [*self.ys, self.last[1]]

    def halve(self) -> None:
        """Keep every other stored point; later points are stored at half the rate."""
        del self.xs[1::2]
        del self.ys[1::2]
        self.stride *= 2


@dataclass(slots=True)
class _Metric:
    stride: int = 1
    segments: list[Segment] = field(default_factory=list)

    @property
    def stored(self) -> int:
        return sum(len(segment.xs) for segment in self.segments)

    @property
    def seen(self) -> int:
        return sum(segment.seen for segment in self.segments)


class MetricSeries:
    """Every metric of one run, bounded: the data behind the live plot.

    ``start(run_id)`` with a new id drops the previous run's curves. Each metric keeps at most
    ``max_points`` stored points (over all its segments), at most ``max_segments`` segments (the
    newest), and only the first ``max_metrics`` metric names are kept at all. ``version`` changes
    whenever something was added, so a view can tell cheaply whether to redraw.
    """

    def __init__(
        self, *, max_points: int = 2000, max_segments: int = 8, max_metrics: int = 32
    ) -> None:
        if max_points < 4:
            raise ValueError(f"max_points must be at least 4, not {max_points}")
        self.max_points = max_points
        self.max_segments = max_segments
        self.max_metrics = max_metrics
        self.run_id = ""
        self.version = 0
        self.progress = ""
        self._metrics: dict[str, _Metric] = {}

    def start(self, run_id: str, *, fresh: bool = False) -> None:
        """Follow run ``run_id``: a different id, or ``fresh``, starts from nothing (a run the
        engine repeats under the same id after a fix must not continue the failed one's curve)."""
        if fresh or run_id != self.run_id:
            self.run_id = run_id
            self._metrics.clear()
            self.progress = ""
            self.version += 1

    def add(self, point: MetricPoint) -> None:
        for name, value in point.values.items():
            metric = self._metric(name)
            if metric is not None:
                self._add_to(metric, point, value)
        if point.step is not None:
            self.progress = point.progress
        self.version += 1

    def _metric(self, name: str) -> _Metric | None:
        metric = self._metrics.get(name)
        if metric is None and len(self._metrics) < self.max_metrics:
            metric = self._metrics[name] = _Metric()
        return metric

    def _add_to(self, metric: _Metric, point: MetricPoint, value: float) -> None:
        segment = metric.segments[-1] if metric.segments else None
        last_x = segment.last_x if segment else None
        # A step that goes back means the loop restarted (next seed, next config): a new curve,
        # not a line drawn back across the plot.
        restarted = point.step is not None and last_x is not None and point.step < last_x
        if segment is None or restarted or (point.group and point.group != segment.label):
            label = point.group or ("" if segment is None else f"#{len(metric.segments) + 1}")
            segment = Segment(label, metric.stride)
            metric.segments.append(segment)
            if len(metric.segments) > self.max_segments:
                del metric.segments[0]
        x = point.step if point.step is not None else (last_x + 1 if last_x is not None else 1.0)
        segment.add(x, value)
        if metric.stored > self.max_points:
            metric.stride *= 2
            for each in metric.segments:
                each.halve()

    def names(self) -> list[str]:
        """Every metric seen so far, in the order they first appeared."""
        return list(self._metrics)

    def plottable(self) -> list[str]:
        """The metrics with at least two points: a curve needs two."""
        return [name for name, metric in self._metrics.items() if metric.seen >= 2]

    def default_metric(self) -> str | None:
        """What to plot unless the researcher chose: the first plottable metric not a time."""
        names = self.plottable()
        return next((name for name in names if not is_time_like(name)), names[0] if names else None)

    def segments(self, name: str) -> list[Segment]:
        metric = self._metrics.get(name)
        return list(metric.segments) if metric else []

    def latest(self, name: str) -> float | None:
        segments = self.segments(name)
        last = segments[-1].last if segments else None
        return last[1] if last else None

    def stored_points(self, name: str) -> int:
        metric = self._metrics.get(name)
        return metric.stored if metric else 0
