#!/usr/bin/env bash
# Installs the Debian packages the tests need beyond Go, gcc, make and curl:
# chromium, for the usage page's browser test (pkg/rest, TestPageInChromium,
# which fails instead of skipping when CI is set). .ci/run calls it before
# `make test`. Idempotent: silent, and no apt-get, when everything is there.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v curl >/dev/null 2>&1 || missing+=(curl)
((${#missing[@]} == 0)) && exit 0

command -v apt-get >/dev/null 2>&1 ||
  { echo "ci-deps: need ${missing[*]}, and there is no apt-get to install it with" >&2; exit 1; }
sudo=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null 2>&1 ||
    { echo "ci-deps: need ${missing[*]}: run as root, or install sudo" >&2; exit 1; }
  sudo=(sudo)
fi
echo "ci-deps: installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
command -v chromium >/dev/null 2>&1 || { echo "ci-deps: chromium still missing after apt-get install" >&2; exit 1; }
echo "ci-deps: $(chromium --version 2>/dev/null || echo chromium) installed" >&2
