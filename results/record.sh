#!/bin/bash
# The long recorded runs of the copy task and MNIST (docs/budget.md), one after the other on one thread:
#   bash results/record.sh PRESET TASK RUN...      RUN = ATTENTION[+CONNECTION][@SEED], e.g. linear@1, momentum+adaptive
#   LSH with X rounds of hashing is lsh-X (the papers' name), e.g. lsh-4@1
# e.g. bash results/record.sh cpu-20k copy softmax linear@1 momentum+adaptive@2
# Run from the repository root; a finished run (its record exists) is skipped, an interrupted one resumes
# from its checkpoint in runs/PRESET/. Records go to results/TASK/<task>-<attention>[+connection]-<preset>[-seedN].json.
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
    if [ -f "$record" ]; then echo "skip $record"; continue; fi
    "${PYTHON:-python}" -m lra_kit train --task "$task" --attention "$attention" "${variant[@]}" --connection "$connection" \
        --preset "$preset" --set "train.seed=$seed" --out "runs/$preset/$task-$label$suffix$seedname" \
        --record "$task" --no-progress | grep '^\[lra-kit\]'
done
