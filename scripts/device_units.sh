#!/usr/bin/env bash
# Full-mode units on a lent GPU, as one call of the device tool (repo root there, $OUT comes back):
#   bash scripts/device_units.sh SECONDS [--no-checks]
# Prepare here first: MNIST (gzipped) and the CIFAR-100 subset in .devdata (ignored, carried; 18 MB):
#   mkdir -p .devdata/MNIST/raw
#   for f in ../shared/data/MNIST/raw/*; do gzip -c $f >.devdata/MNIST/raw/${f##*/}.gz; done
#   cp -r ../shared/data/cifar-100-python .devdata/
# and, for SIFU's Fashion-MNIST lane (27 MB more; with the repo's 13 MB about 60 of the 64 MiB a call carries):
#   mkdir -p .devdata/FashionMNIST/raw
#   for f in ../shared/data/FashionMNIST/raw/*; do gzip -c $f >.devdata/FashionMNIST/raw/${f##*/}.gz; done
# CIFAR-10 (176 MB) exceeds the 64 MiB a call may carry: its units are listed as blocked there and stay for CPUs.
# Steps: the CUDA agreement tests; one committed CPU unit of each of privacy evaluation and ADPDFL re-run on the GPU
# (compared in $OUT/agree-*.json) -- both skipped with --no-checks, once a device run has recorded them; then
# lanes side by side on the one GPU (small kernels leave it idle most of the time), each within SECONDS: privacy
# evaluation's attack units (whole groups first: one-round, then all-round round by round), Fed-nore's MNIST-CNN
# units, DPFL's 1,000-client units and, where .devdata holds Fashion-MNIST, SIFU's Fashion-MNIST units (seed 0
# first); every new unit file packed into $OUT/units.tgz.
set -uo pipefail
seconds=${1:-480}
checks=$([ "${2:-}" = --no-checks ] && echo 0 || echo 1)
began=$(date +%s)
left() { echo $((seconds - ($(date +%s) - began))); }
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FEDLIB_DEVICE=cuda FEDLIB_NUM_THREADS=5 FEDLIB_DATA=$PWD/.devdata
export FEDLIB_RESULTS=$PWD/results
gunzip -f .devdata/*/raw/*.gz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
touch /tmp/stamp
[ $checks = 1 ] && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_attacks.py tests/test_adpdfl.py \
  tests/test_engine.py tests/test_batched.py -k cuda 2>&1 | tail -4

pe=results/full/privacy_eval/units/attack_cosine_one-round_round1_part1.json
ad=results/full/adpdfl/units/mnist-iid-fake-cen-adpdfl-mt70-C1-eps8-T20.json
if [ $checks = 1 ]; then
  cp "$pe" /tmp/cpu-pe.json && rm "$pe"
  cp "$ad" /tmp/cpu-ad.json && rm "$ad"
  # the re-run units alone (a run takes its units in the chapter's order)
  timeout 300 python3 -m fedlib run privacy_eval --mode full \
    --only "attack/cosine/one-round/round1/part1" 2>&1 | tail -1
  timeout 200 python3 -m fedlib run adpdfl --mode full --only "$(basename "$ad" .json)" 2>&1 | tail -1
fi
# the lanes at once, each stopping 40 s before the end (a started unit finishes: keep SECONDS under the call's limit)
share=$(( $(left) - 40 ))
lane() {  # lane CHAPTER PATTERN...: that chapter's missing units matching a pattern, within the share left
  local chapter=$1; shift
  for group in "$@"; do
    local s=$(( share - ($(date +%s) - lanes_began) ))
    [ "$s" -gt 30 ] && timeout $((s + 120)) python3 -m fedlib run "$chapter" --mode full \
      --budget "$(python3 -c "print($s / 60)")" --only "$group" 2>&1 | grep -v '^  \[' | tail -4
  done
}
lanes_began=$(date +%s)
lane privacy_eval 'attack/*/one-round/*' 'attack/*/all-round/round5/*' 'attack/*/all-round/round10/*' 'attack/*' \
  >"$out/lane-privacy_eval.log" 2>&1 &
lane fednore 'cnn/*' >"$out/lane-fednore.log" 2>&1 &
lane dpfl '1000/*' >"$out/lane-dpfl.log" 2>&1 &
[ -d .devdata/FashionMNIST ] && lane sifu 'fashion_mnist/seed0/*' 'fashion_mnist/*' >"$out/lane-sifu.log" 2>&1 &
wait
tail -n 6 "$out"/lane-*.log
for pair in $([ $checks = 1 ] && echo pe ad); do
  new=$([ $pair = pe ] && echo "$pe" || echo "$ad")
  [ -f "$new" ] && python3 scripts/compare_units.py /tmp/cpu-$pair.json "$new" --out "$out/agree-$pair.json" | head -30
  [ -f "$new" ] && mv "$new" "$out/gpu-$(basename "$new")"
done
find results/full -path '*/units/*.json' -newer /tmp/stamp | tar czf "$out/units.tgz" -T -
echo "new unit files: $(tar tzf "$out/units.tgz" | wc -l); $(($(date +%s) - began)) s"
tar tzf "$out/units.tgz" | sed 's|results/full/||' | tr '\n' ' '
