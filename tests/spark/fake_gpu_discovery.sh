#!/usr/bin/env bash
# Fake GPU discovery for tests (pyspark's own distributor tests do the same): each test worker is started
# with FAKE_GPU_ADDRESS set to a different value, so the orchestration (resource scheduling, per-task
# CUDA_VISIBLE_DEVICES pinning) is exercised without GPUs.
echo "{\"name\": \"gpu\", \"addresses\": [\"${FAKE_GPU_ADDRESS:-0}\"]}"
