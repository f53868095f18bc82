"""The papers' claims, measured on recorded runs: the verdicts of the copy-task and MNIST pages.

The copy task (Katharopoulos et al. §4.1, Fig. 2; Nguyen et al. §4.1, Fig. 1), :func:`measure_copy`:

1. linear attention reaches softmax's final loss (here: within 10 % of softmax's test loss);
2. softmax converges fastest, and each momentum variant converges faster than linear attention;
3. adaptive momentum (β̃ computed, Nguyen et al. eq. 18) does as well as the hand-tuned momentum
   connection (within 10 % of its test loss);
4. against the Reformer baselines lsh-1, lsh-4 and lsh-8 (:data:`LSH_COPY`, once recorded): linear attention
   "reaches a lower loss than lsh" (Katharopoulos et al. §4.1, on test loss, as claim 1);
5. momentum and adaptive momentum "converge faster and achieve better training loss than both linear
   transformer and reformer" (Nguyen et al. Fig. 1 caption), against each lsh-X recorded: fewer steps to both
   levels below and a lower final training loss (:func:`final_train_loss`), all three.

"Converges faster" is measured as steps to reach a loss (:func:`lra_kit.results.steps_to_loss`) at two
levels, from linear attention's runs: ``early``, half its first logged training loss (mean over its seeds),
and ``late``, 1.5 × its mean final test loss. Where a side has several seeds, "faster" and "lower" are
decided only where the seeds' ranges do not overlap (:func:`lower`); "within 10 %" (claims 1 and 3) is a claim
of sameness, which overlapping seeds support (:func:`within`); where a side has one seed, the verdict says the
spread is not known. The baselines' claims (4, 5) are stricter: the seeds' ranges are the only noise the copy
task measures, so a side with fewer than :data:`MIN_SEEDS` seeds leaves them undecided, saying so
(:func:`lower_in_every`); each lsh-X recorded is a row of its own.

MNIST (Katharopoulos et al. §4.2.1, Table 1; Nguyen et al. §4.2, Table 2), :func:`mnist_claims`: linear
attention's bits/dim within the papers' gap of softmax's, and the momentum variants below linear's, with the
LRA page's rule: a gap counts only beyond two standard errors (:func:`bits_noise`, from the per-image spread
the evaluation records); where the records lack that spread, the verdict says it cannot be decided. Against the
Reformer baselines LSH-1 and LSH-4 (Katharopoulos et al. Table 1 and appendix Fig. 5a: linear "outperforming
significantly both reformer variants"), :func:`mnist_baseline_claims`: linear attention's bits/dim below each, with
the same rule.

LRA (Nguyen et al. §4.3, Table 4; Ma et al. §4.1, Table 1), :func:`lra_claims`: on one task, the order the
papers' tables give two attentions (momentum and adaptive momentum above linear; softmax against linear;
Luna-16 against linear and softmax; and, in :func:`lra_baseline_claims` once a baseline is recorded on the task,
Reformer and Linformer against linear attention and the momentum transformers), measured on test accuracy with
the same rule (:func:`lower`) and a gap
that counts only beyond two standard errors (:func:`gap_noise`: the test set's sampling, plus the seeds'
spread where a side has several; where a side has one seed, the verdict says so).

Every verdict is computed here from the records, never written in advance.
"""
from __future__ import annotations

import math

from lra_kit.paper_numbers import KATHAROPOULOS_TABLE1, LUNA_TABLE1, MOMENTUM_TABLE2, MOMENTUM_TABLE4
from lra_kit.results import spread, standard_error, steps_to_loss
from lra_kit.viz.results import above_or_below, mean_range

