#!/usr/bin/env bash
# SGEMM C = A @ B (f32, N^3) through phobos-cluster: one process running
# the kernel (`run --in-process --nodes 1`), then a scheduler and K host
# pods over gRPC on loopback (`run --nodes K`), each timed, both planned by
# the cost model (`--autotune`); bytes moved as
# the pods report them against the cost model's prediction. Prints a
# Markdown table. Usage: bench_sgemm.sh BIN [N] [NODES...] (default 4096 1 2 4).
set -euo pipefail
bin="$1"; n="${2:-4096}"; shift $(( $# >= 2 ? 2 : $# ))
nodes=("${@:-1 2 4}"); [ $# -eq 0 ] && nodes=(1 2 4)
dir="$(mktemp -d /var/tmp/phobos-bench-XXXXXX)"
trap 'rm -rf "$dir"' EXIT
kernel="$(cd "$(dirname "$0")/.." && pwd)/jobs/gemm_cluster.ph"
"$bin" tensor init --uri "file://$dir/A.bin" --shape "${n}x${n}" --fill random --seed 1 >/dev/null
"$bin" tensor init --uri "file://$dir/B.bin" --shape "${n}x${n}" --fill random --seed 2 >/dev/null
job() {
  cat >"$dir/$1.job" <<JOB
source = $kernel
tensor A = read f32 ${n}x${n} file://A.bin
tensor B = read f32 ${n}x${n} file://B.bin
tensor C = write f32 ${n}x${n} file://$1.bin
scalar alpha = f32 1.0
scalar beta = f32 0.0
JOB
  echo "$dir/$1.job"
}
now() { date +%s.%N; }
field() { sed -n "s/.*$1=\([0-9.e+-]*\).*/\1/p" "$2" | tail -n1; }
echo "| N | mode | pods | wall s | bytes moved | predicted bytes | predicted s | equal to one process |"
echo "|---:|---|---:|---:|---:|---:|---:|---|"
t0="$(now)"
PHOBOS_LOG=info "$bin" run "$(job ref)" --nodes 1 --in-process --autotune >/dev/null 2>"$dir/ref.log"
t1="$(now)"
echo "| $n | one process | - | $(echo "$t1 - $t0" | bc -l | xargs printf %.2f) | - | - | - | - |"
for k in "${nodes[@]}"; do
  t0="$(now)"
  PHOBOS_LOG=info "$bin" run "$(job "c$k")" --nodes "$k" --autotune >/dev/null 2>"$dir/c$k.log"
  t1="$(now)"
  same="no"; cmp -s "$dir/ref.bin" "$dir/c$k.bin" && same="yes"
  log="$dir/c$k.log"
  echo "| $n | gRPC pods | $k | $(echo "$t1 - $t0" | bc -l | xargs printf %.2f) | $(field bytes_moved "$log") | $(field predicted_bytes "$log" | xargs printf %.0f) | $(field predicted_s "$log" | xargs printf %.2f) | $same |"
done
