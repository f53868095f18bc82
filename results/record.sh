#!/bin/bash
# The long recorded runs of the copy task and MNIST (docs/budget.md), one after the other on one thread:
#   bash results/record.sh PRESET TASK RUN...      RUN = ATTENTION[+CONNECTION][@SEED], e.g. linear@1, momentum+adaptive
#   LSH with X rounds of hashing is lsh-X (the papers' name), e.g. lsh-4@1
# e.g. bash results/record.sh cpu-20k copy softmax linear@1 momentum+adaptive@2
# Run from the repository root; a finished run (its record exists) is skipped, an interrupted one resumes
# from its checkpoint in runs/PRESET/. Records go to results/TASK/<task>-<attention>[+connection]-<preset>[-seedN].json;
# an MNIST run's samples and completions go beside its record (<record name>-pictures.json and two PNGs), drawn by
# lra-kit generate from the run's folder, also for a run recorded earlier whose folder is still here.
set -u
export OMP_NUM_THREADS=1
preset=${1:?PRESET}; task=${2:?TASK}; shift 2
for run in "$@"; do
    name=${run%@*}; seed=0; [ "$name" != "$run" ] && seed=${run#*@}
    attention=${name%+*}; connection=residual; [ "$attention" != "$name" ] && connection=${name#*+}
    suffix=""; [ "$connection" != residual ] && suffix="+$connection"
    seedname=""; [ "$seed" != 0 ] && seedname="-seed$seed"
    label=$attention; variant=()
    case "$attention" in lsh-[0-9]*) variant=(--n-hashes "${attention#lsh-}"); attention=lsh;; esac
    record="results/$task/$task-$label$suffix-$preset$seedname.json"
    out="runs/$preset/$task-$label$suffix$seedname"
    if [ -f "$record" ]; then echo "skip $record"; else
        "${PYTHON:-python}" -m lra_kit train --task "$task" --attention "$attention" "${variant[@]}" \
            --connection "$connection" --preset "$preset" --set "train.seed=$seed" --out "$out" --record "$task" \
            --no-progress | grep '^\[lra-kit\]'
    fi
    # an image task's run of record keeps its samples and completions (Katharopoulos et al. Fig. 3) beside its
    # record, drawn from its best checkpoint while the run folder is here: results/TASK/<record name>-pictures.json
    if [ "$task" = mnist ] && [ -f "$record" ] && [ -d "$out" ] && [ ! -f "${record%.json}-pictures.json" ]; then
        "${PYTHON:-python}" -m lra_kit generate "$out" --pictures "results/$task" | grep '^\[lra-kit\]'
    fi
done