# The variants' labels (the pages' names for them): the two the papers compare everything with, and the
# momentum variants of Nguyen et al.
SOFTMAX = "softmax"
LINEAR = "linear"
MOMENTUM_VARIANTS = ("momentum", "momentum + connection", "adaptive momentum")
LUNA = "luna"
# The LRA orders the papers' tables give (lra_claims): in one paper's table, (our label, its row) against (our
# label, its row); the LRA page labels momentum with the adaptive connection "adaptive momentum".
LRA_PAIRS = (
    ("Nguyen et al.", MOMENTUM_TABLE4, (MOMENTUM_VARIANTS[0], "Momentum transformer"), (LINEAR, "Linear")),
    ("Nguyen et al.", MOMENTUM_TABLE4, (MOMENTUM_VARIANTS[2], "Adaptive momentum transformer"), (LINEAR, "Linear")),
    ("Nguyen et al.", MOMENTUM_TABLE4, (SOFTMAX, "Softmax"), (LINEAR, "Linear")),
    ("Ma et al.", LUNA_TABLE1, (LUNA, "Luna-16"), (LINEAR, "Linear Trans.")),
    ("Ma et al.", LUNA_TABLE1, (LUNA, "Luna-16"), (SOFTMAX, "Transformer")),
)
# The Reformer and Linformer baselines, labelled by their records' names: LSH with X rounds of hashing is lsh-X
# (Katharopoulos et al. §4), the LRA's Reformer has 2 rounds (the Nyströmformer code's "reformer-2").
LSH_COPY = ("lsh-1", "lsh-4", "lsh-8")  # Katharopoulos et al. Fig. 2
LSH_MNIST = {"lsh-1": "LSH-1", "lsh-4": "LSH-4"}  # label: row of Katharopoulos et al. Table 1
REFORMER, LINFORMER = "lsh-2", "linformer"
LRA_BASELINES = (REFORMER, LINFORMER)
# Nguyen et al. §4.3: the momentum transformers "outperform ... reformer and linformer"; Ma et al. Table 1 puts both
# far above linear attention on ListOps (37.27 and 35.70 against 16.13) and below it on Text. A pair is measured
# on a task once its baseline is recorded there (they are not run on every task).
LRA_BASELINE_PAIRS = tuple(
    pair for baseline, t4, l1 in ((REFORMER, "Reformer", "Reformer"), (LINFORMER, "Linformer", "Linformer"))
    for pair in (("Nguyen et al.", MOMENTUM_TABLE4, (baseline, t4), (LINEAR, "Linear")),
                 ("Nguyen et al.", MOMENTUM_TABLE4, (MOMENTUM_VARIANTS[0], "Momentum transformer"), (baseline, t4)),
                 ("Nguyen et al.", MOMENTUM_TABLE4, (MOMENTUM_VARIANTS[2], "Adaptive momentum transformer"),
                  (baseline, t4)),
                 ("Ma et al.", LUNA_TABLE1, (baseline, l1), (LINEAR, "Linear Trans."))))
MIN_SEEDS = 2  # the copy task's baseline claims: the seeds a side needs before their ranges decide anything
WITHIN = 1.1  # "reaches" and "does as well": at most 10 % above the other's test loss
TIE = 0.5  # LRA: a paper's gap under half a point is no order (Text's test set alone has 0.3 points of noise)


def verdict(ok: bool, seeds: tuple[int, ...] = ()) -> str:
    """A claim's verdict (Markdown); ``seeds``, the number of seeds on each side, add a note when one has one."""
    text = "**holds** at this scale" if ok else "does **not** hold at this scale"
    if seeds and min(seeds) < 2:
        text += " (one seed: the seed-to-seed spread is not known yet)"
    return text


def seed_range(s: dict) -> tuple[float, float]:
    """The range of a :func:`lra_kit.results.spread` with a seed that never got there (``missed``) at ∞: a
    range whose seeds all got there is ``[min, max]``, one with some that never did ``[min, ∞]``."""
    low = s["min"] if s["missed"] < s["n"] else math.inf
    return low, math.inf if s["missed"] else s["max"]


def overlap(a: dict, b: dict) -> bool:
    """Whether two :func:`lra_kit.results.spread` overlap, where some side has several seeds (one seed is a
    point, and two points decide nothing about a spread, so they never overlap). A seed that never got there
    is at ∞ (:func:`seed_range`): a faster seed beside one that never arrives leaves the claim open."""
    (a_low, a_high), (b_low, b_high) = seed_range(a), seed_range(b)
    return max(a["n"], b["n"]) > 1 and not (a_high < b_low or a_low > b_high)


def lower(a: dict, b: dict) -> str:
    """The verdict on "``a`` is lower than ``b``" for two :func:`lra_kit.results.spread` (steps, a loss, bits/dim).

    Where some side has several seeds and the two ranges overlap (one seed is a point; a seed that never
    got there, ``missed``, is at ∞), the claim is not decided. Otherwise the means decide, and a side on
    which some seed never got there counts as never.
    """
    decided = is_lower(a, b)
    if decided is None:
        return "not decided: the seeds' ranges overlap"
    return verdict(decided, (a["n"], b["n"]))


def is_lower(a: dict, b: dict) -> bool | None:
    """The decision behind :func:`lower`: ``None`` where the seeds' ranges overlap, else whether ``a``'s mean is
    below ``b``'s (a side on which some seed never got there counts as never)."""
    if overlap(a, b):
        return None

    def value(s: dict) -> float:
        return math.inf if s["missed"] else s["mean"]

    return value(a) < value(b)


def within(a: dict, b: dict, factor: float = WITHIN) -> str:
    """The verdict on "``a`` is as low as ``b``, up to ``factor``" for two :func:`lra_kit.results.spread` (test
    losses): "as well as" is a claim of sameness, so overlapping seeds support it rather than leave it open.

    It fails where every seed of ``a`` is above ``factor`` × ``b``'s highest seed; it holds where ``a``'s mean
    is at most ``factor`` × ``b``'s mean and no seed of ``a`` is above ``factor`` × ``b``'s highest; otherwise
    (some seeds of ``a`` within, some far above) it is not decided. With one seed each, it is ``a ≤ factor·b``.
    """
    if a["min"] > factor * b["max"]:
        return verdict(False, (a["n"], b["n"]))
    if a["mean"] <= factor * b["mean"] and a["max"] <= factor * b["max"]:
        return verdict(True, (a["n"], b["n"]))
    return "not decided: some seeds are within it and some are not"


def fastest_verdict(reach: dict[str, dict]) -> str:
    """The verdict on "softmax converges fastest" from each variant's :func:`lra_kit.results.spread` of steps:
    it holds where softmax is lower (:func:`is_lower`) than every other variant, fails where some variant is
    decided not slower, and is not decided where some ranges overlap and none is decided faster."""
    if SOFTMAX not in reach:
        return verdict(False)
    others = [label for label in reach if label != SOFTMAX]
    decided = [is_lower(reach[SOFTMAX], reach[label]) for label in others]
    if False in decided:
        return verdict(False, (reach[SOFTMAX]["n"], reach[others[decided.index(False)]]["n"]))
    if None in decided:
        return "not decided: the seeds' ranges overlap"
    return verdict(True, (reach[SOFTMAX]["n"], *(reach[label]["n"] for label in others)))


def measure_copy(runs: dict[str, list[dict]]) -> dict:
    """Measure the claims on ``runs``: variant label → its recorded seeds (results records with ``curves``).

    Labels are ``softmax``, ``linear`` and those of :data:`MOMENTUM_VARIANTS`; a claim whose variants
    are not all recorded yet says what it waits for. Returns ``loss`` and ``accuracy`` (a
    :func:`lra_kit.results.spread` of the test metric per label), ``levels`` (``{"early": …, "late": …}``,
    empty without linear attention), ``reach`` (level name → label → spread of the steps to that level)
    ``train_loss`` (the spread of :func:`final_train_loss`), ``claims``, a list of ``(claim, measured,
    verdict)`` rows (claims 1 to 3), and ``baseline_claims``, those of claims 4 and 5, against each baseline of
    :data:`LSH_COPY` recorded (empty where none is). A baseline's runs count among the variants of claim 2's
    "softmax converges fastest", as its curve is in Nguyen et al.'s Fig. 1.
    """
    runs = {label: rs for label, rs in runs.items() if rs}
    loss = {label: spread(r["metrics"]["test"]["loss"] for r in rs) for label, rs in runs.items()}
    train_loss = {label: spread(final_train_loss(r["curves"]["train"]) for r in rs) for label, rs in runs.items()}
    acc = {label: spread(r["metrics"]["test"]["accuracy"] for r in rs) for label, rs in runs.items()}
    levels = {}
    if LINEAR in runs:
        first = spread(r["curves"]["train"][0]["loss"] for r in runs[LINEAR])["mean"]
        levels = {"early": 0.5 * first, "late": 1.5 * loss[LINEAR]["mean"]}
    reach = {when: {label: spread(steps_to_loss(r["curves"]["train"], level) for r in rs)
                    for label, rs in runs.items()} for when, level in levels.items()}
    claims = []

    def waits(claim: str, needed) -> bool:
        missing = [label for label in needed if label not in runs]
        if missing:
            claims.append((claim, "–", "waits for: " + ", ".join(missing)))
        return bool(missing)

    if not waits("1. linear reaches softmax's final loss", (SOFTMAX, LINEAR)):
        claims.append(("1. linear reaches softmax's final loss (within 10 %)",
                       f"test loss {mean_range(loss[LINEAR], 4)} against {mean_range(loss[SOFTMAX], 4)}; linear's "
                       f"accuracy {acc[LINEAR]['mean']:.3f} (target 0.95)",
                       within(loss[LINEAR], loss[SOFTMAX])))
    for when, level in levels.items():
        def steps(label, r=reach[when]):  # a level some seed never reached counts as never reached
            return math.inf if r[label]["missed"] else r[label]["mean"]

        fastest = min(runs, key=steps)
        claims.append((f"2. softmax converges fastest ({when}, loss {level:.3f})",
                       f"fastest of the {len(runs)} recorded: {fastest}", fastest_verdict(reach[when])))
        for label in MOMENTUM_VARIANTS:
            claim = f"2. {label} converges faster than linear ({when})"
            if waits(claim, (label,)):
                continue
            a, b = reach[when][label], reach[when][LINEAR]
            claims.append((claim, f"steps: {mean_range(a, 0)} against {mean_range(b, 0)}",
                           lower(a, b) + (f"; {set_by}" if (set_by := schedule_sets(
                               {label: runs[label], LINEAR: runs[LINEAR]}, level)) else "")))
    # Nguyen et al. Fig. 1's caption: "adaptive momentum transformer performs as well as momentum transformer"
    if not waits("3. adaptive does as well as momentum", ("adaptive momentum", MOMENTUM_VARIANTS[0])):
        ad, mo = loss["adaptive momentum"], loss[MOMENTUM_VARIANTS[0]]
        claims.append(("3. adaptive (β̃ computed, eq. 18) does as well as the momentum transformer, within 10 %",
                       f"test loss {mean_range(ad, 4)} against {mean_range(mo, 4)}", within(ad, mo)))
    # the same against the hand-tuned connection (β̃ = 0.99), the search the caption says adaptive avoids
    if "adaptive momentum" in runs and "momentum + connection" in runs:
        ad, mc = loss["adaptive momentum"], loss["momentum + connection"]
        claims.append(("3. adaptive (β̃ computed, eq. 18) does as well as the tuned connection (β̃ = 0.99), "
                       "within 10 %", f"test loss {mean_range(ad, 4)} against {mean_range(mc, 4)}",
                       within(ad, mc)))
    lsh = [label for label in LSH_COPY if label in runs]
    baseline_claims = _copy_baseline_claims(runs, loss, train_loss, levels, reach, lsh) if lsh else []
    return {"loss": loss, "accuracy": acc, "levels": levels, "reach": reach, "train_loss": train_loss,
            "claims": claims, "baseline_claims": baseline_claims}


def _copy_baseline_claims(runs: dict[str, list[dict]], loss: dict, train_loss: dict, levels: dict, reach: dict,
                          lsh: list[str]) -> list[tuple[str, str, str]]:
    """Claims 4 and 5 of :func:`measure_copy`, one row per recorded baseline of ``lsh`` (labels of :data:`LSH_COPY`):
    4 on test loss; 5, "converge faster and achieve better training loss", on the steps to each level of
    ``levels`` and the final training loss together (:func:`lower_in_every`)."""
    claims = []
    for x in lsh:
        claim = f"4. linear reaches a lower loss than {x} (Katharopoulos §4.1)"
        if LINEAR not in runs:
            claims.append((claim, "–", "waits for: linear"))
            continue
        claims.append((claim, f"test loss {mean_range(loss[LINEAR], 4)} against {mean_range(loss[x], 4)}",
                       lower_in_every({"test loss": (loss[LINEAR], loss[x])}, LINEAR, x)))
    for label in (MOMENTUM_VARIANTS[0], MOMENTUM_VARIANTS[2]):
        for x in lsh:
            claim = f"5. {label} converges faster and reaches a lower training loss than {x} (Nguyen Fig. 1)"
            if label not in runs:
                claims.append((claim, "–", f"waits for: {label}"))
                continue
            parts = {f"steps to the {when} level": (reach[when][label], reach[when][x]) for when in levels}
            parts["final training loss"] = (train_loss[label], train_loss[x])
            measured = "; ".join(f"{what} {mean_range(a, 4 if 'loss' in what else 0)} against "
                                 f"{mean_range(b, 4 if 'loss' in what else 0)}" for what, (a, b) in parts.items())
            claims.append((claim, measured, lower_in_every(parts, label, x)))
    return claims


def final_train_loss(curve: list[dict], width: int = 5) -> float:
    """A run's final training loss: the mean of the last ``width`` logged losses of its ``curves["train"]`` (the
    running mean :func:`lra_kit.results.steps_to_loss` reads)."""
    if not curve or width < 1:
        raise ValueError(f"curve must hold logged losses and width be >= 1; got {len(curve or [])} and {width}")
    losses = [p["loss"] for p in curve[-width:]]
    return sum(losses) / len(losses)


def lower_in_every(parts: dict[str, tuple[dict, dict]], a_label: str, b_label: str) -> str:
    """The verdict on "``a_label`` is lower than ``b_label`` in every one of ``parts``" on the copy task: ``parts``
    maps what is compared (steps to a level, a loss) to the two sides' :func:`lra_kit.results.spread`, whose seeds'
    ranges are the only noise the copy task measures.

    A side with fewer than :data:`MIN_SEEDS` seeds decides nothing (one seed is a point and says nothing of a
    spread): the verdict is not decided and says so. Otherwise each part is decided as :func:`is_lower`: the claim
    fails where some part is decided not lower, holds where every part is decided lower, and is otherwise not
    decided, naming the parts whose ranges overlap.
    """
    if not parts:
        raise ValueError("parts must hold at least one comparison")
    seeds = {a_label: min(a["n"] for a, _ in parts.values()), b_label: min(b["n"] for _, b in parts.values())}
    few = [label for label, n in seeds.items() if n < MIN_SEEDS]
    if few:
        return (f"not decided: {' and '.join(few)} {'has' if len(few) == 1 else 'have'} one seed, and a verdict "
                f"needs {MIN_SEEDS} a side")
    decided = {what: is_lower(a, b) for what, (a, b) in parts.items()}
    failed = [what for what, d in decided.items() if d is False]
    if failed:
        return f"does **not** hold at this scale (not lower: {', '.join(failed)})"
    open_ = [what for what, d in decided.items() if d is None]
    if open_:
        return f"not decided: the seeds' ranges overlap ({', '.join(open_)})"
    return "**holds** at this scale"


def schedule_sets(runs: dict[str, list[dict]], level: float) -> str:
    """Where the learning-rate schedule, not the attention, sets when ``level`` is reached: every seed of the
    variants in ``runs`` that reaches it (a seed that never does is left out) reaches it within a tenth of the
    run after one of its learning-rate drops (``config.optim.decay_steps``) — then the step counts compare the
    schedule. The words to add to a verdict decided at that level, or "" where the level is reached elsewhere
    (or the records name no drop)."""
    crossings, drops, total = [], set(), 0
    for rs in runs.values():
        for r in rs:
            step = steps_to_loss(r["curves"]["train"], level)
            if step is not None:
                crossings.append(step)
            drops |= set(r.get("config", {}).get("optim", {}).get("decay_steps", []))
            total = max(total, r.get("steps", r["curves"]["train"][-1]["step"]))
    for drop in sorted(drops):
        if crossings and all(drop < step <= drop + total / 10 for step in crossings):
            return (f"at a level the learning-rate drop sets: every seed of both that reaches it does so at steps "
                    f"{min(crossings):,}-{max(crossings):,}, just after the drop at {drop:,}")
    return ""


def mnist_claims(runs: dict[str, list[dict]]) -> list[tuple[str, str, str]]:
    """The MNIST claims on ``runs`` (label → recorded seeds, labels ``softmax``, ``linear``, ``momentum``,
    ``adaptive momentum``), as ``(claim, measured, verdict)`` rows; a claim waits for its variants.

    1. Katharopoulos et al. Table 1: linear attention's test bits/dim is at most the papers' gap above
       softmax's (the mean over seeds, as a ratio minus one).
    2. Nguyen et al. Table 2: momentum, and adaptive momentum, reach lower bits/dim than linear attention.
    """
    runs = {label: rs for label, rs in runs.items() if rs}
    bpd = {label: spread(r["metrics"]["test"]["bits_per_dim"] for r in rs) for label, rs in runs.items()}
    k1, n2 = KATHAROPOULOS_TABLE1, MOMENTUM_TABLE2
    claims = []
    claim = f"linear reaches almost softmax's bits/dim (Katharopoulos {k1.table})"
    if {SOFTMAX, LINEAR} <= set(runs):
        paper = k1.value("Linear (ours)", "Bits/dim") / k1.value("Softmax", "Bits/dim") - 1
        ours = bpd[LINEAR]["mean"] / bpd[SOFTMAX]["mean"] - 1
        # linear's bits/dim against softmax's raised by the paper's gap: the claim holds below that line
        excess = bpd[LINEAR]["mean"] - (1 + paper) * bpd[SOFTMAX]["mean"]
        claims.append((claim, f"linear {above_or_below(1 + ours)} softmax; the paper {above_or_below(1 + paper)}",
                       bits_verdict(excess < 0, excess, runs[LINEAR], runs[SOFTMAX])))
    else:
        claims.append((claim, "–", "waits for: " + ", ".join(x for x in (SOFTMAX, LINEAR) if x not in runs)))
    for label, row in (("momentum", "Momentum transformer"), ("adaptive momentum", "Adaptive momentum transformer")):
        claim = f"{label} reaches lower bits/dim than linear (Nguyen {n2.table})"
        missing = [x for x in (label, LINEAR) if x not in runs]
        if missing:
            claims.append((claim, "–", "waits for: " + ", ".join(missing)))
            continue
        paper = f"{n2.value(row, 'Bits/dim'):.2f} against {n2.value('Linear transformer', 'Bits/dim'):.2f}"
        claims.append(lower_bits_claim(claim, paper, runs[label], runs[LINEAR]))
    return claims


