#!/usr/bin/env bash
# Full-mode units on a lent GPU, as one call of the device tool (repo root there, $OUT comes back):
#   bash scripts/device_units.sh SECONDS [--no-checks]
# Prepare here first: MNIST (gzipped) and the CIFAR-100 subset in .devdata (ignored, carried; 18 MB):
#   mkdir -p .devdata/MNIST/raw
#   for f in ../shared/data/MNIST/raw/*; do gzip -c $f >.devdata/MNIST/raw/${f##*/}.gz; done
#   cp -r ../shared/data/cifar-100-python .devdata/
# CIFAR-10 (176 MB) exceeds the 64 MiB a call may carry: its units are listed as blocked there and stay for CPUs.
# Steps: the CUDA agreement tests; one committed CPU unit of each of the two chapters re-run on the GPU (compared in
# $OUT/agree-*.json) -- both skipped with --no-checks, once a device run has recorded them; privacy evaluation's
# attack units (whole groups first: one-round, then all-round round by round), then ADPDFL's MNIST units, each
# within its share of SECONDS; every new unit file packed into $OUT/units.tgz.
set -uo pipefail
seconds=${1:-480}
checks=$([ "${2:-}" = --no-checks ] && echo 0 || echo 1)
began=$(date +%s)
left() { echo $((seconds - ($(date +%s) - began))); }
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FEDLIB_DEVICE=cuda FEDLIB_NUM_THREADS=8 FEDLIB_DATA=$PWD/.devdata
export FEDLIB_RESULTS=$PWD/results
gunzip -f .devdata/MNIST/raw/*.gz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
touch /tmp/stamp
[ $checks = 1 ] && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_attacks.py tests/test_adpdfl.py \
  -k cuda 2>&1 | tail -4

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
# privacy evaluation: the missing attack units, one group at a time (~30-45x one CPU thread: most of the time left)
stop=$(( $(left) * 10 / 100 + 40 ))
for group in 'attack/*/one-round/*' 'attack/*/all-round/round5/*' 'attack/*/all-round/round10/*' 'attack/*'; do
  share=$(( $(left) - stop ))
  [ "$share" -gt 30 ] && timeout $((share + 120)) python3 -m fedlib run privacy_eval --mode full \
    --budget "$(python3 -c "print($share / 60)")" --only "$group" 2>&1 | grep -v '^  \[' | tail -4
done
share=$(( $(left) - 45 ))
[ "$share" -gt 30 ] && timeout $((share + 30)) python3 -m fedlib run adpdfl --mode full \
  --budget "$(python3 -c "print($share / 60)")" --only 'mnist-*' 2>&1 | grep -v '^  \[' | tail -8
for pair in $([ $checks = 1 ] && echo pe ad); do
  new=$([ $pair = pe ] && echo "$pe" || echo "$ad")
  [ -f "$new" ] && python3 scripts/compare_units.py /tmp/cpu-$pair.json "$new" --out "$out/agree-$pair.json" | head -30
  [ -f "$new" ] && mv "$new" "$out/gpu-$(basename "$new")"
done
find results/full -path '*/units/*.json' -newer /tmp/stamp | tar czf "$out/units.tgz" -T -
echo "new unit files: $(tar tzf "$out/units.tgz" | wc -l); $(($(date +%s) - began)) s"
tar tzf "$out/units.tgz" | sed 's|results/full/||' | tr '\n' ' '
