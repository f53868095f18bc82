"""The papers' claims about the copy task, measured on recorded runs (the copy-task page's verdicts).

The claims (Katharopoulos et al. §4.1, Fig. 2; Nguyen et al. §4.1, Fig. 1):

1. linear attention reaches softmax's final loss (here: within 10 % of softmax's test loss);
2. softmax converges fastest, and each momentum variant converges faster than linear attention;
3. adaptive momentum (β̃ computed, Nguyen et al. eq. 18) does as well as the hand-tuned momentum
   connection (within 10 % of its test loss).

"Converges faster" is measured as steps to reach a loss (:func:`lra_kit.results.steps_to_loss`) at two
levels, from linear attention's runs: ``early``, half its first logged training loss (mean over its seeds),
and ``late``, 1.5 × its mean final test loss. With several seeds on both sides a claim of speed is decided
only where the seeds' ranges of steps do not overlap; with one seed the verdict says the spread is unknown.
Every verdict is computed here from the records, never written in advance.
"""
from __future__ import annotations

import math

from lra_kit.results import spread, steps_to_loss
from lra_kit.viz.results import mean_range

MOMENTUM_VARIANTS = ("momentum", "momentum + connection", "adaptive momentum")
WITHIN = 1.1  # "reaches" and "does as well": at most 10 % above the other's test loss


def verdict(ok: bool, runs: list[list[dict]] | None = None) -> str:
    """A claim's verdict (Markdown); ``runs``, the seeds of each side, add a note when a side has one seed."""
    text = "**holds** at this scale" if ok else "does **not** hold at this scale"
    if runs is not None and min(map(len, runs)) < 2:
        text += " (one seed: the seed-to-seed spread is not known yet)"
    return text


def measure_copy(runs: dict[str, list[dict]]) -> dict:
    """Measure the claims on ``runs``: variant label → its recorded seeds (results records with ``curves``).

    Labels are ``softmax``, ``linear`` and those of :data:`MOMENTUM_VARIANTS`; a claim whose variants
    are not all recorded yet says what it waits for. Returns ``loss`` and ``accuracy`` (a
    :func:`lra_kit.results.spread` of the test metric per label), ``levels`` (``{"early": …, "late": …}``,
    empty without linear attention), ``reach`` (level name → label → spread of the steps to that level)
    and ``claims``, a list of ``(claim, measured, verdict)`` rows.
    """
    runs = {label: rs for label, rs in runs.items() if rs}
    loss = {label: spread(r["metrics"]["test"]["loss"] for r in rs) for label, rs in runs.items()}
    acc = {label: spread(r["metrics"]["test"]["accuracy"] for r in rs) for label, rs in runs.items()}
    levels = {}
    if "linear" in runs:
        first = spread(r["curves"]["train"][0]["loss"] for r in runs["linear"])["mean"]
        levels = {"early": 0.5 * first, "late": 1.5 * loss["linear"]["mean"]}
    reach = {when: {label: spread(steps_to_loss(r["curves"]["train"], level) for r in rs)
                    for label, rs in runs.items()} for when, level in levels.items()}
    claims = []

    def waits(claim: str, needed) -> bool:
        missing = [label for label in needed if label not in runs]
        if missing:
            claims.append((claim, "–", "waits for: " + ", ".join(missing)))
        return bool(missing)

    if not waits("1. linear reaches softmax's final loss", ("softmax", "linear")):
        lin, soft = loss["linear"]["mean"], loss["softmax"]["mean"]
        claims.append(("1. linear reaches softmax's final loss (within 10 %)",
                       f"test loss {lin:.4f} against {soft:.4f}; linear's accuracy {acc['linear']['mean']:.3f} "
                       "(target 0.95)", verdict(lin <= WITHIN * soft, [runs["linear"], runs["softmax"]])))
    for when, level in levels.items():
        def steps(label, r=reach[when]):  # a level some seed never reached counts as never reached
            return math.inf if r[label]["missed"] else r[label]["mean"]

        fastest = min(runs, key=steps)
        claims.append((f"2. softmax converges fastest ({when}, loss {level:.3f})",
                       f"fastest of the {len(runs)} recorded: {fastest}", verdict(fastest == "softmax")))
        for label in MOMENTUM_VARIANTS:
            claim = f"2. {label} converges faster than linear ({when})"
            if waits(claim, (label,)):
                continue
            a, b = reach[when][label], reach[when]["linear"]
            several = min(len(runs[label]), len(runs["linear"])) > 1
            overlap = several and not (a["max"] < b["min"] or a["min"] > b["max"])
            claims.append((claim, f"steps: {mean_range(a, 0)} against {mean_range(b, 0)}",
                           "not decided: the seeds' ranges overlap" if overlap else
                           verdict(steps(label) < steps("linear"), [runs[label], runs["linear"]])))
    if not waits("3. adaptive does as well as the tuned connection", ("adaptive momentum", "momentum + connection")):
        ad, mc = loss["adaptive momentum"]["mean"], loss["momentum + connection"]["mean"]
        claims.append(("3. adaptive (β̃ computed, eq. 18) does as well as the tuned connection (β̃ = 0.99), "
                       "within 10 %", f"test loss {ad:.4f} against {mc:.4f}",
                       verdict(ad <= WITHIN * mc, [runs["adaptive momentum"], runs["momentum + connection"]])))
    return {"loss": loss, "accuracy": acc, "levels": levels, "reach": reach, "claims": claims}


__all__ = ["MOMENTUM_VARIANTS", "WITHIN", "measure_copy", "verdict"]