def mnist_baseline_claims(runs: dict[str, list[dict]]) -> list[tuple[str, str, str]]:
    """Katharopoulos et al. appendix Fig. 5a on MNIST: linear "converges on par with softmax attention outperforming
    significantly both reformer variants" (Table 1: 0.644 bits/dim against LSH-1's 0.745 and LSH-4's 0.676). One
    ``(claim, measured, verdict)`` row per baseline of :data:`LSH_MNIST` recorded in ``runs`` (none where none is):
    linear's bits/dim below the baseline's, decided as :func:`mnist_claims`' (the seeds' ranges apart and the gap
    beyond two standard errors, :func:`bits_verdict`). "On par with softmax" is :func:`mnist_claims`' first."""
    runs = {label: rs for label, rs in runs.items() if rs}
    k1, claims = KATHAROPOULOS_TABLE1, []
    for label, row in LSH_MNIST.items():
        if label not in runs:  # a baseline not recorded yet: the page says so once
            continue
        claim = f"linear reaches lower bits/dim than {label} (Katharopoulos {k1.table}, Fig. 5a)"
        if LINEAR not in runs:
            claims.append((claim, "–", "waits for: linear"))
            continue
        paper = f"{k1.value('Linear (ours)', 'Bits/dim'):.3f} against {k1.value(row, 'Bits/dim'):.3f}"
        claims.append(lower_bits_claim(claim, paper, runs[LINEAR], runs[label]))
    return claims


def lower_bits_claim(claim: str, paper: str, lower: list[dict], higher: list[dict]) -> tuple[str, str, str]:
    """The row of the claim that runs ``lower`` reach lower test bits/dim than runs ``higher`` (recorded seeds):
    both sides' means and ranges beside the paper's numbers (``paper``), and the verdict: not decided where the
    seeds' ranges overlap (:func:`is_lower`) or the gap is within two standard errors (:func:`bits_verdict`)."""
    a, b = (spread(r["metrics"]["test"]["bits_per_dim"] for r in rs) for rs in (lower, higher))
    decided = is_lower(a, b)
    return (claim, f"{mean_range(a, 4)} against {mean_range(b, 4)}; the paper {paper}",
            "not decided: the seeds' ranges overlap" if decided is None else
            bits_verdict(decided, a["mean"] - b["mean"], lower, higher))


def bits_noise(a: list[dict], b: list[dict]) -> float | None:
    """Two standard errors of the gap between the mean test bits/dim of runs ``a`` and runs ``b`` (recorded
    seeds): each side's test-set noise (the per-image standard deviation its evaluation recorded, ÷ √images;
    seeds score the same images, so more seeds do not shrink it) and, where it has several seeds, their spread
    (:func:`seed_variance`). None where some record lacks the per-image spread (records made before the
    evaluation kept it): then the noise is not known."""
    variance = 0.0
    for rs in (a, b):
        if not rs:
            raise ValueError("a and b must each hold at least one recorded run")
        tests = [r["metrics"]["test"] for r in rs]
        if any(t.get("bits_per_dim_image_std") is None or not t.get("images") for t in tests):
            return None
        variance += max(t["bits_per_dim_image_std"] ** 2 / t["images"] for t in tests)
        variance += seed_variance([t["bits_per_dim"] for t in tests])
    return 2 * math.sqrt(variance)


def bits_verdict(holds: bool, gap: float, a: list[dict], b: list[dict]) -> str:
    """The verdict on a bits/dim claim that the sign of ``gap`` (bits/dim, between runs ``a`` and ``b``) decides:
    not decided where the noise is not recorded or ``gap`` is within it (:func:`bits_noise`), else
    :func:`verdict` of ``holds``."""
    noise = bits_noise(a, b)
    if noise is None:
        seeds = [seed_variance([r["metrics"]["test"]["bits_per_dim"] for r in rs]) for rs in (a, b)]
        alone = (f"; the seeds' spread alone gives two standard errors of {2 * math.sqrt(sum(seeds)):.5f}"
                 if min(len(a), len(b)) > 1 else "")
        return (f"not decided: the records keep only the mean bits/dim, not its per-image spread, so the test "
                f"set's noise on this gap ({gap:+.5f} bits/dim) is not known{alone}")
    if abs(gap) <= noise:
        return f"not decided: the gap ({gap:+.5f} bits/dim) is within two standard errors ({noise:.5f})"
    return verdict(holds, (len(a), len(b)))


