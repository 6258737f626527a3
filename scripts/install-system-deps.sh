#!/usr/bin/env bash
# System packages the tests need: Debian's chromium (headless browser test) and a JDK 17 for Spark.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=()
command -v chromium >/dev/null 2>&1 || pkgs+=(chromium)
command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
if [ ${#pkgs[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi
