#!/usr/bin/env bash
# usage: scripts/gpu/kernel-id.sh (beside fixloop.tar, an archive of examples/fix-loop)
# How ncu 2025.3.1 reads the invocation field of --kernel-id: counts the profiled launches
# of copy_scalar_roof for each form.
set -u
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")" && mkdir -p x && tar -xf fixloop.tar -C x bin
bench=$(ls x/bin/fixloop-*)
for id in '::copy_scalar_roof:6|7|8' '::copy_scalar_roof:^([6-8])$' '::copy_scalar_roof:1' '::copy_scalar_roof:^(1)$' \
          '::copy_scalar_roof:^(1[0-2]|[2-3])$' '::regex:copy_scalar:^(2|1[0-1])$' '::regex:(copy_scalar_roof)|(axpy_scalar_roof):^(1|[6-8])$' \
          '::copy_scalar_roof:^(1\d)$' '::copy_scalar_roof:^(1[0-9]{1})$' \
          '::copy_scalar_roof:^([1-9]|1[0-9])$' '::copy_scalar_roof:^([1-9][0-9])$' \
          '::copy_scalar_roof:^([1-9]|[1-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]|1[0-9][0-9][0-9][0-9]|2[0-4][0-9][0-9][0-9]|25000)$' \
          '::copy_scalar_roof:^(1[7-9]|[2-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]|[1-9][0-9][0-9][0-9][0-9]|[1-9][0-9][0-9][0-9][0-9][0-9]|[1-9][0-9][0-9][0-9][0-9][0-9][0-9]|[1-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]|[1-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]|[1-3][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]|400000000[0-9]|400000001[0-7])$'; do
  KPROF_CASE='^(copy|axpy)_scalar_roof/' ncu --clock-control none --kernel-id "$id" --metrics gpu__time_duration.sum \
    --csv --page raw "$bench" --mode hot --min-samples 25 --min-time 0.01 --max-noise 100 --timeout 3 > out.csv 2> err.txt
  rc=$?
  rows=$(grep -c '_scalar_roof' out.csv)
  printf '%s\trc=%s\trows=%s\t%s\n' "$id" "$rc" "$rows" "$(grep -o '"[a-z_]*_scalar_roof[a-z_]*"' out.csv | sort | uniq -c | tr '\n' ' ')"
  [ "$rc" = 0 ] || grep -m 2 -i 'error' err.txt
done
