#!/usr/bin/env bash
# Run the test suite one file per process ($JOBS at a time, default 4), as on the NVIDIA GPU machine:
# a test that faults a kernel on purpose leaves NVIDIA's OpenCL unusable for the rest
# of its process (docs/gpu.md). Prints one summary line per file; logs go to $RESULTS.
#   usage: tools/gpu_suite.sh [test files...]   (default: every tests/**/test_*.py)
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=${RESULTS:-/tmp/pysycl-gpu-suite}
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
files=("$@"); [ ${#files[@]} -gt 0 ] || mapfile -t files < <(ls tests/test_*.py tests/*/test_*.py)
printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-4}" -I{} sh -c 'f={}; n=$(echo $f | tr / _); timeout 400 python3 -m pytest -q -p no:cacheprovider -rsx --tb=short $f > '"$RESULTS"'/$n.txt 2>&1; echo "$f: $(tail -1 '"$RESULTS"'/$n.txt)"' | sort
