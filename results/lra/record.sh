#!/bin/bash
# The recorded LRA runs at the named reduced scale "lra-cpu" (lra_kit/train/configs.py PRESETS), one after
# the other on one thread. Run from the repository root: LRA_KIT_DATA=... bash results/lra/record.sh [TASK...]
# (default: all four tasks; two shells with different tasks run side by side, one thread each).
# For each task: every attention first, then that task's controls. A finished run is skipped.
# PRESET=lra-cpu-long bash results/lra/record.sh image [ATTENTION[@SEED]...]: the longer runs (no controls), e.g.
# PRESET=lra-cpu-2h bash results/lra/record.sh text softmax softmax@1 linear; a seed other than 0 is in the record's name;
# PRESET=lra-cpu-2h bash results/lra/record.sh listops lsh-2 linformer: the baselines (lsh-X: X rounds of hashing);
# PRESET=lra-cpu-2h bash results/lra/record.sh listops first-64-tokens: softmax on each expression's first 64 tokens;
# the controls unnormalised, pixel0-padding (linear) and p-pooling (Luna) are named the same way, e.g.
# PRESET=lra-cpu-long bash results/lra/record.sh image unnormalised pixel0-padding.
set -u
export OMP_NUM_THREADS=1
run() {  # run TASK ATTENTION[@SEED] [--control NAME] [extra lra-kit train options...]
    local task=$1 name=${2%@*} seed=0; [ "$2" != "$name" ] && seed=${2#*@}; shift 2
    local seedname=""; [ "$seed" != 0 ] && seedname="-seed$seed"
    local attention=$name connection=() label=$name
    if [ "$name" = adaptive ]; then attention=momentum; label=momentum; connection=(--connection adaptive); fi
    case "$name" in lsh-[0-9]*) attention=lsh; connection=(--n-hashes "${name#lsh-}");; esac  # lsh-X: X rounds
    local recdir=results record=lra
    if [ "${1:-}" = --control ]; then recdir=results/lra/controls; record=$2; shift 2; fi
    local suffix=""; [ "$name" = adaptive ] && suffix="+adaptive"
    if [ -f "$recdir/$record/$task-$label$suffix-$PRESET$seedname.json" ]; then
        echo "skip $task $name$seedname $record"; return
    fi
    "${PYTHON:-python}" -m lra_kit train --task "$task" --attention "$attention" "${connection[@]}" --preset "$PRESET" \
        --set "train.seed=$seed" --out "runs/$PRESET/$record/$task-$name$seedname" --record-dir "$recdir" \
        --record "$record" --no-progress "$@" \
        | grep '^\[lra-kit\]'
}
PRESET=${PRESET:-lra-cpu}
ATTENTIONS=(softmax linear performer momentum adaptive luna)
if [ "$PRESET" != lra-cpu ]; then  # the longer runs: one task, the attentions named after it (default all)
    task=${1:?"PRESET=$PRESET needs a task"}; shift
    [ $# -gt 0 ] && ATTENTIONS=("$@")
    for name in "${ATTENTIONS[@]}"; do
        case $name in
        first-64-tokens)  # the ListOps control: each expression cut to its first 64 tokens, its operator first
            run "$task" softmax --control first-64-tokens --set data.options.max_length=64 ;;
        unnormalised)     # the Momentum paper's code: linear attention without its normaliser
            run "$task" linear --control unnormalised --set model.attention_options.compat=nystromformer ;;
        pixel0-padding)   # the Momentum paper's code: pixel value 0 masked as padding (Image)
            run "$task" linear --control pixel0-padding --set data.options.compat=nystromformer ;;
        p-pooling)        # Luna Table 3: mean pooling over the last layer's P instead of the [CLS] token (Text)
            run "$task" luna --control p-pooling --set model.pooling=p_mean ;;
        *)  run "$task" "$name" ;;
        esac
    done
    exit 0
fi
tasks=("$@"); [ ${#tasks[@]} -eq 0 ] && tasks=(listops text image pathfinder)
for task in "${tasks[@]}"; do
    for name in "${ATTENTIONS[@]}"; do run "$task" "$name"; done
done
for task in "${tasks[@]}"; do
    case $task in
    image)  # the quirks of the code the Momentum paper used, with linear attention (docs/design.md §6.6):
            # the unnormalised linear attention, and pixel value 0 masked as padding
        run image linear --control unnormalised --set model.attention_options.compat=nystromformer
        run image linear --control pixel0-padding --set data.options.compat=nystromformer ;;
    text)   # Luna Table 3: mean pooling over the last layer's P instead of the [CLS] token
        run text luna --control p-pooling --set model.pooling=p_mean
            # the Momentum paper's code reads 1,000 bytes of each review, the papers 4,000 (lra-cpu: 1,024)
        run text linear --control text-1000-bytes --set data.options.max_length=1000
        run text linear --control text-4000-bytes --set data.options.max_length=4000 ;;
    esac
    # Luna Table 1's Luna-128 and Luna-256 rows: the same model with a longer P
    for length in 128 256; do run "$task" luna --control "luna-$length" --set model.luna_length=$length; done
done
