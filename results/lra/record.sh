#!/bin/bash
# The recorded LRA runs at the named reduced scale "lra-cpu" (lra_kit/train/configs.py PRESETS), one after
# the other on one thread, ListOps first so that every task gets all attentions before the controls.
# Run from the repository root: LRA_KIT_DATA=... bash results/lra/record.sh. A finished run is skipped.
set -u
export OMP_NUM_THREADS=1
run() {  # run TASK ATTENTION [RECORD_DIR RECORD] [extra lra-kit train options...]
    local task=$1 name=$2; shift 2
    local attention=$name connection=()
    if [ "$name" = adaptive ]; then attention=momentum; connection=(--connection adaptive); fi
    local recdir=results record=lra
    if [ "${1:-}" = --control ]; then recdir=results/lra/controls; record=$2; shift 2; fi
    local suffix=""; [ "$name" = adaptive ] && suffix="+adaptive"
    if [ -f "$recdir/$record/$task-$attention$suffix-lra-cpu.json" ]; then echo "skip $task $name $record"; return; fi
    "${PYTHON:-python}" -m lra_kit train --task "$task" --attention "$attention" "${connection[@]}" --preset lra-cpu \
        --out "runs/lra-cpu/$record/$task-$name" --record-dir "$recdir" --record "$record" --no-progress "$@" \
        | grep '^\[lra-kit\]'
}
for task in listops text image pathfinder; do
    for name in softmax linear performer momentum adaptive luna; do run "$task" "$name"; done
done
# The quirks of the code the Momentum paper used, as controls on Image with linear attention
# (docs/design.md §6.6): the unnormalised linear attention, and pixel value 0 masked as padding.
run image linear --control unnormalised --set model.attention_options.compat=nystromformer
run image linear --control pixel0-padding --set data.options.compat=nystromformer
# Luna Table 3: mean pooling over the last layer's P instead of the [CLS] token, on Text.
run text luna --control p-pooling --set model.pooling=p_mean
# Luna Table 1's Luna-128 and Luna-256 rows: the same model with a longer P.
for length in 128 256; do
    for task in listops text image pathfinder; do
        run "$task" luna --control "luna-$length" --set model.luna_length=$length
    done
done
# Five times the steps on Image for four attentions: where the 100-step runs have not left chance yet.
for name in softmax linear momentum luna; do
    run image "$name" --control steps-500 --set train.steps=500 --set train.eval_every=100
done
