#!/usr/bin/env bash
# Spark resource discovery script for GPUs (spark.worker.resource.gpu.discoveryScript, and
# spark.driver.resource.gpu.discoveryScript for a GPU driver). Prints one JSON object on stdout:
#   {"name":"gpu","addresses":["0","1"]}
# with the indexes nvidia-smi reports (inside a container: only the GPUs given to it, numbered from 0).
# A missing or failing nvidia-smi exits non-zero with the reason on stderr, so the worker refuses to start
# with that message instead of advertising GPUs it does not have. No GPUs prints an empty list.
set -euo pipefail

smi="${NVIDIA_SMI:-nvidia-smi}"
if ! command -v "$smi" >/dev/null 2>&1; then
  echo "gpu-discovery: '$smi' not found on PATH; give the container GPUs (compose: deploy.resources.reservations.devices, capabilities [gpu]; NVIDIA_DRIVER_CAPABILITIES must include utility)" >&2
  exit 1
fi
if ! out="$("$smi" --query-gpu=index --format=csv,noheader 2>&1)"; then
  echo "gpu-discovery: '$smi --query-gpu=index --format=csv,noheader' failed: $out" >&2
  exit 1
fi

addresses=""
while IFS= read -r line; do
  idx="${line//[[:space:]]/}"
  [ -z "$idx" ] && continue
  if ! [[ "$idx" =~ ^[0-9]+$ ]]; then
    echo "gpu-discovery: unexpected line from nvidia-smi (want a GPU index): '$line'" >&2
    exit 1
  fi
  addresses+="${addresses:+,}\"$idx\""
done <<< "$out"

printf '{"name":"gpu","addresses":[%s]}\n' "$addresses"