def seed_variance(values: list[float]) -> float:
    """The variance that the seeds' spread adds to the mean of ``values`` (one per seed): the seeds' sample
    variance ÷ their number; 0 for one seed, whose spread is not known (the verdicts say so)."""
    values = list(values)
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values)


def lra_claims(task: str, runs: dict[str, list[dict]]) -> list[tuple[str, str, str]]:
    """The orders of :data:`LRA_PAIRS` on the LRA ``task`` (e.g. ``"text"``), measured on ``runs`` (label →
    recorded seeds), as ``(claim, measured, verdict)`` rows: "a above b" holds where b's test accuracy is
    :func:`lower`. A pair waits for its attentions. A gap under :data:`TIE` points in the paper is no order to
    test: the row says so (the standard error of a 64 % accuracy on 25,000 test reviews is 0.3 points). A
    measured gap within :func:`gap_noise` decides nothing either (on ListOps' 2,000 test expressions two
    standard errors of a gap near 36 % are 3 points)."""
    return _orders(task, runs, LRA_PAIRS)


def lra_baseline_claims(task: str, runs: dict[str, list[dict]]) -> list[tuple[str, str, str]]:
    """The orders of :data:`LRA_BASELINE_PAIRS` (Reformer and Linformer against linear attention and the momentum
    transformers) on ``task``, as :func:`lra_claims` measures its own; a pair is left out while its baseline has
    no run in ``runs`` (the baselines are not run on every task), so no baseline recorded gives no rows."""
    recorded = {label for label, rs in runs.items() if rs}
    return _orders(task, runs, [pair for pair in LRA_BASELINE_PAIRS
                                if {pair[2][0], pair[3][0]} & set(LRA_BASELINES) <= recorded])


def _orders(task: str, runs: dict[str, list[dict]], pairs) -> list[tuple[str, str, str]]:
    """The orders ``pairs`` (as :data:`LRA_PAIRS`) measured on ``task``: the rows of :func:`lra_claims`."""
    runs = {label: rs for label, rs in runs.items() if rs}
    acc = {label: spread(100 * r["metrics"]["test"]["accuracy"] for r in rs) for label, rs in runs.items()}
    claims = []
    for paper, table, (a, row_a), (b, row_b) in pairs:
        column = next(c for c in table.columns if c.lower().startswith(task))
        pa, pb = table.value(row_a, column), table.value(row_b, column)
        (hi, p_hi), (lo, p_lo) = ((a, pa), (b, pb)) if pa > pb else ((b, pb), (a, pa))
        claim = f"{hi} above {lo} ({paper} {table.table}: {p_hi:.2f} against {p_lo:.2f})"
        if p_hi - p_lo < TIE:
            claims.append((f"{a} against {b} ({paper} {table.table}: {pa:.2f} against {pb:.2f})", "–",
                           f"no order to test: the paper's gap is under {TIE} points"))
            continue
        missing = [x for x in (hi, lo) if x not in runs]
        if missing:
            claims.append((claim, "–", "waits for: " + ", ".join(missing)))
            continue
        above, why = is_above(runs[hi], runs[lo])
        claims.append((claim, f"{mean_range(acc[hi], 1)} against {mean_range(acc[lo], 1)}",
                       why if above is None else verdict(above, (acc[lo]["n"], acc[hi]["n"]))))
    return claims


def is_above(a: list[dict], b: list[dict]) -> tuple[bool | None, str]:
    """Whether runs ``a`` score a higher mean test accuracy than runs ``b`` (recorded seeds of each), decided as
    the LRA orders are (:func:`lra_claims`): ``(None, why)`` where the two score alike (:func:`same_answers`), the
    seeds' ranges overlap (:func:`overlap`) or the gap is within :func:`gap_noise`; else ``(a's mean > b's mean,
    "")``."""
    if not a or not b:
        raise ValueError(f"a and b must each hold at least one recorded run; got {len(a)} and {len(b)}")
    sa, sb = (spread(100 * r["metrics"]["test"]["accuracy"] for r in rs) for rs in (a, b))
    if same_answers({"a": a, "b": b}):
        return None, "not decided: the two score alike, the same count of right answers seed for seed"
    if overlap(sa, sb):
        return None, "not decided: the seeds' ranges overlap"
    noise = gap_noise(a, b)
    if abs(sa["mean"] - sb["mean"]) < noise:
        seeds = "the test set's noise" + (" and the seeds' spread" if max(len(a), len(b)) > 1 else "")
        return None, f"not decided: the gap is within {seeds} (two standard errors: {noise:.1f} points)"
    return sa["mean"] > sb["mean"], ""


