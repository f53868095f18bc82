"""A seeded, parallel Pathfinder-32 generator written from the published procedure.

Procedure (Linsley et al. 2018, "Learning long-range spatial dependencies with horizontal
gated recurrent units", §3 and supplement; LRA uses the 32x32 version, Tay et al. 2021 §3):

* an image holds curvy paths drawn as chains of short line segments ("paddles", i.e.
  dashes separated by gaps) on a black background, and two circular markers;
* the task is to say whether the two markers are connected by one path (label 1) or lie
  on two different paths (label 0);
* difficulty is set by the contour length, the number of paddles of the paths that carry
  the markers: 6, 9, 14 (LRA's folders ``curv_baseline``, ``curv_contour_length_9``,
  ``curv_contour_length_14``; LRA's Pathfinder is the last, docs/reference-implementations.md §6);
* shorter distractor paths fill the image; paths do not cross or touch; consecutive
  paddles turn by a bounded random angle (the "continuity" of the original generator).

Every image contains two target paths of the contour length, so positive and negative
images have the same amount of ink: in a positive image both markers sit on the two ends
of the first target path; in a negative one, one marker on an end of each target path.

The published procedure does not fix pixel-level constants for 32x32; the choices made
here are the fields of ``PathfinderConfig`` (paddle 2 px, gap 1 px, thickness 1 px, turn
at most 35 degrees per paddle, marker radius 1.5 px, 4x supersampled drawing reduced by box
averaging, which gives anti-aliased 8-bit gray levels like the originals).

Image ``i`` is drawn from ``SeedSequence([seed, contour_length, i])`` alone, so the set is
reproducible and independent of how many processes generate it. Labels alternate
(even ``i`` positive), so every set is balanced.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import random
import sys
from dataclasses import asdict, dataclass, field

import numpy as np
from PIL import Image, ImageDraw
from tqdm.auto import tqdm

DIFFICULTIES = {"easy": ("curv_baseline", 6), "medium": ("curv_contour_length_9", 9),
                "hard": ("curv_contour_length_14", 14)}


@dataclass(frozen=True)
class PathfinderConfig:
    """Geometry of the generated images (lengths in pixels of the 32x32 image)."""

    contour_length: int = 14
    image_size: int = 32
    paddle_length: float = 2.0
    paddle_gap: float = 1.0
    thickness: float = 1.0
    max_turn_deg: float = 35.0
    marker_radius: float = 1.5
    separation: float = 2.0  # minimum centre-line distance between different paths
    distractor_length: int | None = None  # default: contour_length // 3 (at least 2)
    num_distractors: int | None = None  # default: ceil(18 / distractor_length)
    supersample: int = 4
    seed: int = 0

    def __post_init__(self):
        if self.contour_length < 2:
            raise ValueError(f"contour_length must be >= 2, got {self.contour_length}")
        if self.image_size < 8:
            raise ValueError(f"image_size must be >= 8, got {self.image_size}")

    @property
    def n_distractor_paddles(self) -> int:
        return self.distractor_length or max(2, self.contour_length // 3)

    @property
    def n_distractors(self) -> int:
        return self.num_distractors if self.num_distractors is not None else math.ceil(18 / self.n_distractor_paddles)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class PathfinderSample:
    """One image and how it was drawn: paths (list of paddles ``(x0, y0, x1, y1)``), markers ``(x, y, path)``."""

    image: np.ndarray
    label: int
    paths: list = field(default_factory=list)
    markers: list = field(default_factory=list)
    n_targets: int = 2


_SAMPLES_PER_PADDLE = 4
_CELL = 1.0  # keep-out grid resolution in pixels (one image pixel)


class _Canvas:
    """Keep-out bookkeeping on a grid of one-pixel cells.

    ``blocked`` marks every cell closer than ``separation`` to a path already placed (and
    the larger disc around a target end that may carry a marker); ``own`` maps the cells
    near the path being grown to the index of the paddle that claimed them, so a paddle
    can be kept away from all of its own path but its predecessor, and withdrawn again.
    Grid look-ups in plain Python are far cheaper than distance matrices for these sizes.
    """

    def __init__(self, cfg: PathfinderConfig):
        self.cfg = cfg
        self.n = int(math.ceil(cfg.image_size / _CELL))
        self.blocked = bytearray(self.n * self.n)
        self._disc = self._disc_offsets(cfg.separation)
        self._marker_disc = self._disc_offsets(cfg.separation + cfg.marker_radius)

    @staticmethod
    def _disc_offsets(radius: float) -> list[tuple[int, int]]:
        r = int(math.ceil(radius / _CELL))
        return [(dx, dy) for dx in range(-r, r + 1) for dy in range(-r, r + 1)
                if (dx * dx + dy * dy) * _CELL * _CELL < radius * radius]

    def cell(self, x: float, y: float) -> int:
        return int(y / _CELL) * self.n + int(x / _CELL)

    def cells_near(self, points, offsets) -> set[int]:
        n, out = self.n, set()
        for x, y in points:
            cx, cy = int(x / _CELL), int(y / _CELL)
            for dx, dy in offsets:
                ix, iy = cx + dx, cy + dy
                if 0 <= ix < n and 0 <= iy < n:
                    out.add(iy * n + ix)
        return out

    def is_clear(self, points) -> bool:
        blocked, n = self.blocked, self.n
        return not any(blocked[int(y / _CELL) * n + int(x / _CELL)] for x, y in points)

    def block(self, points, marker_ends=()) -> None:
        for c in self.cells_near(points, self._disc):
            self.blocked[c] = 1
        for c in self.cells_near(marker_ends, self._marker_disc):
            self.blocked[c] = 1


def _paddle_points(x, y, angle, length):
    dx, dy = length * math.cos(angle), length * math.sin(angle)
    m = _SAMPLES_PER_PADDLE - 1
    return [(x + dx * i / m, y + dy * i / m) for i in range(_SAMPLES_PER_PADDLE)]


def _ring(x, y, radius):
    return [(x, y)] + [(x + radius * math.cos(t), y + radius * math.sin(t))
                       for t in (0, math.pi / 2, math.pi, 3 * math.pi / 2)]


def _try_path(rng: random.Random, cfg: PathfinderConfig, canvas: _Canvas, n_paddles: int, is_target: bool,
              backtracks: int = 24):
    """Grow one path of ``n_paddles`` paddles clear of ``canvas``; None on failure.

    When no turn angle lets paddle ``k`` fit, paddle ``k - 1`` is withdrawn and redrawn
    (a bounded depth-first search): long paths in a small image would almost never fit
    if every dead end restarted the whole path.
    """
    lo = cfg.marker_radius + 0.5 if is_target else cfg.thickness
    hi = cfg.image_size - lo
    step = cfg.paddle_length + cfg.paddle_gap
    max_turn = math.radians(cfg.max_turn_deg)
    heading = rng.uniform(-math.pi, math.pi)
    states = [(rng.uniform(lo, hi), rng.uniform(lo, hi), heading)]  # where paddle k starts, heading in
    paddles, points, claims = [], [], []
    own: dict[int, int] = {}
    while len(paddles) < n_paddles:
        k = len(paddles)
        x, y, angle = states[k]
        placed = False
        for _attempt in range(6):
            a = angle + (rng.uniform(-max_turn, max_turn) if k else 0.0)
            pts = _paddle_points(x, y, a, cfg.paddle_length)
            (sx, sy), (ex, ey) = pts[0], pts[-1]  # a segment lies inside the box if its ends do
            if not (lo <= sx <= hi and lo <= sy <= hi and lo <= ex <= hi and lo <= ey <= hi):
                continue
            probe = pts
            if is_target and k == 0:  # an end may carry a marker: it needs more room
                probe = pts + _ring(*pts[0], cfg.marker_radius)
            elif is_target and k == n_paddles - 1:
                probe = pts + _ring(*pts[-1], cfg.marker_radius)
            if not canvas.is_clear(probe):
                continue
            # keep clear of its own earlier paddles (all but the previous one): no loops
            n = canvas.n
            if any(own.get(int(py / _CELL) * n + int(px / _CELL), k) < k - 1 for px, py in pts):
                continue
            placed = True
            break
        if placed:
            paddles.append((x, y, pts[-1][0], pts[-1][1]))
            points.append(pts)
            claim = [c for c in canvas.cells_near(pts, canvas._disc) if c not in own]
            for c in claim:
                own[c] = k
            claims.append(claim)
            states.append((x + step * math.cos(a), y + step * math.sin(a), a))
        else:
            if k == 0 or backtracks == 0:
                return None
            backtracks -= 1
            paddles.pop()
            points.pop()
            for c in claims.pop():
                del own[c]
            states.pop()
    return paddles, [p for pts in points for p in pts]


def _place(rng, cfg, canvas, n_paddles, is_target, tries=20):
    for _ in range(tries):
        result = _try_path(rng, cfg, canvas, n_paddles, is_target)
        if result is not None:
            paddles, pts = result
            ends = [paddles[0][:2], paddles[-1][2:]] if is_target else ()
            canvas.block(pts, ends)
            return paddles
    return None


def _place_distractor(rng, cfg, canvas, n_paddles, tries=4):
    # a distractor that does not fit after a few tries is left out: the image is full
    for _ in range(tries):
        result = _try_path(rng, cfg, canvas, n_paddles, False, backtracks=4)
        if result is not None:
            canvas.block(result[1])
            return result[0]
    return None


def render(cfg: PathfinderConfig, paths: list, markers: list) -> np.ndarray:
    """Draw paddles and markers at ``supersample`` x resolution and box-average to uint8."""
    s = cfg.supersample
    size = cfg.image_size * s
    canvas = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(canvas)
    width = max(1, round(cfg.thickness * s))
    for paddles in paths:
        for x0, y0, x1, y1 in paddles:
            draw.line([(x0 * s, y0 * s), (x1 * s, y1 * s)], fill=255, width=width)
    r = cfg.marker_radius * s
    for x, y, _ in markers:
        draw.ellipse([x * s - r, y * s - r, x * s + r, y * s + r], fill=255)
    return np.asarray(canvas.resize((cfg.image_size, cfg.image_size), Image.BOX), dtype=np.uint8)


def sample_rng(cfg: PathfinderConfig, index: int) -> random.Random:
    state = np.random.SeedSequence([cfg.seed, cfg.contour_length, index]).generate_state(2, dtype=np.uint64)
    return random.Random(int(state[0]) << 64 | int(state[1]))


def generate_sample(cfg: PathfinderConfig, index: int) -> PathfinderSample:
    """Image ``index`` of the set defined by ``cfg`` (label 1 = the markers are connected)."""
    rng = sample_rng(cfg, index)
    label = 1 - index % 2
    while True:  # restart the whole image in the rare case that it cannot be completed
        canvas = _Canvas(cfg)
        targets = [_place(rng, cfg, canvas, cfg.contour_length, True) for _ in range(2)]
        if any(t is None for t in targets):
            continue
        paths = list(targets)
        for _ in range(cfg.n_distractors):
            distractor = _place_distractor(rng, cfg, canvas, cfg.n_distractor_paddles)
            if distractor is not None:
                paths.append(distractor)
        a, b = targets
        start_a, end_a = a[0][:2], a[-1][2:]
        if label:
            markers = [(*start_a, 0), (*end_a, 0)]
        else:
            end_b = b[0][:2] if rng.random() < 0.5 else b[-1][2:]
            markers = [(*(start_a if rng.random() < 0.5 else end_a), 0), (*end_b, 1)]
        return PathfinderSample(render(cfg, paths, markers), label, paths, markers)


def _generate_range(args) -> tuple[np.ndarray, np.ndarray]:
    cfg_dict, start, stop = args
    cfg = PathfinderConfig(**cfg_dict)
    samples = [generate_sample(cfg, i) for i in range(start, stop)]
    return np.stack([s.image for s in samples]), np.array([s.label for s in samples], dtype=np.int64)


def generate(cfg: PathfinderConfig, n: int, *, workers: int | None = None, chunk: int = 250,
             progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Images ``0..n-1``: ``uint8 (n, size, size)`` and labels, on all cores."""
    workers = workers or os.cpu_count() or 1
    jobs = [(cfg.as_dict(), a, min(a + chunk, n)) for a in range(0, n, chunk)]
    images, labels = [], []
    with tqdm(total=n, desc=f"pathfinder L={cfg.contour_length}", unit="img", disable=not progress) as bar:
        if workers == 1 or len(jobs) <= 1:
            results = map(_generate_range, jobs)
            pool = None
        else:
            method = "fork" if sys.platform == "linux" else "spawn"
            pool = multiprocessing.get_context(method).Pool(min(workers, len(jobs)))
            results = pool.imap(_generate_range, jobs)
        try:
            for imgs, labs in results:
                images.append(imgs)
                labels.append(labs)
                bar.update(len(labs))
        finally:
            if pool is not None:
                pool.close()
                pool.join()
    if not images:
        return np.zeros((0, cfg.image_size, cfg.image_size), np.uint8), np.zeros(0, np.int64)
    return np.concatenate(images), np.concatenate(labels)
