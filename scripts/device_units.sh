#!/usr/bin/env bash
# Full-mode units on a lent GPU, as one call of the device tool (repo root there, $OUT comes back):
#   bash scripts/device_units.sh SECONDS [--no-checks] LANE...
#   LANE = CHAPTER=PATTERN[,PATTERN...]: that chapter's missing units matching each pattern in turn (`--only`)
# e.g. bash scripts/device_units.sh 500 privacy_eval='attack/*/all-round/round15/part5' deniability='T2/mnist-iid/*'
# Prepare here first, in .devdata (ignored, carried: name it in the call's carry), the gzipped data the lanes read:
#   mkdir -p .devdata/MNIST/raw
#   for f in ../shared/data/MNIST/raw/*; do gzip -c $f >.devdata/MNIST/raw/${f##*/}.gz; done
# Fashion-MNIST likewise (27 MB); the CIFAR-100 subset (cp -r ../shared/data/cifar-100-python .devdata/). With the
# repo's 16 MB that is about 60 of the 64 MiB a call carries; CIFAR-10 (176 MB) does not fit, so its units stay
# for CPUs.
# The lanes run side by side on the one GPU (small kernels leave it idle most of the time), each with
# FEDLIB_NUM_THREADS=2; no lane starts a unit in the last 60 s and every lane is stopped 15 s before SECONDS (a
# unit stopped there is lost: keep SECONDS under the call's limit). Unless --no-checks, the CUDA agreement tests
# run beside them ($OUT/cuda-tests.log). Every new unit file is packed into $OUT/units.tgz, each lane's log into
# $OUT/lanes.tgz.
set -uo pipefail
seconds=${1:?SECONDS}; shift
checks=1
[ "${1:-}" = --no-checks ] && { checks=0; shift; }
[ $# -gt 0 ] || { echo "no lanes given (CHAPTER=PATTERN[,PATTERN...])" >&2; exit 2; }
began=$(date +%s)
out=${OUT:-/tmp/device-out}
rm -rf /tmp/lanes  # a warm machine keeps the last call's lane logs
mkdir -p "$out" /tmp/lanes
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FEDLIB_DEVICE=${FEDLIB_DEVICE:-cuda} FEDLIB_NUM_THREADS=2 OMP_NUM_THREADS=2
export FEDLIB_DATA=$PWD/.devdata FEDLIB_RESULTS=$PWD/results
find .devdata -name '*.gz' -exec gunzip -f {} +
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
touch /tmp/stamp
if [ $checks = 1 ]; then
  timeout $((seconds - 30)) python3 -m pytest -q -p no:cacheprovider tests/test_attacks.py tests/test_adpdfl.py \
    tests/test_engine.py tests/test_batched.py -k cuda >"$out/cuda-tests.log" 2>&1 &
fi
end=$((began + seconds - 15))
lane() {  # lane CHAPTER PATTERNS: the groups in turn, while time is left
  local chapter=$1 group
  IFS=, read -ra groups <<<"$2"
  for group in "${groups[@]}"; do
    local left=$((end - $(date +%s)))
    [ $left -gt 75 ] || break
    echo "== $chapter $group ($left s left)"
    timeout $left python3 -m fedlib run "$chapter" --mode full --budget "$(python3 -c "print(($left - 60) / 60)")" \
      --only "$group" 2>&1 | tr '\r' '\n' | grep -v '^ *$' | tail -8
  done
}
i=0
for spec in "$@"; do
  i=$((i + 1))
  lane "${spec%%=*}" "${spec#*=}" >"/tmp/lanes/lane$i-${spec%%=*}.log" 2>&1 &
done
wait
tail -n 4 /tmp/lanes/*.log
[ $checks = 1 ] && tail -n 3 "$out/cuda-tests.log"
tar czf "$out/lanes.tgz" -C /tmp lanes
find results/full -path '*/units/*.json' -newer /tmp/stamp | tar czf "$out/units.tgz" -T -
echo "new unit files: $(tar tzf "$out/units.tgz" | wc -l); $(($(date +%s) - began)) s"
tar tzf "$out/units.tgz" | sed 's|results/full/||' | tr '\n' ' '