def same_answers(runs: dict[str, list[dict]]) -> list[list[str]]:
    """Groups (of two or more labels) of ``runs`` (label → recorded seeds) that score alike on the test set: the
    same number of seeds and, seed for seed in seed order, the same count of right answers out of the same test
    examples — as models that answer one class for every example do. The test set cannot tell such runs apart,
    so the pages give each group one verdict against the papers, whose numbers for its members differ."""
    def key(rs: list[dict]) -> tuple:
        tests = [r["metrics"]["test"] for r in sorted(rs, key=lambda r: r.get("seed", 0))]
        return tuple((t["count"], round(t["accuracy"] * t["count"])) for t in tests)

    groups: dict[tuple, list[str]] = {}
    for label, rs in runs.items():
        if rs:
            groups.setdefault(key(rs), []).append(label)
    return [labels for labels in groups.values() if len(labels) > 1]


def paper_gap(pairs: list[tuple[list[dict], float]]) -> dict:
    """Ours against a paper's LRA numbers: ``pairs`` holds, per task, our recorded seeds and the paper's test
    accuracy (%) there. Returns ``{"gap", "noise", "within"}``: the mean over the tasks of (our mean test
    accuracy − the paper's), in points; two standard errors of that mean gap from the test sets alone (ours, and
    the paper's number taken as measured on a test set of our size), as :func:`gap_noise`; and whether the gap is
    within them. Seeds do not shrink the test sets' noise (they score the same test examples); where a task has
    several, their spread is added (:func:`seed_variance`); ``one_seed`` says that some task has one, whose
    seed-to-seed spread the noise leaves out."""
    if not pairs:
        raise ValueError("pairs must hold at least one (runs, paper accuracy) pair")
    gaps, variance = [], 0.0
    for runs, paper in pairs:
        if not runs:
            raise ValueError("each pair's runs must hold at least one recorded run")
        if not 0 <= paper <= 100:
            raise ValueError(f"a paper's accuracy must be in points, 0 to 100; got {paper}")
        ours = sum(r["metrics"]["test"]["accuracy"] for r in runs) / len(runs)
        count = min(r["metrics"]["test"]["count"] for r in runs)
        gaps.append(100 * ours - paper)
        variance += _accuracy_variance(runs) + standard_error(paper / 100, count) ** 2
    gap, noise = sum(gaps) / len(gaps), 200 * math.sqrt(variance) / len(pairs)
    return {"gap": gap, "noise": noise, "within": abs(gap) <= noise,
            "one_seed": any(len(runs) < 2 for runs, _ in pairs)}


def accuracy_noise(rs: list[dict]) -> float:
    """Two standard errors, in points, of the mean test accuracy of runs ``rs`` (recorded seeds): the test set's
    sampling and, where there are several seeds, their spread; the noise of a gap to a fixed number (a rule with no
    model, scored on the same test set)."""
    if not rs:
        raise ValueError("rs must hold at least one recorded run")
    return 200 * math.sqrt(_accuracy_variance(rs))


def gap_noise(a: list[dict], b: list[dict]) -> float:
    """Two standard errors, in points, of the gap between the mean test accuracies of runs ``a`` and runs ``b``:
    each side's test-set sampling (its seeds score the same test examples, so more seeds do not shrink it) and,
    where a side has several seeds, their spread (:func:`seed_variance`; a side with one seed adds none, and its
    verdict says so)."""
    return 200 * math.sqrt(_accuracy_variance(a) + _accuracy_variance(b))


def _accuracy_variance(rs: list[dict]) -> float:
    """The variance (fractions²) of runs ``rs``'s mean test accuracy: the test set's, plus the seeds' spread."""
    accs = [r["metrics"]["test"]["accuracy"] for r in rs]
    test = standard_error(sum(accs) / len(accs), min(r["metrics"]["test"]["count"] for r in rs)) ** 2
    return test + seed_variance(accs)


__all__ = ["LINEAR", "LINFORMER", "LRA_BASELINES", "LRA_BASELINE_PAIRS", "LRA_PAIRS", "LSH_COPY", "LSH_MNIST",
           "LUNA", "MIN_SEEDS", "MOMENTUM_VARIANTS", "REFORMER", "SOFTMAX", "TIE", "WITHIN", "accuracy_noise",
           "bits_noise", "bits_verdict", "fastest_verdict", "final_train_loss", "gap_noise", "is_above", "is_lower",
           "lower", "lower_in_every", "lra_baseline_claims", "lra_claims", "measure_copy", "mnist_baseline_claims",
           "mnist_claims", "overlap", "paper_gap", "same_answers", "schedule_sets", "seed_range", "seed_variance",
           "verdict", "within"]
